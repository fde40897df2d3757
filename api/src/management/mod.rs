//! The management API (`/api/v1`): branches and tags, the log, commits, diffs, the catalog tree,
//! merges, cherry-picks and reverts. Every route is described in the OpenAPI document
//! ([`openapi`]); the routes and the document are built from the same list.

pub mod audit;
pub mod catalogs;
pub mod history;
pub mod merge;
pub mod openapi;
pub mod refs;
pub mod views;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use pangolin_catalog::{Catalog, RefSpec};
use pangolin_store::{ContentKey, HashPrefix, ObjectId};

use crate::error::ApiError;
use crate::security;
use crate::state::AppState;
use pangolin_catalog::authz::Privilege;

/// Largest page a client may ask for, and the page when it asks for none.
const MAX_PAGE: usize = 1_000;
const DEFAULT_PAGE: usize = 100;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/openapi.json", get(openapi::document))
        .route("/api/v1/catalogs", get(catalogs::list))
        .route(
            "/api/v1/catalogs/{catalog}/refs",
            get(refs::list).post(refs::create),
        )
        .route(
            "/api/v1/catalogs/{catalog}/refs/{name}",
            get(refs::get).put(refs::assign).delete(refs::delete),
        )
        .route(
            "/api/v1/catalogs/{catalog}/refs/{name}/log",
            get(history::ref_log),
        )
        .route("/api/v1/catalogs/{catalog}/log", get(history::log))
        .route(
            "/api/v1/catalogs/{catalog}/commits/{reference}",
            get(history::commit),
        )
        .route("/api/v1/catalogs/{catalog}/diff", get(history::diff))
        .route("/api/v1/catalogs/{catalog}/entries", get(history::entries))
        .route("/api/v1/catalogs/{catalog}/merge", post(merge::merge))
        .route(
            "/api/v1/catalogs/{catalog}/cherry-pick",
            post(merge::cherry_pick),
        )
        .route("/api/v1/catalogs/{catalog}/revert", post(merge::revert))
        .route("/api/v1/audit", get(audit::query))
        .route("/api/v1/audit/verify", get(audit::verify_chain))
}

/// The catalog `name`, which must exist.
async fn open(state: &AppState, name: &str) -> Result<Catalog, ApiError> {
    let scope = state.scope(name).await?;
    if name.contains('@') || !scope.catalog.exists().await? {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchCatalogException",
            format!("there is no catalog named `{name}`"),
        ));
    }
    Ok(scope.catalog)
}

/// Authorizes `privilege` on the whole `catalog` at the ref `at` names.
async fn authorize(
    state: &AppState,
    catalog: &Catalog,
    privilege: Privilege,
    at: &RefSpec,
) -> Result<(), ApiError> {
    security::check(
        state,
        privilege,
        security::resource::catalog(catalog),
        at.ref_name().as_str(),
    )
    .await
}

fn parse_spec(field: &str, value: &str) -> Result<RefSpec, ApiError> {
    RefSpec::parse(value).map_err(|e| ApiError::bad_request(format!("invalid {field}: {e}")))
}

/// A full hash or a unique prefix of one, in `catalog`.
async fn parse_hash(catalog: &Catalog, field: &str, value: &str) -> Result<ObjectId, ApiError> {
    let prefix = HashPrefix::parse(value)
        .map_err(|e| ApiError::bad_request(format!("invalid {field}: {e}")))?;
    catalog
        .odb()
        .resolve_prefix(&prefix)
        .await
        .map_err(|e| ApiError::bad_request(format!("invalid {field}: {e}")))
}

/// A key in a query string: levels joined by the unit separator.
fn parse_key(field: &str, value: &str) -> Result<ContentKey, ApiError> {
    ContentKey::new(value.split('\u{1f}'))
        .map_err(|e| ApiError::bad_request(format!("invalid {field}: {e}")))
}

fn page_size(requested: Option<usize>) -> Result<usize, ApiError> {
    match requested {
        Some(0) => Err(ApiError::bad_request("pageSize must be at least 1")),
        Some(n) => Ok(n.min(MAX_PAGE)),
        None => Ok(DEFAULT_PAGE),
    }
}

/// Page tokens are opaque to clients: hex of what the server continues after.
fn encode_token(raw: &str) -> String {
    raw.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_token(token: &str) -> Result<String, ApiError> {
    let invalid = || ApiError::bad_request(format!("invalid page token `{token}`"));
    if !token.len().is_multiple_of(2) {
        return Err(invalid());
    }
    let bytes = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| invalid())?;
    String::from_utf8(bytes).map_err(|_| invalid())
}

fn key_token(key: &ContentKey) -> String {
    encode_token(&views::levels(key).join("\u{1f}"))
}

fn key_from_token(token: &str) -> Result<ContentKey, ApiError> {
    parse_key("page token", &decode_token(token)?)
}
