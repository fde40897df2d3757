//! Every route the server serves, with the action it is audited as and what it needs before
//! its handler runs. The authorization layer looks each request up here and refuses a route
//! that is missing (deny by default); a test checks that every route of the router is listed.

use std::collections::HashMap;
use std::sync::OnceLock;

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

use Level::{Catalog, Namespace, Table, Tenant};
use Need::{Handler, Path, PathOrBelow, Public, Root, SignedIn};
use Privilege::{
    Create, Drop, ManageCatalogs, ManageGrants, ManageRefs, ManageUsers, Read, ReadAudit, Write,
};

/// The whole HTTP surface.
pub static ROUTES: &[Route] = &[
    route("GET", "/health", "health", Public),
    route("GET", "/ready", "ready", Public),
    route("GET", "/metrics", "metrics", Public),
    // Iceberg REST.
    route("GET", "/v1/config", "config.get", SignedIn),
    route("POST", "/v1/oauth/tokens", "auth.oauth-token", Public),
    route(
        "GET",
        "/v1/{prefix}/namespaces",
        "namespace.list",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces",
        "namespace.create",
        Handler,
    ),
    route(
        "GET",
        "/v1/{prefix}/namespaces/{namespace}",
        "namespace.load",
        Path(Read, Namespace),
    ),
    route(
        "HEAD",
        "/v1/{prefix}/namespaces/{namespace}",
        "namespace.exists",
        Path(Read, Namespace),
    ),
    route(
        "DELETE",
        "/v1/{prefix}/namespaces/{namespace}",
        "namespace.drop",
        Path(Drop, Namespace),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/properties",
        "namespace.update-properties",
        Path(Write, Namespace),
    ),
    route(
        "GET",
        "/v1/{prefix}/namespaces/{namespace}/tables",
        "table.list",
        PathOrBelow(Read, Namespace),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/tables",
        "table.create",
        Path(Create, Namespace),
    ),
    route(
        "GET",
        "/v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "table.load",
        Path(Read, Table),
    ),
    route(
        "HEAD",
        "/v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "table.exists",
        Path(Read, Table),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "table.commit",
        Path(Write, Table),
    ),
    route(
        "DELETE",
        "/v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "table.drop",
        Path(Drop, Table),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
        "table.report-metrics",
        Path(Read, Table),
    ),
    route(
        "GET",
        "/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
        "table.credentials",
        Path(Read, Table),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/tables/{table}/sign",
        "table.sign",
        Path(Read, Table),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/register",
        "table.register",
        Path(Create, Namespace),
    ),
    route(
        "GET",
        "/v1/{prefix}/namespaces/{namespace}/views",
        "view.list",
        PathOrBelow(Read, Namespace),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/views",
        "view.create",
        Path(Create, Namespace),
    ),
    route(
        "GET",
        "/v1/{prefix}/namespaces/{namespace}/views/{view}",
        "view.load",
        Path(Read, Table),
    ),
    route(
        "HEAD",
        "/v1/{prefix}/namespaces/{namespace}/views/{view}",
        "view.exists",
        Path(Read, Table),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/views/{view}",
        "view.replace",
        Path(Write, Table),
    ),
    route(
        "DELETE",
        "/v1/{prefix}/namespaces/{namespace}/views/{view}",
        "view.drop",
        Path(Drop, Table),
    ),
    route(
        "POST",
        "/v1/{prefix}/namespaces/{namespace}/register-view",
        "view.register",
        Path(Create, Namespace),
    ),
    route(
        "POST",
        "/v1/{prefix}/tables/rename",
        "table.rename",
        Handler,
    ),
    route("POST", "/v1/{prefix}/views/rename", "view.rename", Handler),
    route(
        "POST",
        "/v1/{prefix}/transactions/commit",
        "transaction.commit",
        Handler,
    ),
    // Management.
    route("GET", "/api/v1/openapi.json", "openapi.get", Public),
    route("POST", "/api/v1/login", "auth.login", Public),
    route("POST", "/api/v1/token/refresh", "auth.refresh", Public),
    route("GET", "/api/v1/auth/providers", "auth.providers", Public),
    route("POST", "/api/v1/logout", "auth.logout", SignedIn),
    route("GET", "/api/v1/whoami", "auth.whoami", SignedIn),
    route("GET", "/api/v1/catalogs", "catalog.list", SignedIn),
    // The web UI: each page needs what the API route it renders needs.
    route("GET", "/ui", "ui.catalogs", SignedIn),
    route("GET", "/ui/style.css", "ui.style", Public),
    route("GET", "/ui/login", "ui.login-form", Public),
    // The API's sign-in underneath audits every attempt.
    route("POST", "/ui/login", "ui.login", Public),
    // The provider's sign-in underneath; the callback checks the token as every request does.
    route("GET", "/ui/login/oidc", "ui.login-oidc-start", Public),
    route("GET", "/ui/login/oidc/callback", "ui.login-oidc", Public),
    route("POST", "/ui/logout", "ui.logout", SignedIn),
    route(
        "GET",
        "/ui/catalogs/{catalog}",
        "ui.refs",
        Path(Read, Catalog),
    ),
    route(
        "POST",
        "/ui/catalogs/{catalog}/refs",
        "ui.ref-create",
        Handler,
    ),
    route(
        "POST",
        "/ui/catalogs/{catalog}/refs/{name}/delete",
        "ui.ref-delete",
        Path(ManageRefs, Catalog),
    ),
    route(
        "GET",
        "/ui/catalogs/{catalog}/log",
        "ui.log",
        Path(Read, Catalog),
    ),
    route(
        "GET",
        "/ui/catalogs/{catalog}/commits/{reference}",
        "ui.commit",
        Path(Read, Catalog),
    ),
    route(
        "GET",
        "/ui/catalogs/{catalog}/entries",
        "ui.entries",
        Path(Read, Catalog),
    ),
    route(
        "GET",
        "/ui/catalogs/{catalog}/table",
        "ui.table",
        Path(Read, Catalog),
    ),
    route(
        "GET",
        "/ui/catalogs/{catalog}/compare",
        "ui.compare",
        Path(Read, Catalog),
    ),
    route("POST", "/ui/catalogs/{catalog}/merge", "ui.merge", Handler),
    route("POST", "/ui/catalogs/{catalog}/pick", "ui.pick", Handler),
    route(
        "GET",
        "/ui/catalogs/{catalog}/merge-requests",
        "ui.merge-requests",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/ui/catalogs/{catalog}/merge-requests",
        "ui.merge-request-create",
        Handler,
    ),
    route(
        "GET",
        "/ui/catalogs/{catalog}/merge-requests/{number}",
        "ui.merge-request",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/ui/catalogs/{catalog}/merge-requests/{number}/checks",
        "ui.merge-request-checks",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/ui/catalogs/{catalog}/merge-requests/{number}/merge",
        "ui.merge-request-merge",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/ui/catalogs/{catalog}/merge-requests/{number}/close",
        "ui.merge-request-close",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "GET",
        "/ui/catalogs/{catalog}/remotes",
        "ui.remotes",
        Path(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs",
        "catalog.create",
        Path(ManageCatalogs, Tenant),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}",
        "catalog.get",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "DELETE",
        "/api/v1/catalogs/{catalog}",
        "catalog.delete",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/refs",
        "ref.list",
        Path(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/refs",
        "ref.create",
        Handler,
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/refs/{name}",
        "ref.get",
        Path(Read, Catalog),
    ),
    route(
        "PUT",
        "/api/v1/catalogs/{catalog}/refs/{name}",
        "ref.assign",
        Path(ManageRefs, Catalog),
    ),
    route(
        "DELETE",
        "/api/v1/catalogs/{catalog}/refs/{name}",
        "ref.delete",
        Path(ManageRefs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/refs/{name}/log",
        "ref.log",
        Path(Read, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/log",
        "commit.log",
        Path(Read, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/events",
        "catalog.events",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/events/stream",
        "catalog.events-stream",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/webhooks",
        "webhook.create",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/webhooks",
        "webhook.list",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/webhooks/{webhook}",
        "webhook.get",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "PATCH",
        "/api/v1/catalogs/{catalog}/webhooks/{webhook}",
        "webhook.update",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "DELETE",
        "/api/v1/catalogs/{catalog}/webhooks/{webhook}",
        "webhook.delete",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/webhooks/{webhook}/attempts",
        "webhook.attempts",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters",
        "webhook.dead-letters",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "DELETE",
        "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}",
        "webhook.discard-dead-letter",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}/redeliver",
        "webhook.redeliver",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/commits/{reference}",
        "commit.get",
        Path(Read, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/diff",
        "commit.diff",
        Handler,
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/entries",
        "entry.list",
        Path(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/merge",
        "branch.merge",
        Handler,
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/cherry-pick",
        "branch.cherry-pick",
        Handler,
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/revert",
        "branch.revert",
        Handler,
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/protection",
        "catalog.get-protection",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "PUT",
        "/api/v1/catalogs/{catalog}/protection",
        "catalog.set-protection",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "DELETE",
        "/api/v1/catalogs/{catalog}/protection",
        "catalog.clear-protection",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/merge-requests",
        "merge-request.create",
        Handler,
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/merge-requests",
        "merge-request.list",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/merge-requests/{number}",
        "merge-request.get",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/merge-requests/{number}/checks",
        "merge-request.run-checks",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/merge-requests/{number}/merge",
        "merge-request.merge",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/merge-requests/{number}/close",
        "merge-request.close",
        PathOrBelow(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/export",
        "catalog.export",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/import",
        "catalog.import",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/remotes",
        "remote.list",
        Path(Read, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/remotes",
        "remote.add",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/remotes/{remote}",
        "remote.get",
        Path(Read, Catalog),
    ),
    route(
        "DELETE",
        "/api/v1/catalogs/{catalog}/remotes/{remote}",
        "remote.remove",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/remotes/{remote}/fetched",
        "remote.fetched",
        Path(Write, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/pack",
        "catalog.pack",
        Handler,
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/push",
        "branch.push",
        Handler,
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/maintenance/expire-snapshots",
        "catalog.expire-snapshots",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/maintenance/remove-orphan-files",
        "catalog.remove-orphan-files",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "POST",
        "/api/v1/catalogs/{catalog}/maintenance/collect-objects",
        "catalog.collect-objects",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/retention",
        "catalog.get-retention",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "PUT",
        "/api/v1/catalogs/{catalog}/retention",
        "catalog.set-retention",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "DELETE",
        "/api/v1/catalogs/{catalog}/retention",
        "catalog.clear-retention",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/maintenance/jobs",
        "catalog.list-jobs",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/catalogs/{catalog}/maintenance/jobs/{job}",
        "catalog.get-job",
        Path(ManageCatalogs, Catalog),
    ),
    route(
        "GET",
        "/api/v1/audit",
        "audit.query",
        Path(ReadAudit, Tenant),
    ),
    route("GET", "/api/v1/audit/verify", "audit.verify", Root),
    route("GET", "/ui/audit", "ui.audit", Path(ReadAudit, Tenant)),
    route(
        "GET",
        "/ui/admin/users",
        "ui.users",
        Path(ManageUsers, Tenant),
    ),
    route(
        "POST",
        "/ui/admin/users",
        "ui.user-create",
        Path(ManageUsers, Tenant),
    ),
    route(
        "POST",
        "/ui/admin/users/{user}/disabled",
        "ui.user-disable",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/ui/admin/service-users",
        "ui.service-users",
        Path(ManageUsers, Tenant),
    ),
    route(
        "POST",
        "/ui/admin/service-users",
        "ui.service-user-create",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/ui/admin/service-users/{name}/keys",
        "ui.keys",
        Path(ManageUsers, Tenant),
    ),
    route(
        "POST",
        "/ui/admin/service-users/{name}/keys",
        "ui.key-create",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/ui/admin/roles",
        "ui.roles",
        PathOrBelow(ManageGrants, Tenant),
    ),
    route("POST", "/ui/admin/roles", "ui.role-create", Handler),
    route(
        "GET",
        "/ui/admin/roles/{role}",
        "ui.role-members",
        PathOrBelow(ManageGrants, Tenant),
    ),
    route(
        "POST",
        "/ui/admin/roles/{role}/members",
        "ui.role-bind",
        Handler,
    ),
    route(
        "POST",
        "/ui/admin/service-users/{name}/keys/{key}/revoke",
        "ui.key-revoke",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/ui/admin/warehouses",
        "ui.warehouses",
        Path(ManageCatalogs, Tenant),
    ),
    route("GET", "/ui/admin/tenants", "ui.tenants", Root),
    route("POST", "/ui/admin/tenants", "ui.tenant-create", Root),
    route(
        "POST",
        "/ui/admin/warehouses",
        "ui.warehouse-create",
        Path(ManageCatalogs, Tenant),
    ),
    route(
        "POST",
        "/ui/admin/catalogs",
        "ui.catalog-create",
        Path(ManageCatalogs, Tenant),
    ),
    route("GET", "/ui/audit/verify", "ui.audit-verify", Root),
    // Administration: tenants (root), and the caller's tenant's warehouses, users, service
    // users, API keys and roles. Role changes are authorized by the anti-escalation rules in
    // their handlers; reading roles needs ManageGrants somewhere in the tenant.
    route("POST", "/api/v1/tenants", "tenant.create", Root),
    route("GET", "/api/v1/tenants", "tenant.list", Root),
    route("GET", "/api/v1/tenants/{tenant}", "tenant.get", Root),
    route("PATCH", "/api/v1/tenants/{tenant}", "tenant.update", Root),
    route("DELETE", "/api/v1/tenants/{tenant}", "tenant.delete", Root),
    route(
        "POST",
        "/api/v1/warehouses",
        "warehouse.create",
        Path(ManageCatalogs, Tenant),
    ),
    route(
        "GET",
        "/api/v1/warehouses",
        "warehouse.list",
        Path(ManageCatalogs, Tenant),
    ),
    route(
        "GET",
        "/api/v1/warehouses/{warehouse}",
        "warehouse.get",
        Path(ManageCatalogs, Tenant),
    ),
    route(
        "PUT",
        "/api/v1/warehouses/{warehouse}",
        "warehouse.replace",
        Path(ManageCatalogs, Tenant),
    ),
    route(
        "DELETE",
        "/api/v1/warehouses/{warehouse}",
        "warehouse.delete",
        Path(ManageCatalogs, Tenant),
    ),
    route(
        "POST",
        "/api/v1/users",
        "user.create",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/api/v1/users",
        "user.list",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/api/v1/users/{user}",
        "user.get",
        Path(ManageUsers, Tenant),
    ),
    route(
        "DELETE",
        "/api/v1/users/{user}",
        "user.delete",
        Path(ManageUsers, Tenant),
    ),
    route(
        "PUT",
        "/api/v1/users/{user}/password",
        "user.reset-password",
        Path(ManageUsers, Tenant),
    ),
    route(
        "PUT",
        "/api/v1/users/{user}/disabled",
        "user.set-disabled",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/api/v1/external-principals",
        "external-principal.list",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/api/v1/external-principals/{principal}",
        "external-principal.get",
        Path(ManageUsers, Tenant),
    ),
    route(
        "PUT",
        "/api/v1/external-principals/{principal}/disabled",
        "external-principal.set-disabled",
        Path(ManageUsers, Tenant),
    ),
    route(
        "POST",
        "/api/v1/me/password",
        "user.change-password",
        SignedIn,
    ),
    route(
        "POST",
        "/api/v1/service-users",
        "service-user.create",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/api/v1/service-users",
        "service-user.list",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/api/v1/service-users/{name}",
        "service-user.get",
        Path(ManageUsers, Tenant),
    ),
    route(
        "DELETE",
        "/api/v1/service-users/{name}",
        "service-user.delete",
        Path(ManageUsers, Tenant),
    ),
    route(
        "POST",
        "/api/v1/service-users/{name}/keys",
        "api-key.create",
        Path(ManageUsers, Tenant),
    ),
    route(
        "GET",
        "/api/v1/service-users/{name}/keys",
        "api-key.list",
        Path(ManageUsers, Tenant),
    ),
    route(
        "DELETE",
        "/api/v1/service-users/{name}/keys/{key}",
        "api-key.revoke",
        Path(ManageUsers, Tenant),
    ),
    route(
        "POST",
        "/api/v1/service-users/{name}/keys/{key}/rotate",
        "api-key.rotate",
        Path(ManageUsers, Tenant),
    ),
    route("POST", "/api/v1/roles", "role.create", Handler),
    route(
        "GET",
        "/api/v1/roles",
        "role.list",
        PathOrBelow(ManageGrants, Tenant),
    ),
    route(
        "GET",
        "/api/v1/roles/{role}",
        "role.get",
        PathOrBelow(ManageGrants, Tenant),
    ),
    route("PUT", "/api/v1/roles/{role}", "role.update", Handler),
    route("DELETE", "/api/v1/roles/{role}", "role.delete", Handler),
    route(
        "GET",
        "/api/v1/roles/{role}/members",
        "role.members",
        PathOrBelow(ManageGrants, Tenant),
    ),
    route(
        "PUT",
        "/api/v1/roles/{role}/members/{principal}",
        "role.bind",
        Handler,
    ),
    route(
        "DELETE",
        "/api/v1/roles/{role}/members/{principal}",
        "role.unbind",
        Handler,
    ),
    route("POST", "/api/v1/tokens/revoke", "token.revoke", Root),
];

/// The route `method` + `path` (as routed, with `{params}`), if the server serves it.
pub fn lookup(method: &Method, path: &str) -> Option<&'static Route> {
    // Every request looks its route up: index the table once rather than scan it each time.
    static INDEX: OnceLock<HashMap<(&'static str, &'static str), &'static Route>> = OnceLock::new();
    INDEX
        .get_or_init(|| ROUTES.iter().map(|r| ((r.method, r.path), r)).collect())
        .get(&(method.as_str(), path))
        .copied()
}
