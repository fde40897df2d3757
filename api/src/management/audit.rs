//! The audit log: query it (tenant admins their own tenant, root any) and verify its chain.

use axum::Json;
use axum::extract::State;
use pangolin_records::{AuditQuery, AuditRecord, VerifyError, verify};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{DEFAULT_PAGE, MAX_PAGE};
use crate::error::ApiError;
use crate::extract::QueryParams;
use crate::security::{Caller, unauthorized};
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AuditParams {
    /// Root only: one tenant's events (`~` for the deployment's own); all when absent.
    pub tenant: Option<String>,
    pub principal: Option<String>,
    pub action: Option<String>,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    /// Events at or after this RFC 3339 time.
    pub from: Option<String>,
    /// Events before this RFC 3339 time.
    pub until: Option<String>,
    /// The previous page's `next-page-token`.
    pub page_token: Option<String>,
    pub page_size: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEventView {
    pub sequence: u64,
    pub time: String,
    pub tenant: String,
    pub principal: String,
    pub action: String,
    #[serde(rename = "resource-type")]
    pub resource_type: String,
    #[serde(rename = "resource-id")]
    pub resource_id: String,
    pub outcome: &'static str,
    pub details: std::collections::BTreeMap<String, String>,
    /// This event's chain hash, hex.
    pub hash: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    pub events: Vec<AuditEventView>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

fn time(field: &str, value: Option<&str>) -> Result<Option<Timestamp>, ApiError> {
    value
        .map(|v| {
            v.parse::<jiff::Timestamp>()
                .map(|t| Timestamp::from_millis(t.as_millisecond()))
                .map_err(|e| {
                    ApiError::bad_request(format!("`{field}` is not an RFC 3339 time: {e}"))
                })
        })
        .transpose()
}

fn view(record: AuditRecord) -> AuditEventView {
    AuditEventView {
        sequence: record.sequence,
        time: pangolin_catalog::rfc3339(record.event.time),
        tenant: record.event.tenant,
        principal: record.event.principal,
        action: record.event.action,
        resource_type: record.event.resource_type,
        resource_id: record.event.resource_id,
        outcome: record.event.outcome.as_str(),
        details: record.event.details,
        hash: record.hash.0.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Audit events, oldest first, filtered and paged. A tenant's administrators (and whoever
/// holds `ReadAudit` on it) see that tenant's events; root sees all.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(AuditParams),
    responses((status = 200, body = AuditPage)))]
pub async fn query(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<AuditParams>,
) -> Result<Json<AuditPage>, ApiError> {
    let caller = Caller::current().ok_or_else(|| unauthorized("not signed in"))?;
    let tenant = if caller.is_root() {
        params.tenant
    } else {
        match params.tenant {
            Some(t) if t != caller.tenant => {
                return Err(ApiError::bad_request(
                    "you can only read your own tenant's audit log",
                ));
            }
            _ => Some(caller.tenant.clone()),
        }
    };
    let limit = params.page_size.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ApiError::bad_request(format!(
            "page-size must be 1 to {MAX_PAGE}"
        )));
    }
    let after = params
        .page_token
        .as_deref()
        .map(|t| {
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request("invalid page-token"))
        })
        .transpose()?;
    let query = AuditQuery {
        tenant,
        principal: params.principal,
        action: params.action,
        resource_type: params.resource_type,
        resource_id: params.resource_id,
        from: time("from", params.from.as_deref())?,
        until: time("until", params.until.as_deref())?,
        after,
        limit: limit + 1,
    };
    // Events of refused requests are written after their answers: a reader sees them all.
    state.security.audit_writer.flush().await;
    let mut records = state.security.audit.query(&query).await?;
    let next_page_token = (records.len() > limit).then(|| {
        records.truncate(limit);
        records.last().map(|r| r.sequence.to_string())
    });
    Ok(Json(AuditPage {
        events: records.into_iter().map(view).collect(),
        next_page_token: next_page_token.flatten(),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VerifyReport {
    /// Whether every event links to the one before and carries the hash its contents give.
    pub intact: bool,
    /// Events checked.
    pub checked: u64,
    /// What is wrong, when something is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Checks the whole chain, in slices so memory stays flat however long the log is.
#[utoipa::path(get, path = "/api/v1/audit/verify", tag = "audit",
    responses((status = 200, body = VerifyReport)))]
pub async fn verify_chain(State(state): State<AppState>) -> Result<Json<VerifyReport>, ApiError> {
    const SLICE: u64 = 10_000;
    state.security.audit_writer.flush().await;
    let mut checked = 0;
    let mut from = 1;
    loop {
        match verify(state.security.audit.as_ref(), from, from + SLICE - 1).await {
            Ok(0) => break,
            Ok(n) => {
                checked += n;
                if n < SLICE {
                    break;
                }
                from += SLICE;
            }
            Err(VerifyError::Broken(broken)) => {
                return Ok(Json(VerifyReport {
                    intact: false,
                    checked,
                    problem: Some(broken.to_string()),
                }));
            }
            Err(VerifyError::Backend(e)) => return Err(e.into()),
        }
    }
    Ok(Json(VerifyReport {
        intact: true,
        checked,
        problem: None,
    }))
}
