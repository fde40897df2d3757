//! Every route the server serves, with the action it is audited as and what it needs before
//! its handler runs. The authorization layer looks each request up here and refuses a route
//! that is missing (deny by default); a test checks that every route of the router is listed.

mod iceberg;
mod management;
mod ui;

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

use axum::http::Method;
use pangolin_catalog::authz::Privilege;

/// How deep into the catalog tree a route's path names its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The caller's tenant.
    Tenant,
    /// The catalog of the `{prefix}` or `{catalog}` segment.
    Catalog,
    /// The `{namespace}` of that catalog.
    Namespace,
    /// The `{table}` or `{view}` in that namespace.
    Table,
}

/// What a route needs before its handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Anyone, signed in or not: health, readiness, signing in, the OpenAPI document.
    Public,
    /// Any signed-in principal; the handler shows only what is the caller's own.
    SignedIn,
    /// The privilege on what the path names, at the ref the path names.
    Path(Privilege, Level),
    /// The privilege on what the path names or on anything beneath it: listings, whose
    /// handlers then show only what the caller may see.
    PathOrBelow(Privilege, Level),
    /// The handler authorizes through the same check, because what the route touches is
    /// named in its body or query (renames, transactions, merges, new refs, admin records).
    Handler,
    /// Only root (the deployment's administrator).
    Root,
}

/// One route: method, path as routed, the action name audit events carry, and its need.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub action: &'static str,
    pub need: Need,
}

const fn route(
    method: &'static str,
    path: &'static str,
    action: &'static str,
    need: Need,
) -> Route {
    Route {
        method,
        path,
        action,
        need,
    }
}

/// The whole HTTP surface: the Iceberg REST routes, the management API's and the web UI's.
pub static ROUTES: LazyLock<Vec<Route>> =
    LazyLock::new(|| [iceberg::ICEBERG, management::MANAGEMENT, ui::UI].concat());

/// The route `method` + `path` (as routed, with `{params}`), if the server serves it.
pub fn lookup(method: &Method, path: &str) -> Option<&'static Route> {
    // Every request looks its route up: index the table once rather than scan it each time.
    static INDEX: OnceLock<HashMap<(&'static str, &'static str), &'static Route>> = OnceLock::new();
    INDEX
        .get_or_init(|| ROUTES.iter().map(|r| ((r.method, r.path), r)).collect())
        .get(&(method.as_str(), path))
        .copied()
}
