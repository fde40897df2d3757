//! `POST /v1/{prefix}/transactions/commit`: changes to several tables as one catalog commit.

use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::iceberg::{TableRequirement, TableUpdate};
use pangolin_catalog::{CommitMeta, TableChange};
use serde::Deserialize;

use crate::address::{Identifier, writable};
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::security::{self, Caller, resource};
use crate::state::AppState;
use pangolin_catalog::authz::Privilege;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TransactionRequest {
    table_changes: Vec<TableChangeRequest>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableChangeRequest {
    identifier: Identifier,
    #[serde(default)]
    requirements: Vec<TableRequirement>,
    #[serde(default)]
    updates: Vec<TableUpdate>,
}

/// Every table's requirements hold and all changes land in one commit, or nothing changes.
/// Tables may name a branch (`orders@dev`); all must name the same one.
pub async fn commit(
    State(state): State<AppState>,
    PathParams(prefix): PathParams<String>,
    JsonBody(request): JsonBody<TransactionRequest>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix).await?;
    if request.table_changes.is_empty() {
        return Err(ApiError::bad_request(
            "a transaction needs at least one table change",
        ));
    }
    let mut at = None;
    let mut changes = Vec::with_capacity(request.table_changes.len());
    for change in request.table_changes {
        let (key, named_at) = change.identifier.key_and_ref()?;
        let this = named_at.unwrap_or_else(|| scope.at.clone());
        match &at {
            None => at = Some(this),
            Some(first) if *first == this => {}
            Some(first) => {
                return Err(ApiError::bad_request(format!(
                    "a transaction commits to one branch, but it names `{first}` and `{this}`"
                )));
            }
        }
        changes.push(TableChange {
            key,
            requirements: change.requirements,
            updates: change.updates,
        });
    }
    let at = at.unwrap_or_else(|| scope.at.clone());
    let branch = writable(&scope, &at).await?;
    for change in &changes {
        security::check(
            &state,
            Privilege::Write,
            resource::table(&scope.catalog, &change.key),
            branch.name.as_str(),
        )
        .await?;
    }
    let names: Vec<String> = changes.iter().map(|c| c.key.to_string()).collect();
    let meta = CommitMeta {
        principal: Caller::current_name(),
        message: format!("commit tables {}", names.join(", ")),
        properties: [
            ("operation".to_owned(), "commit-transaction".to_owned()),
            ("tables".to_owned(), names.join(",")),
        ]
        .into(),
    };
    scope.catalog.commit_tables(&branch, changes, &meta).await?;
    Ok(StatusCode::NO_CONTENT)
}
