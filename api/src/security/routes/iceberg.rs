//! The Iceberg REST routes (`/v1/...`), and the service's own (health, readiness, metrics).

use super::Level::{Catalog, Namespace, Table};
use super::Need::{Handler, Path, PathOrBelow, Public, SignedIn};
use super::{Route, route};
use pangolin_catalog::authz::Privilege::{Create, Drop, Read, Write};

pub(super) static ICEBERG: &[Route] = &[
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
];
