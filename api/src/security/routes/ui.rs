//! The web UI's routes (`/ui...`): each page and form as the API route it stands for.

use super::Level::{Catalog, Tenant};
use super::Need::{Handler, Path, PathOrBelow, Public, Root, SignedIn};
use super::{Route, route};
use pangolin_catalog::authz::Privilege::{
    ManageCatalogs, ManageGrants, ManageRefs, ManageUsers, Read, ReadAudit,
};

pub(super) static UI: &[Route] = &[
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
];
