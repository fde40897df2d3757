//! The management API (`/api/v1`): branches and tags, the log, commits, diffs, the catalog tree,
//! merges, cherry-picks and reverts. Every route is described in the OpenAPI document
//! ([`openapi`]); the routes and the document are built from the same list.

pub mod admin;
pub mod audit;
pub mod bundle;
pub mod catalogs;
pub mod events;
pub mod history;
pub mod jobs;
pub mod maintenance;
pub mod merge;
pub mod merge_requests;
pub mod openapi;
pub mod refs;
pub mod remotes;
pub mod retention;
pub mod views;
pub mod webhooks;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post, put};
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
        .route(
            "/api/v1/catalogs",
            get(catalogs::list).post(admin::catalogs::create),
        )
        .route(
            "/api/v1/catalogs/{catalog}",
            get(admin::catalogs::get).delete(admin::catalogs::delete),
        )
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
        .route("/api/v1/catalogs/{catalog}/events", get(events::page))
        .route(
            "/api/v1/catalogs/{catalog}/events/stream",
            get(events::stream),
        )
        .route(
            "/api/v1/catalogs/{catalog}/webhooks",
            get(webhooks::list).post(webhooks::create),
        )
        .route(
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}",
            get(webhooks::get)
                .patch(webhooks::update)
                .delete(webhooks::delete),
        )
        .route(
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}/attempts",
            get(webhooks::attempts),
        )
        .route(
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters",
            get(webhooks::dead_letters),
        )
        .route(
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}",
            axum::routing::delete(webhooks::discard_dead_letter),
        )
        .route(
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}/redeliver",
            post(webhooks::redeliver),
        )
        .route("/api/v1/catalogs/{catalog}/entries", get(history::entries))
        .route("/api/v1/catalogs/{catalog}/merge", post(merge::merge))
        .route(
            "/api/v1/catalogs/{catalog}/cherry-pick",
            post(merge::cherry_pick),
        )
        .route("/api/v1/catalogs/{catalog}/revert", post(merge::revert))
        .route(
            "/api/v1/catalogs/{catalog}/protection",
            get(merge_requests::get_protection)
                .put(merge_requests::put_protection)
                .delete(merge_requests::delete_protection),
        )
        .route(
            "/api/v1/catalogs/{catalog}/merge-requests",
            get(merge_requests::list).post(merge_requests::create),
        )
        .route(
            "/api/v1/catalogs/{catalog}/merge-requests/{number}",
            get(merge_requests::get),
        )
        .route(
            "/api/v1/catalogs/{catalog}/merge-requests/{number}/checks",
            post(merge_requests::run_checks),
        )
        .route(
            "/api/v1/catalogs/{catalog}/merge-requests/{number}/merge",
            post(merge_requests::merge),
        )
        .route(
            "/api/v1/catalogs/{catalog}/merge-requests/{number}/close",
            post(merge_requests::close),
        )
        .route("/api/v1/catalogs/{catalog}/export", post(bundle::export))
        .route(
            "/api/v1/catalogs/{catalog}/remotes",
            get(remotes::list).post(remotes::add),
        )
        .route(
            "/api/v1/catalogs/{catalog}/remotes/{remote}",
            get(remotes::get).delete(remotes::remove),
        )
        .route("/api/v1/catalogs/{catalog}/pack", post(remotes::pack))
        .route(
            "/api/v1/catalogs/{catalog}/maintenance/expire-snapshots",
            post(maintenance::expire_snapshots),
        )
        .route(
            "/api/v1/catalogs/{catalog}/maintenance/remove-orphan-files",
            post(maintenance::remove_orphan_files),
        )
        .route(
            "/api/v1/catalogs/{catalog}/maintenance/collect-objects",
            post(maintenance::collect_objects),
        )
        .route(
            "/api/v1/catalogs/{catalog}/retention",
            get(retention::get)
                .put(retention::put)
                .delete(retention::delete),
        )
        .route(
            "/api/v1/catalogs/{catalog}/maintenance/jobs",
            get(maintenance::list_jobs),
        )
        .route(
            "/api/v1/catalogs/{catalog}/maintenance/jobs/{job}",
            get(maintenance::get_job),
        )
        .route("/api/v1/audit", get(audit::query))
        .route("/api/v1/audit/verify", get(audit::verify_chain))
        .merge(admin_routes())
}

/// The administration routes: see [`admin`].
fn admin_routes() -> Router<AppState> {
    use admin::{api_keys, external, roles, service_users, tenants, tokens, users, warehouses};
    Router::new()
        .route("/api/v1/tenants", get(tenants::list).post(tenants::create))
        .route(
            "/api/v1/tenants/{tenant}",
            get(tenants::get)
                .patch(tenants::update)
                .delete(tenants::delete),
        )
        .route(
            "/api/v1/warehouses",
            get(warehouses::list).post(warehouses::create),
        )
        .route(
            "/api/v1/warehouses/{warehouse}",
            get(warehouses::get)
                .put(warehouses::replace)
                .delete(warehouses::delete),
        )
        .route("/api/v1/users", get(users::list).post(users::create))
        .route(
            "/api/v1/users/{user}",
            get(users::get).delete(users::delete),
        )
        .route("/api/v1/users/{user}/password", put(users::reset_password))
        .route("/api/v1/users/{user}/disabled", put(users::set_disabled))
        .route("/api/v1/external-principals", get(external::list))
        .route(
            "/api/v1/external-principals/{principal}",
            get(external::get),
        )
        .route(
            "/api/v1/external-principals/{principal}/disabled",
            put(external::set_disabled),
        )
        .route("/api/v1/me/password", post(users::change_own_password))
        .route(
            "/api/v1/service-users",
            get(service_users::list).post(service_users::create),
        )
        .route(
            "/api/v1/service-users/{name}",
            get(service_users::get).delete(service_users::delete),
        )
        .route(
            "/api/v1/service-users/{name}/keys",
            get(api_keys::list).post(api_keys::create),
        )
        .route(
            "/api/v1/service-users/{name}/keys/{key}",
            axum::routing::delete(api_keys::revoke),
        )
        .route(
            "/api/v1/service-users/{name}/keys/{key}/rotate",
            post(api_keys::rotate),
        )
        .route("/api/v1/roles", get(roles::list).post(roles::create))
        .route(
            "/api/v1/roles/{role}",
            get(roles::get).put(roles::replace).delete(roles::delete),
        )
        .route("/api/v1/roles/{role}/members", get(roles::members))
        .route(
            "/api/v1/roles/{role}/members/{principal}",
            put(roles::bind).delete(roles::unbind),
        )
        .route("/api/v1/tokens/revoke", post(tokens::revoke))
}

/// The catalog `name`, which must exist.
pub(crate) async fn open(state: &AppState, name: &str) -> Result<Catalog, ApiError> {
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

pub(crate) fn parse_spec(field: &str, value: &str) -> Result<RefSpec, ApiError> {
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
pub(crate) fn parse_key(field: &str, value: &str) -> Result<ContentKey, ApiError> {
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
