//! Remotes and the transfers between servers (see `pangolin_catalog::remotes`).
//!
//! A server sends a pack (`POST .../pack`: the refs wanted, the commits the receiver holds)
//! and receives one either as a fetch into a remote's tracking refs (`POST
//! .../remotes/{remote}/fetched`) or as a push of one branch (`POST .../push`). Packs are
//! bundles, streamed both ways; the receiving routes read bodies of any size as they arrive,
//! like a bundle import. Each side authorizes its own part: reading every ref it sends,
//! writing the branch a push moves (and managing refs to create it or to force it).

use std::collections::BTreeMap;

use axum::Json;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pangolin_catalog::bundle::{BundleRef, IntakeError};
use pangolin_catalog::remotes::{
    AddRemoteError, NewRemote, PackError, PushError, PushRequest, ReceiveError, Remote,
    RemoteError, TrackingChange,
};
use pangolin_catalog::{Catalog, RefSpec};
use pangolin_records::Outcome;
use pangolin_refs::RefName;
use pangolin_store::ObjectId;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::bundle::{BUNDLE_TYPE, receive};
use super::{authorize, open};
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::security::{Caller, audit};
use crate::state::AppState;
use pangolin_catalog::authz::Privilege;

/// The answer header naming where the sender's catalog keeps its files, so the receiving
/// client can warn when table metadata arrives from another warehouse.
pub const WAREHOUSE_HEADER: &str = "pangolin-warehouse";

/// Longest `origin` a push may name for its ref-log message.
const MAX_ORIGIN_BYTES: usize = 512;

/// A remote as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct RemoteView {
    pub name: String,
    pub url: String,
    /// The catalog on the remote server.
    pub catalog: String,
    pub added_by: String,
    pub added_at: String,
    /// The remote catalog's branches and tags as of the last fetch: `{"type", "name",
    /// "hash"}`.
    #[schema(value_type = Vec<Object>)]
    pub refs: Vec<BundleRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched_by: Option<String>,
}

impl From<Remote> for RemoteView {
    fn from(remote: Remote) -> Self {
        Self {
            name: remote.name.to_string(),
            url: remote.url,
            catalog: remote.catalog,
            added_by: remote.added_by,
            added_at: remote.added_at,
            refs: remote.refs,
            fetched_at: remote.fetched_at,
            fetched_by: remote.fetched_by,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RemoteList {
    pub remotes: Vec<RemoteView>,
}

/// A remote to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AddRemoteRequest {
    /// Letters, digits, `.`, `_` and `-`.
    pub name: String,
    /// The other server: `http(s)://host[:port][/path]`, without credentials.
    pub url: String,
    /// The catalog there; this catalog's name when absent.
    #[serde(default)]
    pub catalog: Option<String>,
}

fn remote_error(error: RemoteError) -> ApiError {
    match error {
        RemoteError::NotFound(_) => ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchRemoteException",
            error.to_string(),
        ),
        RemoteError::Records(e) => e.into(),
    }
}

/// Lists the catalog's remotes with their tracking refs.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/remotes", tag = "remotes",
    params(("catalog" = String, Path)),
    responses((status = 200, body = RemoteList)))]
pub async fn list(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
) -> Result<Json<RemoteList>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let remotes = catalog.remotes().await?;
    Ok(Json(RemoteList {
        remotes: remotes.into_iter().map(RemoteView::from).collect(),
    }))
}

/// Adds a remote: a name for another server's catalog to fetch from and push to.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/remotes", tag = "remotes",
    params(("catalog" = String, Path)), request_body = AddRemoteRequest,
    responses((status = 201, body = RemoteView),
        (status = 400, description = "invalid name or URL"),
        (status = 409, description = "a remote of that name exists, or the catalog has the most remotes it may")))]
pub async fn add(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<AddRemoteRequest>,
) -> Result<(StatusCode, Json<RemoteView>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    let new = NewRemote {
        name: request.name,
        url: request.url,
        catalog: request.catalog,
    };
    let remote = catalog
        .add_remote(new, &Caller::current_name())
        .await
        .map_err(|error| {
            let message = error.to_string();
            match error {
                AddRemoteError::Invalid(_) => ApiError::bad_request(message),
                AddRemoteError::Exists(_) => {
                    ApiError::new(StatusCode::CONFLICT, "AlreadyExistsException", message)
                }
                AddRemoteError::TooMany => {
                    ApiError::new(StatusCode::CONFLICT, "LimitExceededException", message)
                }
                AddRemoteError::Records(e) => e.into(),
            }
        })?;
    Ok((StatusCode::CREATED, Json(remote.into())))
}

/// A remote and its tracking refs.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/remotes/{remote}", tag = "remotes",
    params(("catalog" = String, Path), ("remote" = String, Path)),
    responses((status = 200, body = RemoteView), (status = 404, description = "no such remote")))]
pub async fn get(
    State(state): State<AppState>,
    PathParams((catalog, remote)): PathParams<(String, String)>,
) -> Result<Json<RemoteView>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let remote = catalog.remote(&remote).await.map_err(remote_error)?;
    Ok(Json(remote.value.into()))
}

/// Removes a remote and its tracking refs.
#[utoipa::path(delete, path = "/api/v1/catalogs/{catalog}/remotes/{remote}", tag = "remotes",
    params(("catalog" = String, Path), ("remote" = String, Path)),
    responses((status = 204), (status = 404, description = "no such remote")))]
pub async fn remove(
    State(state): State<AppState>,
    PathParams((catalog, remote)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let catalog = open(&state, &catalog).await?;
    catalog.remove_remote(&remote).await.map_err(remote_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// What a receiver asks a sender for.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PackRequest {
    /// Branch and tag names to send; every one when absent.
    #[serde(default)]
    pub want: Option<Vec<String>>,
    /// Commits the receiver holds (full hashes): what they reach is not sent.
    #[serde(default)]
    pub have: Vec<String>,
}

fn pack_error(error: PackError) -> ApiError {
    let message = error.to_string();
    match error {
        PackError::UnknownRef(_) => {
            ApiError::new(StatusCode::NOT_FOUND, "NoSuchReferenceException", message)
        }
        PackError::TooManyHaves(_) => ApiError::bad_request(message),
        PackError::Backend(e) => e.into(),
        PackError::Read(e) => e.into(),
    }
}

fn parse_full_hash(field: &str, text: &str) -> Result<ObjectId, ApiError> {
    text.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "{field}: `{text}` is not a full commit hash (64 hex characters)"
        ))
    })
}

fn parse_ref_name(field: &str, text: &str) -> Result<RefName, ApiError> {
    RefName::new(text).map_err(|e| ApiError::bad_request(format!("{field}: {e}")))
}

/// Streams a pack: the branches and tags wanted and every object they reach that the
/// commits the receiver holds do not. Needs read on every ref sent.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/pack", tag = "remotes",
    params(("catalog" = String, Path)), request_body = PackRequest,
    responses((status = 200, description = "the pack, a bundle", content_type = "application/vnd.pangolin.bundle"),
        (status = 400, description = "an invalid name or hash"),
        (status = 404, description = "a wanted ref does not exist")))]
pub async fn pack(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<PackRequest>,
) -> Result<Response, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let want = request
        .want
        .map(|names| {
            names
                .iter()
                .map(|n| parse_ref_name("want", n))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let have = request
        .have
        .iter()
        .map(|h| parse_full_hash("have", h))
        .collect::<Result<Vec<_>, _>>()?;
    // Authorized before anything is planned: who may not read a ref learns nothing of it,
    // and makes the server walk nothing.
    let names = match &want {
        Some(names) => names.clone(),
        None => pangolin_catalog::reach::all_refs(catalog.store().as_ref(), catalog.odb().repo())
            .await?
            .into_iter()
            .map(|(reference, _)| reference.name)
            .collect(),
    };
    for name in &names {
        authorize(
            &state,
            &catalog,
            Privilege::Read,
            &RefSpec::Named(name.clone()),
        )
        .await?;
    }
    let export = catalog
        .plan_pack(want.as_deref(), &have)
        .await
        .map_err(pack_error)?;
    // A ref made between the listing and the plan is sent only if it was authorized.
    if want.is_none() {
        for r in &export.header().refs {
            if !names.contains(&r.name) {
                authorize(
                    &state,
                    &catalog,
                    Privilege::Read,
                    &RefSpec::Named(r.name.clone()),
                )
                .await?;
            }
        }
    }
    let (pieces, received) = mpsc::channel::<Bytes>(16);
    let writer = tokio::spawn(export.write(pieces));
    let body = futures::stream::unfold(
        (received, Some(writer)),
        |(mut received, writer)| async move {
            if let Some(piece) = received.recv().await {
                return Some((Ok(piece), (received, writer)));
            }
            let failure = match writer?.await {
                Ok(Ok(_)) => return None,
                Ok(Err(error)) => error.to_string(),
                Err(panicked) => panicked.to_string(),
            };
            // The receiver sees a pack without its end, which it refuses whole.
            tracing::error!(error = %failure, "pack failed; its answer is cut short");
            Some((Err(std::io::Error::other(failure)), (received, None)))
        },
    );
    let mut response = (
        [(axum::http::header::CONTENT_TYPE, BUNDLE_TYPE)],
        Body::from_stream(body),
    )
        .into_response();
    if let Some(root) = warehouse(&catalog)
        && let Ok(value) = axum::http::HeaderValue::from_str(&root)
    {
        response.headers_mut().insert(WAREHOUSE_HEADER, value);
    }
    Ok(response)
}

fn receive_error(error: ReceiveError) -> ApiError {
    let message = error.to_string();
    match error {
        ReceiveError::Intake(IntakeError::Read(e)) | ReceiveError::Read(e) => e.into(),
        ReceiveError::Intake(IntakeError::Backend(e)) => e.into(),
        ReceiveError::Intake(IntakeError::Records(e)) => e.into(),
        ReceiveError::Intake(_) | ReceiveError::Unexpected(_) => {
            ApiError::new(StatusCode::BAD_REQUEST, "BadRequestException", message)
        }
        ReceiveError::Remote(e) => remote_error(e),
    }
}

/// How one tracking ref changed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct TrackingChangeView {
    /// `branch` or `tag`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    /// Absent for a ref new to this catalog.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// Absent for a ref the remote deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The remote rewrote the ref: the new commit does not descend from the old.
    pub forced: bool,
}

impl From<TrackingChange> for TrackingChangeView {
    fn from(change: TrackingChange) -> Self {
        Self {
            kind: change.reference.kind.as_str().to_owned(),
            name: change.reference.name.as_str().to_owned(),
            old: change.old.map(|h| h.to_string()),
            new: change.new.map(|h| h.to_string()),
            forced: change.forced,
        }
    }
}

/// What a fetch stored.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct FetchReport {
    /// The pack's id (the hash its last 32 bytes carry).
    pub pack: String,
    /// Objects the pack held.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    pub remote: RemoteView,
    /// Tracking refs that appeared, moved or went.
    pub changes: Vec<TrackingChangeView>,
    /// Where this catalog keeps its files; table metadata from a remote with another
    /// warehouse keeps the remote's locations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warehouse: Option<String>,
}

fn warehouse(catalog: &Catalog) -> Option<String> {
    catalog.warehouse_root().map(str::to_owned)
}

/// Stores a pack fetched from the remote and records its refs as the remote's tracking refs.
/// Nothing is recorded unless the whole pack arrived whole and everything it points to is in
/// it or already here.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/remotes/{remote}/fetched", tag = "remotes",
    params(("catalog" = String, Path), ("remote" = String, Path)),
    request_body(content = Vec<u8>, content_type = "application/vnd.pangolin.bundle"),
    responses((status = 200, body = FetchReport),
        (status = 400, description = "not a pack, or damaged, altered, cut short or incomplete"),
        (status = 404, description = "no such remote")))]
pub async fn fetched(
    State(state): State<AppState>,
    PathParams((catalog, remote)): PathParams<(String, String)>,
    body: Body,
) -> Result<Json<FetchReport>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let receiver = catalog
        .fetch_receiver(&remote)
        .await
        .map_err(receive_error)?;
    let receiver = receive(body, receiver, receive_error, "pack").await?;
    let fetched = receiver
        .finish(&Caller::current_name())
        .await
        .map_err(receive_error)?;
    Ok(Json(FetchReport {
        pack: fetched.pack.to_string(),
        objects: fetched.objects,
        bytes: fetched.bytes,
        remote: fetched.remote.into(),
        changes: fetched.changes.into_iter().map(Into::into).collect(),
        warehouse: warehouse(&catalog),
    }))
}

/// Where a push moves a branch from, in the query.
#[derive(Debug, Deserialize, ToSchema, utoipa::IntoParams)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PushQuery {
    /// The branch to move (or create).
    pub branch: String,
    /// The head the pusher saw (a full hash); absent: the branch must not exist yet.
    #[serde(default)]
    pub expected_head: Option<String>,
    /// Move the branch even when the new head does not descend from it (needs the right to
    /// manage refs; audited as `branch.push.forced`).
    #[serde(default)]
    pub force: bool,
    /// Where the pack comes from (`server/catalog`), for the ref log.
    #[serde(default)]
    pub origin: Option<String>,
}

/// What a push did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct PushReport {
    /// `created`, `fast-forward`, `forced` or `up-to-date`.
    pub result: String,
    pub branch: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    pub head: String,
    pub pack: String,
    pub objects: u64,
    pub bytes: u64,
    /// Where this catalog keeps its files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warehouse: Option<String>,
}

fn push_error(error: PushError) -> ApiError {
    let message = error.to_string();
    match error {
        PushError::Receive(e) => receive_error(e),
        PushError::Protected(e) => e.into(),
        PushError::Stale { .. } | PushError::TagExists(_) => {
            ApiError::new(StatusCode::CONFLICT, "ReferenceConflictException", message)
        }
        PushError::NotFastForward { .. } => {
            ApiError::new(StatusCode::CONFLICT, "NotFastForwardException", message)
        }
        PushError::Read(e) => e.into(),
        PushError::Backend(e) => e.into(),
    }
}

/// Receives a pack of one branch and moves the branch to it, by compare-and-swap from the
/// head the pusher saw: only a fast-forward unless forced. Needs write on the branch, and the
/// right to manage refs to create it or force it. A protected branch refuses pushes.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/push", tag = "remotes",
    params(("catalog" = String, Path), PushQuery),
    request_body(content = Vec<u8>, content_type = "application/vnd.pangolin.bundle"),
    responses((status = 200, body = PushReport),
        (status = 400, description = "not a pack of that branch, or damaged, altered, cut short or incomplete"),
        (status = 403, description = "not allowed, or a protected branch"),
        (status = 409, description = "the branch moved, or the push is not a fast-forward")))]
pub async fn push(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    Query(query): Query<PushQuery>,
    body: Body,
) -> Result<Json<PushReport>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let branch = parse_ref_name("branch", &query.branch)?;
    let expected = query
        .expected_head
        .as_deref()
        .map(|h| parse_full_hash("expected-head", h))
        .transpose()?;
    if query
        .origin
        .as_ref()
        .is_some_and(|o| o.len() > MAX_ORIGIN_BYTES)
    {
        return Err(ApiError::bad_request(format!(
            "origin is longer than {MAX_ORIGIN_BYTES} bytes"
        )));
    }
    let at = RefSpec::Named(branch.clone());
    authorize(&state, &catalog, Privilege::Write, &at).await?;
    if expected.is_none() || query.force {
        authorize(&state, &catalog, Privilege::ManageRefs, &at).await?;
    }
    let request = PushRequest {
        branch,
        expected,
        force: query.force,
        origin: query.origin,
    };
    let receiver = catalog.push_receiver(request).map_err(push_error)?;
    let receiver = receive(body, receiver, |e| push_error(e.into()), "pack").await?;
    let principal = Caller::current_name();
    let pushed = receiver.finish(&principal).await.map_err(push_error)?;
    if pushed.forced {
        audit_forced(&state, &catalog, &principal, &pushed).await;
    }
    let result = match pushed.previous {
        None => "created",
        Some(previous) if previous == pushed.head => "up-to-date",
        Some(_) if pushed.forced => "forced",
        Some(_) => "fast-forward",
    };
    Ok(Json(PushReport {
        result: result.to_owned(),
        branch: pushed.reference.name.as_str().to_owned(),
        previous: pushed.previous.map(|h| h.to_string()),
        head: pushed.head.to_string(),
        pack: pushed.pack.to_string(),
        objects: pushed.objects,
        bytes: pushed.bytes,
        warehouse: warehouse(&catalog),
    }))
}

/// A forced push drops commits from a branch: its own audit event says which.
async fn audit_forced(
    state: &AppState,
    catalog: &Catalog,
    principal: &str,
    pushed: &pangolin_catalog::remotes::Pushed,
) {
    let resource = format!("{}/{}", catalog.name(), pushed.reference.name.as_str());
    let details = BTreeMap::from([
        (
            "previous".to_owned(),
            pushed.previous.map(|h| h.to_string()).unwrap_or_default(),
        ),
        ("head".to_owned(), pushed.head.to_string()),
    ]);
    audit::write(
        &state.security,
        audit::Entry {
            tenant: catalog.tenant(),
            principal,
            action: "branch.push.forced",
            resource_type: "branch",
            resource_id: &resource,
            outcome: Outcome::Success,
            details,
        },
    )
    .await;
}
