//! The OpenAPI document of the management API, generated from the handlers' annotations and
//! served at `/api/v1/openapi.json`. `docs/openapi.json` is a committed copy; a test fails when
//! it drifts.

use axum::Json;
use utoipa::OpenApi;

use super::{audit, catalogs, history, merge, refs, views};

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Pangolin management API",
        description = "Branches, tags, history, diffs and merges of Pangolin catalogs. Errors use \
                       the Iceberg error model: {\"error\": {\"message\", \"type\", \"code\"}}.",
        license(name = "Apache-2.0")
    ),
    paths(
        catalogs::list,
        refs::list,
        refs::create,
        refs::get,
        refs::assign,
        refs::delete,
        history::ref_log,
        history::log,
        history::commit,
        history::diff,
        history::entries,
        merge::merge,
        merge::cherry_pick,
        merge::revert,
        audit::query,
        audit::verify_chain,
    ),
    components(schemas(
        views::EntryView,
        views::ChangeView,
        views::ConflictView,
        views::CommitView,
    ))
)]
pub struct ManagementApi;

/// The document, as served.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ManagementApi::openapi())
}
