//! Export and import of a whole catalog as a bundle (see `pangolin_catalog::bundle`).
//!
//! Both stream: an export is answered as soon as it is planned and its bytes follow as the
//! walk reads objects; an import reads the request body piece by piece. An export that fails
//! half way ends its answer early, so the reader holds a bundle without its end, which no
//! import accepts; its `200` was audited when the answer began, so the failure is audited
//! too, as `catalog.export.failed`.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use pangolin_catalog::bundle::{Base, BundleRef, ExportError, ImportError, IntakeError, Receiving};
use pangolin_catalog::reach::ReachError;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::open;
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::security::Caller;
use crate::state::AppState;

/// The media type of a bundle.
pub const BUNDLE_TYPE: &str = "application/vnd.pangolin.bundle";

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportRequest {
    /// An earlier bundle of this catalog to continue: `{"bundle": "<its id>", "refs": [its
    /// refs]}`. Only what those refs do not reach is exported; the import of the result
    /// needs a catalog holding exactly those refs.
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub base: Option<Base>,
}

fn export_error(error: ExportError) -> ApiError {
    match error {
        ExportError::UnknownBase { .. } => ApiError::bad_request(error.to_string()),
        ExportError::Backend(e) | ExportError::History(ReachError::Backend(e)) => e.into(),
        other => ApiError::internal(&other),
    }
}

/// Streams the bundle of every branch and tag and what they reach; a request naming an
/// earlier bundle gets only what is new since.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/export", tag = "bundles",
    params(("catalog" = String, Path)), request_body = ExportRequest,
    responses((status = 200, description = "the bundle", content_type = "application/vnd.pangolin.bundle"),
        (status = 400, description = "the base names commits this catalog does not hold")))]
pub async fn export(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<ExportRequest>,
) -> Result<Response, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let export = catalog
        .plan_export(request.base)
        .await
        .map_err(export_error)?;
    let (pieces, received) = mpsc::channel::<Bytes>(16);
    let writer = tokio::spawn(export.write(pieces));
    // The caller is known only while the handler runs; the body is read after it returned.
    let failed = FailedExport {
        security: state.security.clone(),
        tenant: catalog.tenant().to_owned(),
        catalog: catalog.name().to_owned(),
        principal: Caller::current_name(),
    };
    let body = futures::stream::unfold(
        (received, Some((writer, failed))),
        |(mut received, writer)| async move {
            if let Some(piece) = received.recv().await {
                return Some((Ok(piece), (received, writer)));
            }
            let (writer, failed) = writer?;
            let failure = match writer.await {
                Ok(Ok(_)) => return None,
                Ok(Err(error)) => error.to_string(),
                Err(panicked) => panicked.to_string(),
            };
            tracing::error!(error = %failure, "export failed; its answer is cut short");
            failed.audit(&failure).await;
            Some((Err(std::io::Error::other(failure)), (received, None)))
        },
    );
    Ok((
        [(header::CONTENT_TYPE, BUNDLE_TYPE)],
        Body::from_stream(body),
    )
        .into_response())
}

/// Who asked for an export, to audit its failure after its answer began.
struct FailedExport {
    security: std::sync::Arc<crate::security::Security>,
    tenant: String,
    catalog: String,
    principal: String,
}

impl FailedExport {
    async fn audit(&self, failure: &str) {
        crate::security::audit::write(
            &self.security,
            crate::security::audit::Entry {
                tenant: &self.tenant,
                principal: &self.principal,
                action: "catalog.export.failed",
                resource_type: "catalog",
                resource_id: &self.catalog,
                outcome: pangolin_records::Outcome::Failed,
                details: std::collections::BTreeMap::from([(
                    "error".to_owned(),
                    failure.to_owned(),
                )]),
            },
        )
        .await;
    }
}

/// What an import did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ImportReport {
    /// The bundle's id (the hash its last 32 bytes carry).
    pub bundle: String,
    /// The bundle it continued, for an incremental bundle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Objects the bundle held.
    pub objects: u64,
    /// The catalog's branches and tags now.
    #[schema(value_type = Vec<Object>)]
    pub refs: Vec<BundleRef>,
    /// Branches and tags created, moved or deleted.
    pub changed_refs: usize,
}

fn import_error(error: ImportError) -> ApiError {
    let message = error.to_string();
    match error {
        ImportError::Intake(IntakeError::Read(e)) => e.into(),
        ImportError::Intake(IntakeError::Backend(e)) => e.into(),
        ImportError::Intake(IntakeError::Records(e)) => e.into(),
        ImportError::Intake(_) | ImportError::NoDefaultBranch => {
            ApiError::new(StatusCode::BAD_REQUEST, "BadRequestException", message)
        }
        ImportError::NotEmpty { .. } | ImportError::BaseMismatch { .. } | ImportError::Moved(_) => {
            ApiError::new(StatusCode::CONFLICT, "CommitFailedException", message)
        }
        ImportError::Read(e) => e.into(),
        ImportError::Backend(e) => e.into(),
    }
}

/// Feeds `body` to `receiver` a piece at a time as it arrives; on the first error, the
/// receiver's (answered through `error`) or the body's (a `what` cut short), the receiver is
/// abandoned, releasing what it holds, and the error answered.
pub(crate) async fn receive<R: Receiving>(
    body: Body,
    mut receiver: R,
    error: impl Fn(R::Error) -> ApiError,
    what: &str,
) -> Result<R, ApiError> {
    let mut body = body.into_data_stream();
    while let Some(piece) = body.next().await {
        let fed = match piece {
            Ok(piece) => receiver.feed(&piece).await.map_err(&error),
            Err(e) => Err(ApiError::bad_request(format!("reading the {what}: {e}"))),
        };
        if let Err(error) = fed {
            receiver.abandon().await;
            return Err(error);
        }
    }
    Ok(receiver)
}

/// Imports a bundle: a full one into a new catalog (nothing but its first, empty commit), an
/// incremental one into the catalog holding exactly the refs of the bundle it continues. The
/// refs move only once the whole bundle was read and checked.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/import", tag = "bundles",
    params(("catalog" = String, Path)),
    request_body(content = Vec<u8>, content_type = "application/vnd.pangolin.bundle"),
    responses((status = 200, body = ImportReport),
        (status = 400, description = "not a bundle, or damaged, altered or incomplete"),
        (status = 409, description = "the catalog is not new, or not at the bundle's base")))]
pub async fn import(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    body: Body,
) -> Result<Json<ImportReport>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let importer = receive(body, catalog.importer(), import_error, "bundle").await?;
    let imported = importer
        .finish(&Caller::current_name())
        .await
        .map_err(import_error)?;
    Ok(Json(ImportReport {
        bundle: imported.bundle.to_string(),
        base: imported.base.map(|b| b.to_string()),
        objects: imported.objects,
        refs: imported.refs,
        changed_refs: imported.changed,
    }))
}
