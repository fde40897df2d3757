//! The OpenAPI document of the management API, generated from the handlers' annotations and
//! served at `/api/v1/openapi.json`. `docs/openapi.json` is a committed copy; a test fails when
//! it drifts.

use axum::Json;
use utoipa::OpenApi;

use super::admin::{
    api_keys, catalogs as admin_catalogs, external, roles, service_users, tenants, tokens, users,
    warehouses,
};
use super::{
    audit, bundle, catalogs, events, history, maintenance, merge, merge_requests, refs, remotes,
    retention, views, webhooks,
};

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Pangolin management API",
        description = "Branches, tags, history, diffs, merges, merge requests, change events, webhooks and remotes of Pangolin catalogs, and the \
                       administration of tenants, warehouses, catalogs, users, service users, \
                       API keys and roles. Errors use the Iceberg error model: \
                       {\"error\": {\"message\", \"type\", \"code\"}}.",
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
        events::page,
        events::stream,
        webhooks::create,
        webhooks::list,
        webhooks::get,
        webhooks::update,
        webhooks::delete,
        webhooks::attempts,
        webhooks::dead_letters,
        webhooks::redeliver,
        webhooks::discard_dead_letter,
        merge::merge,
        merge::cherry_pick,
        merge::revert,
        merge_requests::get_protection,
        merge_requests::put_protection,
        merge_requests::delete_protection,
        merge_requests::create,
        merge_requests::list,
        merge_requests::get,
        merge_requests::run_checks,
        merge_requests::merge,
        merge_requests::close,
        bundle::export,
        bundle::import,
        remotes::list,
        remotes::add,
        remotes::get,
        remotes::remove,
        remotes::pack,
        remotes::fetched,
        remotes::push,
        maintenance::expire_snapshots,
        maintenance::remove_orphan_files,
        maintenance::collect_objects,
        maintenance::list_jobs,
        maintenance::get_job,
        retention::get,
        retention::put,
        retention::delete,
        audit::query,
        audit::verify_chain,
        tenants::create,
        tenants::list,
        tenants::get,
        tenants::update,
        tenants::delete,
        warehouses::create,
        warehouses::list,
        warehouses::get,
        warehouses::replace,
        warehouses::delete,
        admin_catalogs::create,
        admin_catalogs::get,
        admin_catalogs::delete,
        users::create,
        users::list,
        users::get,
        users::delete,
        users::reset_password,
        users::set_disabled,
        users::change_own_password,
        external::list,
        external::get,
        external::set_disabled,
        service_users::create,
        service_users::list,
        service_users::get,
        service_users::delete,
        api_keys::create,
        api_keys::list,
        api_keys::revoke,
        api_keys::rotate,
        roles::create,
        roles::list,
        roles::get,
        roles::replace,
        roles::delete,
        roles::members,
        roles::bind,
        roles::unbind,
        tokens::revoke,
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
