//! Merge requests and the branch protection they answer to: a catalog's protected branches
//! and their checks, requests opened, checked on the merge they would make, merged (past
//! failed checks only with an administrator's reason, audited) or closed.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::address::rfc3339;
use pangolin_catalog::authz::Privilege;
use pangolin_catalog::merge_requests::{
    BranchProtection, CheckRun, CreateMergeRequestError, GetMergeRequestError, MergeRequest,
    MergeRequestError, MergeRequests, MergedBy, NewMergeRequest, RequestState, RunChecksError,
};
use pangolin_catalog::tenancy::{Name, RecordsError, SetProtectionError};
use pangolin_catalog::{Catalog, RefSpec};
use pangolin_refs::RefName;
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::retention::get_error as catalog_record_error;
use super::{authorize, decode_token, encode_token, open, page_size};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::security::{self, Caller, audit, unauthorized};
use crate::state::AppState;
use crate::webhooks::{WebhookChecks, WebhookSettings};
use pangolin_records::Outcome;

/// A catalog's protected branches.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProtectionView {
    /// The first rule whose branch pattern matches a branch protects it.
    pub rules: Vec<ProtectionRuleView>,
}

/// Branches matching `branch` (`main`, `release/*`, `*`) take no commit, merge, cherry-pick,
/// revert, reset or deletion; merge requests land on them once `checks` passed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProtectionRuleView {
    pub branch: String,
    /// Each `{"kind": ...}`: `no-dropped-columns` and `no-lost-rows` (optional `prefix`, the
    /// levels of a namespace or table), `forbid` (`types`: event types such as `drop-table`;
    /// optional `prefix`), `webhook` (`webhook`: the id of one of the catalog's webhooks).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub checks: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProtectionAnswer {
    /// `null`: no branch is protected.
    pub protection: Option<ProtectionView>,
}

fn protection_view(protection: &BranchProtection) -> Result<ProtectionView, ApiError> {
    serde_json::to_value(protection)
        .and_then(serde_json::from_value)
        .map_err(|e| ApiError::internal(&e))
}

/// The catalog's protected branches.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/protection", tag = "merge-requests",
    params(("catalog" = String, Path)), responses((status = 200, body = ProtectionAnswer)))]
pub async fn get_protection(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
) -> Result<Json<ProtectionAnswer>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let record = state
        .catalogs
        .tenancy()
        .resolve(catalog.tenant(), catalog.name())
        .await
        .map_err(catalog_record_error)?;
    Ok(Json(ProtectionAnswer {
        protection: record
            .value
            .protection
            .as_ref()
            .map(protection_view)
            .transpose()?,
    }))
}

/// Sets the catalog's protected branches. Every server applies them within the shared-state
/// TTL (this one at once). Webhook checks must name webhooks of the catalog.
#[utoipa::path(put, path = "/api/v1/catalogs/{catalog}/protection", tag = "merge-requests",
    params(("catalog" = String, Path)), request_body = ProtectionView,
    responses((status = 200, body = ProtectionAnswer), (status = 400)))]
pub async fn put_protection(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(view): JsonBody<ProtectionView>,
) -> Result<Json<ProtectionAnswer>, ApiError> {
    let protection: BranchProtection = serde_json::to_value(&view)
        .and_then(serde_json::from_value)
        .map_err(|e| ApiError::bad_request(format!("invalid branch protection: {e}")))?;
    let scope = Requests::open(&state, &catalog).await?;
    let webhooks = state.catalogs.tenancy().webhooks();
    for rule in &protection.rules {
        for webhook in rule.checks.iter().filter_map(|c| c.webhook()) {
            if webhooks
                .get(&scope.tenant, &scope.name, webhook)
                .await
                .is_err()
            {
                return Err(ApiError::bad_request(format!(
                    "invalid branch protection: rule `{}` names webhook `{webhook}`, which \
                     catalog `{}` does not have",
                    rule.branch, scope.name
                )));
            }
        }
    }
    set_protection(&state, &scope.catalog, Some(protection)).await
}

/// Unprotects every branch of the catalog.
#[utoipa::path(delete, path = "/api/v1/catalogs/{catalog}/protection", tag = "merge-requests",
    params(("catalog" = String, Path)), responses((status = 200, body = ProtectionAnswer)))]
pub async fn delete_protection(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
) -> Result<Json<ProtectionAnswer>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    set_protection(&state, &catalog, None).await
}

async fn set_protection(
    state: &AppState,
    catalog: &Catalog,
    protection: Option<BranchProtection>,
) -> Result<Json<ProtectionAnswer>, ApiError> {
    let record = state
        .catalogs
        .tenancy()
        .set_catalog_protection(catalog.tenant(), catalog.name(), protection)
        .await
        .map_err(|e| match e {
            SetProtectionError::Invalid(_) => ApiError::bad_request(e.to_string()),
            SetProtectionError::Get(e) => catalog_record_error(e),
            SetProtectionError::Records(e) => ApiError::internal(&e),
        })?;
    state.catalogs.forget(catalog.tenant(), catalog.name());
    Ok(Json(ProtectionAnswer {
        protection: record
            .protection
            .as_ref()
            .map(protection_view)
            .transpose()?,
    }))
}

/// A check's outcome on one run.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct CheckResultView {
    /// The check as its rule states it.
    #[schema(value_type = Object)]
    pub check: serde_json::Value,
    /// The check in a few words (`forbid drop-table under sales`).
    pub description: String,
    pub passed: bool,
    pub messages: Vec<String>,
}

/// The latest run of a request's checks.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct CheckRunView {
    /// `passed`, `failed`, `conflicted` (no merge to check) or `up-to-date` (nothing to merge).
    pub verdict: String,
    pub source_head: String,
    pub target_head: String,
    /// The merge commit the checks judged and a merge lands; referenced by nothing until then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<String>,
    pub checks: Vec<CheckResultView>,
    pub conflicts: Vec<String>,
    pub changed_keys: u64,
    pub ran_by: String,
    pub ran_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct MergedView {
    pub commit: String,
    pub by: String,
    pub at: String,
    /// The reason an administrator gave for merging past failed checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overridden: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct MergeRequestView {
    pub number: u64,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub source: String,
    pub target: String,
    /// `open`, `merged` or `closed`.
    pub state: String,
    pub author: String,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<CheckRunView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_by: Option<String>,
}

fn run_view(run: &CheckRun) -> CheckRunView {
    CheckRunView {
        verdict: run.verdict.as_str().to_owned(),
        source_head: run.source_head.clone(),
        target_head: run.target_head.clone(),
        merge_commit: run.merge_commit.clone(),
        checks: run
            .checks
            .iter()
            .map(|c| CheckResultView {
                check: serde_json::to_value(&c.check).unwrap_or_default(),
                description: c.check.describe(),
                passed: c.passed,
                messages: c.messages.clone(),
            })
            .collect(),
        conflicts: run.conflicts.clone(),
        changed_keys: run.changed_keys,
        ran_by: run.ran_by.clone(),
        ran_at: rfc3339(run.ran_at),
    }
}

fn merged_view(merged: &MergedBy) -> MergedView {
    MergedView {
        commit: merged.commit.clone(),
        by: merged.by.clone(),
        at: rfc3339(merged.at),
        overridden: merged.overridden.clone(),
    }
}

fn view(request: &MergeRequest) -> MergeRequestView {
    MergeRequestView {
        number: request.number,
        title: request.title.clone(),
        description: request.description.clone(),
        source: request.source.to_string(),
        target: request.target.to_string(),
        state: request.state.as_str().to_owned(),
        author: request.author.clone(),
        created_at: rfc3339(request.created_at),
        updated_at: rfc3339(request.updated_at),
        checks: request.checks.as_ref().map(run_view),
        merged: request.merged.as_ref().map(merged_view),
        closed_by: request.closed_by.clone(),
    }
}

fn not_found(message: String) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "NoSuchMergeRequestException",
        message,
    )
}

fn records_error(error: RecordsError) -> ApiError {
    ApiError::internal(&error)
}

fn get_error(error: GetMergeRequestError) -> ApiError {
    match error {
        GetMergeRequestError::NotFound { .. } => not_found(error.to_string()),
        GetMergeRequestError::Records(e) => records_error(e),
    }
}

fn run_error(error: RunChecksError) -> ApiError {
    let message = error.to_string();
    match error {
        RunChecksError::Get(e) => get_error(e),
        RunChecksError::NotOpen { .. } => {
            ApiError::new(StatusCode::CONFLICT, "MergeRequestClosedException", message)
        }
        RunChecksError::MissingBranch(_) => {
            ApiError::new(StatusCode::CONFLICT, "NoSuchReferenceException", message)
        }
        RunChecksError::Read(e) => e.into(),
        RunChecksError::Backend(e) => e.into(),
        RunChecksError::Records(e) => records_error(e),
        RunChecksError::Merge(_) | RunChecksError::NoMergeCommit => ApiError::internal(&error),
    }
}

/// A catalog's requests and the names their records are kept under.
struct Requests {
    requests: MergeRequests,
    catalog: Catalog,
    tenant: Name,
    name: Name,
}

impl Requests {
    async fn open(state: &AppState, catalog: &str) -> Result<Self, ApiError> {
        let catalog = open(state, catalog).await?;
        let invalid =
            |e: pangolin_catalog::tenancy::NameError| ApiError::bad_request(e.to_string());
        Ok(Self {
            requests: state.catalogs.tenancy().merge_requests(),
            tenant: Name::new("tenant", catalog.tenant()).map_err(invalid)?,
            name: Name::new("catalog", catalog.name()).map_err(invalid)?,
            catalog,
        })
    }

    /// The catalog's requests and request `number` of it, which the caller may read (read on
    /// both its branches).
    async fn readable(
        state: &AppState,
        catalog: &str,
        number: u64,
    ) -> Result<(Self, MergeRequest), ApiError> {
        let scope = Self::open(state, catalog).await?;
        let request = scope.get(number).await?;
        authorize_read(state, &scope.catalog, &request).await?;
        Ok((scope, request))
    }

    fn names(&self) -> (&Name, &Name) {
        (&self.tenant, &self.name)
    }

    async fn get(&self, number: u64) -> Result<MergeRequest, ApiError> {
        self.requests
            .get(&self.tenant, &self.name, number)
            .await
            .map(|r| r.value)
            .map_err(get_error)
    }

    fn checks(&self, state: &AppState) -> WebhookChecks {
        WebhookChecks::new(
            state.catalogs.tenancy().webhooks(),
            self.tenant.clone(),
            self.name.clone(),
            WebhookSettings::default().timeout,
        )
    }
}

fn branch_spec(name: &RefName) -> RefSpec {
    RefSpec::Named(name.clone())
}

/// Read on both branches: what a request shows and what its checks judge.
async fn authorize_read(
    state: &AppState,
    catalog: &Catalog,
    request: &MergeRequest,
) -> Result<(), ApiError> {
    for branch in [&request.source, &request.target] {
        authorize(state, catalog, Privilege::Read, &branch_spec(branch)).await?;
    }
    Ok(())
}

fn parse_branch(field: &str, value: &str) -> Result<RefName, ApiError> {
    RefName::new(value).map_err(|e| ApiError::bad_request(format!("invalid {field}: {e}")))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CreateMergeRequest {
    /// The branch to merge.
    pub source: String,
    /// The branch to merge into; the default branch when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// One line, at most 256 bytes.
    pub title: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// Opens a merge request from one branch into another. Needs read on both.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/merge-requests", tag = "merge-requests",
    params(("catalog" = String, Path)), request_body = CreateMergeRequest,
    responses((status = 201, body = MergeRequestView), (status = 400), (status = 404)))]
pub async fn create(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(body): JsonBody<CreateMergeRequest>,
) -> Result<(StatusCode, Json<MergeRequestView>), ApiError> {
    let caller = Caller::current().ok_or_else(|| unauthorized("not signed in"))?;
    let scope = Requests::open(&state, &catalog).await?;
    let source = parse_branch("source", &body.source)?;
    let target = parse_branch(
        "target",
        body.target
            .as_deref()
            .unwrap_or(pangolin_catalog::DEFAULT_BRANCH),
    )?;
    for branch in [&source, &target] {
        authorize(
            &state,
            &scope.catalog,
            Privilege::Read,
            &branch_spec(branch),
        )
        .await?;
        let resolved = scope.catalog.resolve(&branch_spec(branch)).await?;
        if resolved.writable_branch.is_none() {
            return Err(ApiError::bad_request(format!(
                "`{branch}` is a tag; merge requests are between branches"
            )));
        }
    }
    let created = scope
        .requests
        .create(
            &scope.tenant,
            &scope.name,
            NewMergeRequest {
                title: body.title,
                description: body.description.filter(|d| !d.is_empty()),
                source,
                target,
            },
            caller.name(),
            Timestamp::now(),
        )
        .await
        .map_err(|e| match e {
            CreateMergeRequestError::Invalid(_) => ApiError::bad_request(e.to_string()),
            CreateMergeRequestError::Records(e) => records_error(e),
        })?;
    Ok((StatusCode::CREATED, Json(view(&created.value))))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// `open`, `merged` or `closed`; every state when absent.
    pub state: Option<String>,
    pub page_token: Option<String>,
    /// At most this many requests (1 to 1000; 100 when absent).
    pub page_size: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct MergeRequestList {
    /// Newest first.
    pub merge_requests: Vec<MergeRequestView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// The catalog's merge requests, newest first: those between branches the caller may read.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/merge-requests", tag = "merge-requests",
    params(("catalog" = String, Path), ListParams),
    responses((status = 200, body = MergeRequestList), (status = 400)))]
pub async fn list(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<MergeRequestList>, ApiError> {
    let scope = Requests::open(&state, &catalog).await?;
    let filter = params
        .state
        .as_deref()
        .map(|s| {
            RequestState::parse(s).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "state must be `open`, `merged` or `closed`, not `{s}`"
                ))
            })
        })
        .transpose()?;
    let before = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(|t| {
            decode_token(t)?
                .parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid page token `{t}`")))
        })
        .transpose()?;
    let page = scope
        .requests
        .list(
            &scope.tenant,
            &scope.name,
            filter,
            before,
            page_size(params.page_size)?,
        )
        .await
        .map_err(records_error)?;
    let mut merge_requests = Vec::with_capacity(page.items.len());
    for request in &page.items {
        if authorize_read(&state, &scope.catalog, &request.value)
            .await
            .is_ok()
        {
            merge_requests.push(view(&request.value));
        }
    }
    Ok(Json(MergeRequestList {
        merge_requests,
        next_page_token: page.next_before.map(|n| encode_token(&n.to_string())),
    }))
}

/// One merge request, with the latest run of its checks.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/merge-requests/{number}",
    tag = "merge-requests",
    params(("catalog" = String, Path), ("number" = u64, Path)),
    responses((status = 200, body = MergeRequestView), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams((catalog, number)): PathParams<(String, u64)>,
) -> Result<Json<MergeRequestView>, ApiError> {
    let (_, request) = Requests::readable(&state, &catalog, number).await?;
    Ok(Json(view(&request)))
}

/// Runs the checks the target's protection asks for on the merge of both branches' current
/// heads (written as a commit that no ref names) and stores the outcome on the request.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/merge-requests/{number}/checks",
    tag = "merge-requests",
    params(("catalog" = String, Path), ("number" = u64, Path)),
    responses((status = 200, body = MergeRequestView), (status = 404),
        (status = 409, description = "the request is not open, or a branch is gone")))]
pub async fn run_checks(
    State(state): State<AppState>,
    PathParams((catalog, number)): PathParams<(String, u64)>,
) -> Result<Json<MergeRequestView>, ApiError> {
    let (scope, _) = Requests::readable(&state, &catalog, number).await?;
    let checked = scope
        .requests
        .run_checks(
            &scope.catalog,
            scope.names(),
            number,
            &Caller::current_name(),
            &scope.checks(&state),
        )
        .await
        .map_err(run_error)?;
    Ok(Json(view(&checked.value)))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct MergeMergeRequest {
    /// Merge even though checks failed, for this reason (recorded on the request and in the
    /// audit log). Needs the right to manage the catalog.
    #[serde(default)]
    pub override_reason: Option<String>,
}

/// The longest override reason kept.
const MAX_REASON_BYTES: usize = 1_024;

/// Merges the request: the target moves to the merge commit the checks passed on. When either
/// branch moved since they ran, they run again first. Needs write on the target.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/merge-requests/{number}/merge",
    tag = "merge-requests",
    params(("catalog" = String, Path), ("number" = u64, Path)), request_body = MergeMergeRequest,
    responses((status = 200, body = MergeRequestView), (status = 404),
        (status = 409, description = "checks failed (the message names them; the request \
            shows every result), conflicts, the request is not open, or the target kept \
            moving")))]
pub async fn merge(
    State(state): State<AppState>,
    PathParams((catalog, number)): PathParams<(String, u64)>,
    body: Option<JsonBody<MergeMergeRequest>>,
) -> Result<Json<MergeRequestView>, ApiError> {
    let body = body.map(|JsonBody(b)| b).unwrap_or_default();
    let caller = Caller::current_name();
    let (scope, request) = Requests::readable(&state, &catalog, number).await?;
    authorize(
        &state,
        &scope.catalog,
        Privilege::Write,
        &branch_spec(&request.target),
    )
    .await?;
    let reason = body
        .override_reason
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    if let Some(reason) = &reason {
        if reason.len() > MAX_REASON_BYTES {
            return Err(ApiError::bad_request(format!(
                "override-reason is longer than {MAX_REASON_BYTES} bytes"
            )));
        }
        security::check(
            &state,
            Privilege::ManageCatalogs,
            security::resource::catalog(&scope.catalog),
            request.target.as_str(),
        )
        .await?;
    }
    let merged = scope
        .requests
        .merge(
            &scope.catalog,
            scope.names(),
            number,
            &caller,
            reason,
            &scope.checks(&state),
        )
        .await
        .map_err(merge_error)?;
    if let Some(reason) = merged
        .value
        .merged
        .as_ref()
        .and_then(|m| m.overridden.as_ref())
    {
        audit_override(&state, &scope, &merged.value, reason).await;
    }
    Ok(Json(view(&merged.value)))
}

/// An override is audited as an event of its own, naming the failed checks it went past.
async fn audit_override(state: &AppState, scope: &Requests, request: &MergeRequest, reason: &str) {
    let caller = Caller::current();
    let principal = Caller::current_name();
    let failed: Vec<String> = request
        .checks
        .iter()
        .flat_map(|run| run.checks.iter())
        .filter(|c| !c.passed)
        .map(|c| serde_json::to_string(&c.check).unwrap_or_default())
        .collect();
    let mut details = BTreeMap::from([
        ("reason".to_owned(), reason.to_owned()),
        ("merge-request".to_owned(), request.number.to_string()),
        ("target".to_owned(), request.target.to_string()),
        ("failed-checks".to_owned(), failed.join("; ")),
    ]);
    if let Some(merged) = &request.merged {
        details.insert("commit".to_owned(), merged.commit.clone());
    }
    let resource = format!("{}/{}", scope.catalog.name(), request.number);
    audit::write(
        &state.security,
        audit::Entry {
            tenant: caller
                .as_ref()
                .map_or(scope.tenant.as_str(), |c| c.tenant.as_str()),
            principal: &principal,
            action: "merge-request.override",
            resource_type: "merge-request",
            resource_id: &resource,
            outcome: Outcome::Success,
            details,
        },
    )
    .await;
}

fn merge_error(error: MergeRequestError) -> ApiError {
    let message = error.to_string();
    match error {
        MergeRequestError::Run(e) => run_error(e),
        MergeRequestError::Conflicted { .. } => {
            ApiError::new(StatusCode::CONFLICT, "MergeConflictException", message)
        }
        MergeRequestError::ChecksFailed { request, .. } => {
            let failed: Vec<String> = request
                .checks
                .iter()
                .flat_map(|run| run.checks.iter())
                .filter(|c| !c.passed)
                .map(|c| format!("{}: {}", c.check.describe(), c.messages.join("; ")))
                .collect();
            ApiError::new(
                StatusCode::CONFLICT,
                "ChecksFailedException",
                format!(
                    "{message}: {}; the request shows every result",
                    failed.join(" | ")
                ),
            )
        }
        MergeRequestError::TargetKeptMoving { .. } => {
            ApiError::new(StatusCode::CONFLICT, "ReferenceConflictException", message)
        }
        MergeRequestError::Land { source, .. } => ApiError::internal(&source),
    }
}

/// Closes the request without merging it. The author or anyone who may write the target may.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/merge-requests/{number}/close",
    tag = "merge-requests",
    params(("catalog" = String, Path), ("number" = u64, Path)),
    responses((status = 200, body = MergeRequestView), (status = 404),
        (status = 409, description = "the request is not open")))]
pub async fn close(
    State(state): State<AppState>,
    PathParams((catalog, number)): PathParams<(String, u64)>,
) -> Result<Json<MergeRequestView>, ApiError> {
    let caller = Caller::current_name();
    let (scope, request) = Requests::readable(&state, &catalog, number).await?;
    if request.author != caller {
        authorize(
            &state,
            &scope.catalog,
            Privilege::Write,
            &branch_spec(&request.target),
        )
        .await?;
    }
    let closed = scope
        .requests
        .close(&scope.tenant, &scope.name, number, &caller)
        .await
        .map_err(run_error)?;
    Ok(Json(view(&closed.value)))
}
