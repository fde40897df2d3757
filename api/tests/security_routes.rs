//! Which route needs what: every route the server serves declares the permission it needs,
//! a route missing from that table is served to no one, signed-out callers are refused, and
//! the authorization matrix holds every route that is not public (the web UI's beside the
//! API's) with the roles allowed to call it, and checks that no answer shows one tenant
//! anything of another's.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use common::secured::PASSWORD;
use common::security::{as_, secure, token};
use common::send;
use pangolin_api::security::routes::{Need, ROUTES};
use pangolin_identity::{Password, PrincipalName, Scope};
use serde_json::{Value, json};

/// A request path for a routed path pattern, with every parameter filled in.
fn sample(path: &str) -> String {
    path.replace("{prefix}", "lake")
        .replace("{catalog}", "lake")
        .replace("{namespace}", "db")
        .replace("{table}", "t")
        .replace("{view}", "v")
        .replace("{name}", "main")
        .replace("{reference}", "main")
}

#[tokio::test]
async fn every_served_route_declares_what_it_needs() {
    let declared: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    // Every Iceberg endpoint the server advertises and every documented management route.
    let document: Value = serde_json::from_str(include_str!("../../docs/openapi.json")).unwrap();
    let mut served: BTreeSet<(String, String)> = pangolin_api::config::ENDPOINTS
        .iter()
        .map(|e| {
            let (method, path) = e.split_once(' ').unwrap();
            (method.to_owned(), path.to_owned())
        })
        .collect();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            served.insert((method.to_uppercase(), path.clone()));
        }
    }
    let missing: Vec<_> = served.difference(&declared).collect();
    assert!(
        missing.is_empty(),
        "routes without a declared need: {missing:?}"
    );
    // And every declared route is really routed: nothing answers "no route" or 405.
    let env = secure().await;
    for route in ROUTES.iter() {
        let method = Method::from_bytes(route.method.as_bytes()).unwrap();
        let (status, _, body) = send(&env.app, method, &sample(route.path), None, &[]).await;
        assert_ne!(
            status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{} {}",
            route.method,
            route.path
        );
        assert!(
            !(status == StatusCode::NOT_FOUND && body["error"]["type"] == "NotFoundException"),
            "{} {} is declared but not routed",
            route.method,
            route.path
        );
        // Signed out, only public routes do anything; the UI's pages send the browser to the
        // sign-in page instead.
        if route.need != Need::Public && route.path.starts_with("/ui") {
            assert_eq!(
                status,
                StatusCode::SEE_OTHER,
                "{} {}: {body}",
                route.method,
                route.path
            );
        } else if route.need != Need::Public {
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{} {}: {body}",
                route.method,
                route.path
            );
            if route.method != "HEAD" {
                assert_eq!(body["error"]["type"], "NotAuthorizedException");
            }
        }
    }
}

#[tokio::test]
async fn a_route_nobody_declared_is_refused_to_everyone() {
    // The layer guards by route; a route missing from the table is not served even to root.
    let route = pangolin_api::security::routes::lookup(&Method::PATCH, "/v1/{prefix}/namespaces");
    assert!(route.is_none());
}

/// Roles of the authorization matrix: root, acme's admin, a reader of `lake`, a writer of
/// `dev*` branches, and a signed-in user with no role.
const ROLES: [&str; 5] = ["root", "admin", "reader", "writer", "nobody"];

/// One row of the matrix: a request and the roles allowed to make it.
struct Case {
    method: &'static str,
    /// The route as declared (checked against `ROUTES`).
    route: &'static str,
    uri: &'static str,
    body: Option<Value>,
    allowed: &'static [&'static str],
}

fn case(
    method: &'static str,
    route: &'static str,
    uri: &'static str,
    body: Option<Value>,
    allowed: &'static [&'static str],
) -> Case {
    Case {
        method,
        route,
        uri,
        body,
        allowed,
    }
}

fn view_body(name: &str) -> Value {
    json!({"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": false}]},
        "view-version": {"version-id": 1, "schema-id": 0, "timestamp-ms": 1_767_225_000_000_i64,
            "summary": {"engine-name": "test"}, "default-namespace": ["db"],
            "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}})
}

// One line a case, so that the table reads as one.
#[rustfmt::skip]
fn matrix(table_location: &str, view_location: &str) -> Vec<Case> {
    const ALL: &[&str] = &["root", "admin", "reader", "writer", "nobody"];
    const READERS: &[&str] = &["root", "admin", "reader", "writer"];
    const ADMINS: &[&str] = &["root", "admin"];
    const DEV: &[&str] = &["root", "admin", "writer"];
    const ROOT: &[&str] = &["root"];
    let props = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let ns = "/v1/{prefix}/namespaces/{namespace}";
    let table = "/v1/{prefix}/namespaces/{namespace}/tables/{table}";
    let view = "/v1/{prefix}/namespaces/{namespace}/views/{view}";
    let leak: &'static str = Box::leak(format!("{table}/metrics").into_boxed_str());
    let creds: &'static str = Box::leak(format!("{table}/credentials").into_boxed_str());
    let sign: &'static str = Box::leak(format!("{table}/sign").into_boxed_str());
    let props_route: &'static str = Box::leak(format!("{ns}/properties").into_boxed_str());
    let tables: &'static str = Box::leak(format!("{ns}/tables").into_boxed_str());
    let views: &'static str = Box::leak(format!("{ns}/views").into_boxed_str());
    let register: &'static str = Box::leak(format!("{ns}/register").into_boxed_str());
    let register_view: &'static str = Box::leak(format!("{ns}/register-view").into_boxed_str());
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    let transaction = json!({"table-changes": [{"identifier": {"namespace": ["db"], "name": "t"},
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"tx": "1"}}]}]});
    vec![
        case("GET", "/v1/config", "/v1/config", None, ALL),
        case("GET", "/v1/{prefix}/namespaces", "/v1/lake/namespaces", None, READERS),
        case("POST", "/v1/{prefix}/namespaces", "/v1/lake/namespaces", Some(json!({"namespace": ["made"]})), ADMINS),
        case("POST", "/v1/{prefix}/namespaces", "/v1/lake%40dev/namespaces", Some(json!({"namespace": ["made_dev"]})), DEV),
        case("GET", ns, "/v1/lake/namespaces/db", None, READERS),
        case("HEAD", ns, "/v1/lake/namespaces/db", None, READERS),
        case("DELETE", ns, "/v1/lake/namespaces/empty", None, ADMINS),
        case("POST", props_route, "/v1/lake/namespaces/db/properties", Some(json!({"updates": {"a": "b"}})), ADMINS),
        case("GET", tables, "/v1/lake/namespaces/db/tables", None, READERS),
        case("POST", tables, "/v1/lake/namespaces/db/tables", Some(json!({"name": "made", "schema": schema})), ADMINS),
        case("GET", table, "/v1/lake/namespaces/db/tables/t", None, READERS),
        case("HEAD", table, "/v1/lake/namespaces/db/tables/t", None, READERS),
        case("POST", table, "/v1/lake/namespaces/db/tables/t", Some(props.clone()), ADMINS),
        case("POST", table, "/v1/lake/namespaces/db/tables/t%40dev", Some(props.clone()), DEV),
        case("DELETE", table, "/v1/lake/namespaces/db/tables/doomed", None, ADMINS),
        case("POST", leak, "/v1/lake/namespaces/db/tables/t/metrics", Some(json!({"report-type": "scan-report"})), READERS),
        case("GET", creds, "/v1/lake/namespaces/db/tables/t/credentials", None, READERS),
        // Allowed means the handler's own answer: `lake` signs nothing (501).
        case("POST", sign, "/v1/lake/namespaces/db/tables/t/sign", Some(json!({"region": "us-east-1", "method": "GET", "uri": "http://x/y", "headers": {}})), READERS),
        case("POST", register, "/v1/lake/namespaces/db/register", Some(json!({"name": "again", "metadata-location": table_location})), ADMINS),
        case("GET", views, "/v1/lake/namespaces/db/views", None, READERS),
        case("POST", views, "/v1/lake/namespaces/db/views", Some(view_body("made_view")), ADMINS),
        case("GET", view, "/v1/lake/namespaces/db/views/v", None, READERS),
        case("HEAD", view, "/v1/lake/namespaces/db/views/v", None, READERS),
        case("POST", view, "/v1/lake/namespaces/db/views/v", Some(json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})), ADMINS),
        case("DELETE", view, "/v1/lake/namespaces/db/views/doomed_view", None, ADMINS),
        case("POST", register_view, "/v1/lake/namespaces/db/register-view", Some(json!({"name": "again_view", "metadata-location": view_location})), ADMINS),
        case("POST", "/v1/{prefix}/tables/rename", "/v1/lake/tables/rename", Some(json!({"source": {"namespace": ["db"], "name": "movable"}, "destination": {"namespace": ["db"], "name": "moved"}})), ADMINS),
        case("POST", "/v1/{prefix}/views/rename", "/v1/lake/views/rename", Some(json!({"source": {"namespace": ["db"], "name": "movable_view"}, "destination": {"namespace": ["db"], "name": "moved_view"}})), ADMINS),
        case("POST", "/v1/{prefix}/transactions/commit", "/v1/lake/transactions/commit", Some(transaction.clone()), ADMINS),
        case("POST", "/v1/{prefix}/transactions/commit", "/v1/lake%40dev/transactions/commit", Some(transaction), DEV),
        case("GET", "/api/v1/whoami", "/api/v1/whoami", None, ALL),
        case("GET", "/api/v1/catalogs", "/api/v1/catalogs", None, ALL),
        case("GET", "/api/v1/catalogs/{catalog}/refs", "/api/v1/catalogs/lake/refs", None, READERS),
        case("POST", "/api/v1/catalogs/{catalog}/refs", "/api/v1/catalogs/lake/refs", Some(json!({"name": "made", "from": "main"})), ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/refs/{name}", "/api/v1/catalogs/lake/refs/main", None, READERS),
        case("PUT", "/api/v1/catalogs/{catalog}/refs/{name}", "/api/v1/catalogs/lake/refs/scratch", Some(json!({"to": "main"})), ADMINS),
        case("DELETE", "/api/v1/catalogs/{catalog}/refs/{name}", "/api/v1/catalogs/lake/refs/scratch2", None, ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/refs/{name}/log", "/api/v1/catalogs/lake/refs/main/log", None, READERS),
        case("GET", "/api/v1/catalogs/{catalog}/log", "/api/v1/catalogs/lake/log", None, READERS),
        case("GET", "/api/v1/catalogs/{catalog}/commits/{reference}", "/api/v1/catalogs/lake/commits/main", None, READERS),
        case("GET", "/api/v1/catalogs/{catalog}/diff", "/api/v1/catalogs/lake/diff?from=main&to=dev", None, READERS),
        case("GET", "/api/v1/catalogs/{catalog}/entries", "/api/v1/catalogs/lake/entries", None, READERS),
        case("GET", "/api/v1/catalogs/{catalog}/events", "/api/v1/catalogs/lake/events", None, READERS),
        // (A stream with `wait` is refused as bad input once authorized: the matrix reads
        // whole answers, and a stream would not end.)
        case("GET", "/api/v1/catalogs/{catalog}/events/stream", "/api/v1/catalogs/lake/events/stream?wait=1s", None, READERS),
        case("POST", "/api/v1/catalogs/{catalog}/merge", "/api/v1/catalogs/lake/merge", Some(json!({"source": "dev", "target": "main", "dry-run": true})), ADMINS),
        case("POST", "/api/v1/catalogs/{catalog}/cherry-pick", "/api/v1/catalogs/lake/cherry-pick", Some(json!({"commits": ["dev"], "onto": "main", "dry-run": true})), ADMINS),
        case("POST", "/api/v1/catalogs/{catalog}/revert", "/api/v1/catalogs/lake/revert", Some(json!({"commit": "main", "on": "main", "dry-run": true})), ADMINS),
        case("POST", "/api/v1/catalogs/{catalog}/export", "/api/v1/catalogs/lake/export", Some(json!({})), ADMINS),
        case("POST", "/api/v1/catalogs/{catalog}/maintenance/expire-snapshots", "/api/v1/catalogs/lake/maintenance/expire-snapshots", Some(json!({"branch": "scratch3", "dry-run": true})), ADMINS),
        case("POST", "/api/v1/catalogs/{catalog}/maintenance/remove-orphan-files", "/api/v1/catalogs/lake/maintenance/remove-orphan-files", Some(json!({"dry-run": true})), ADMINS),
        case("POST", "/api/v1/catalogs/{catalog}/maintenance/collect-objects", "/api/v1/catalogs/lake/maintenance/collect-objects", Some(json!({"dry-run": true})), ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/retention", "/api/v1/catalogs/lake/retention", None, ADMINS),
        // Allowed, it is refused as too short (400), after authorization.
        case("PUT", "/api/v1/catalogs/{catalog}/retention", "/api/v1/catalogs/lake/retention", Some(json!({"history-ms": 1})), ADMINS),
        case("DELETE", "/api/v1/catalogs/{catalog}/retention", "/api/v1/catalogs/lake/retention", None, ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/webhooks", "/api/v1/catalogs/lake/webhooks", None, ADMINS),
        // Allowed, it is refused as a bad URL (400), after authorization.
        case("POST", "/api/v1/catalogs/{catalog}/webhooks", "/api/v1/catalogs/lake/webhooks", Some(json!({"url": "ftp://x/"})), ADMINS),
        // Allowed, these are answered as no such webhook (404), after authorization.
        case("GET", "/api/v1/catalogs/{catalog}/webhooks/{webhook}", "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef", None, ADMINS),
        case("PATCH", "/api/v1/catalogs/{catalog}/webhooks/{webhook}", "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef", Some(json!({"enabled": false})), ADMINS),
        case("DELETE", "/api/v1/catalogs/{catalog}/webhooks/{webhook}", "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef", None, ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/webhooks/{webhook}/attempts", "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef/attempts", None, ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters", "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef/dead-letters", None, ADMINS),
        case("DELETE", "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}", "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef/dead-letters/3.0", None, ADMINS),
        case("POST", "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}/redeliver", "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef/dead-letters/3.0/redeliver", None, ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/protection", "/api/v1/catalogs/lake/protection", None, READERS),
        // Allowed, it is refused as a bad pattern (400), after authorization.
        case("PUT", "/api/v1/catalogs/{catalog}/protection", "/api/v1/catalogs/lake/protection", Some(json!({"rules": [{"branch": "ma*n"}]})), ADMINS),
        case("DELETE", "/api/v1/catalogs/{catalog}/protection", "/api/v1/catalogs/lake/protection", None, ADMINS),
        // Needs read on both branches.
        case("POST", "/api/v1/catalogs/{catalog}/merge-requests", "/api/v1/catalogs/lake/merge-requests", Some(json!({"source": "dev", "target": "main", "title": "t"})), READERS),
        case("GET", "/api/v1/catalogs/{catalog}/merge-requests", "/api/v1/catalogs/lake/merge-requests", None, READERS),
        // Allowed, these are answered as no such request (404), after authorization.
        case("GET", "/api/v1/catalogs/{catalog}/merge-requests/{number}", "/api/v1/catalogs/lake/merge-requests/999", None, READERS),
        case("POST", "/api/v1/catalogs/{catalog}/merge-requests/{number}/checks", "/api/v1/catalogs/lake/merge-requests/999/checks", None, READERS),
        case("POST", "/api/v1/catalogs/{catalog}/merge-requests/{number}/merge", "/api/v1/catalogs/lake/merge-requests/999/merge", None, READERS),
        case("POST", "/api/v1/catalogs/{catalog}/merge-requests/{number}/close", "/api/v1/catalogs/lake/merge-requests/999/close", None, READERS),
        case("GET", "/api/v1/catalogs/{catalog}/maintenance/jobs", "/api/v1/catalogs/lake/maintenance/jobs", None, ADMINS),
        // Allowed, it is answered as no such job (404), after authorization.
        case("GET", "/api/v1/catalogs/{catalog}/maintenance/jobs/{job}", "/api/v1/catalogs/lake/maintenance/jobs/1700000000000-abcdef12", None, ADMINS),
        // Allowed, it is refused as no bundle (400), after authorization.
        case("POST", "/api/v1/catalogs/{catalog}/import", "/api/v1/catalogs/lake/import", Some(json!({})), ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/remotes", "/api/v1/catalogs/lake/remotes", None, READERS),
        // The first admin of each role's turn adds it, the next is told it exists (409).
        case("POST", "/api/v1/catalogs/{catalog}/remotes", "/api/v1/catalogs/lake/remotes", Some(json!({"name": "origin", "url": "http://origin.example:8080"})), ADMINS),
        case("GET", "/api/v1/catalogs/{catalog}/remotes/{remote}", "/api/v1/catalogs/lake/remotes/origin", None, READERS),
        // Allowed, it is refused as no pack (400), after authorization.
        case("POST", "/api/v1/catalogs/{catalog}/remotes/{remote}/fetched", "/api/v1/catalogs/lake/remotes/origin/fetched", Some(json!({})), ADMINS),
        case("DELETE", "/api/v1/catalogs/{catalog}/remotes/{remote}", "/api/v1/catalogs/lake/remotes/origin", None, ADMINS),
        // Read on every ref sent.
        case("POST", "/api/v1/catalogs/{catalog}/pack", "/api/v1/catalogs/lake/pack", Some(json!({"want": ["main"]})), READERS),
        // Refused before the ref is looked up: no one learns which refs exist without read.
        case("POST", "/api/v1/catalogs/{catalog}/pack", "/api/v1/catalogs/lake/pack", Some(json!({"want": ["no-such-branch"]})), READERS),
        // Write on the branch moved (a `dev*` writer's); allowed, it is refused as no pack
        // (400), after authorization.
        case("POST", "/api/v1/catalogs/{catalog}/push", "/api/v1/catalogs/lake/push?branch=dev&expected-head=0000000000000000000000000000000000000000000000000000000000000000", Some(json!({})), &["root", "admin", "writer"]),
        case("GET", "/api/v1/audit", "/api/v1/audit", None, ADMINS),
        case("GET", "/api/v1/audit/verify", "/api/v1/audit/verify", None, ROOT),
        case("POST", "/api/v1/logout", "/api/v1/logout", None, ALL),
        // The web UI: each page as its API route.
        case("GET", "/ui", "/ui", None, ALL),
        case("GET", "/ui/audit", "/ui/audit", None, ADMINS),
        case("GET", "/ui/admin/users", "/ui/admin/users", None, ADMINS),
        case("POST", "/ui/admin/users", "/ui/admin/users", Some(json!({"username": "made_in_ui", "password": "a-long-enough-password"})), ADMINS),
        case("POST", "/ui/admin/users/{user}/disabled", "/ui/admin/users/made_in_ui/disabled", Some(json!({"disabled": "false"})), ADMINS),
        case("GET", "/ui/admin/service-users", "/ui/admin/service-users", None, ADMINS),
        case("POST", "/ui/admin/service-users", "/ui/admin/service-users", Some(json!({"name": "svc_in_ui"})), ADMINS),
        case("GET", "/ui/admin/service-users/{name}/keys", "/ui/admin/service-users/svc_in_ui/keys", None, ADMINS),
        case("POST", "/ui/admin/service-users/{name}/keys", "/ui/admin/service-users/svc_in_ui/keys", Some(json!({})), ADMINS),
        case("GET", "/ui/admin/roles", "/ui/admin/roles", None, ADMINS),
        case("POST", "/ui/admin/roles", "/ui/admin/roles", Some(json!({"name": "made_in_ui", "grants": "[]"})), ADMINS),
        case("GET", "/ui/admin/roles/{role}", "/ui/admin/roles/readers", None, ADMINS),
        case("POST", "/ui/admin/roles/{role}/members", "/ui/admin/roles/readers/members", Some(json!({"principal": "user:acme/reader", "bind": "true"})), ADMINS),
        case("POST", "/ui/admin/service-users/{name}/keys/{key}/revoke", "/ui/admin/service-users/svc_in_ui/keys/0000000000000000/revoke", Some(json!({})), ADMINS),
        case("GET", "/ui/admin/tenants", "/ui/admin/tenants", None, ROOT),
        case("POST", "/ui/admin/tenants", "/ui/admin/tenants", Some(json!({"name": "made_in_ui"})), ROOT),
        case("POST", "/ui/admin/warehouses", "/ui/admin/warehouses", Some(json!({"name": "wh_ui", "storage": "x"})), ADMINS),
        case("POST", "/ui/admin/catalogs", "/ui/admin/catalogs", Some(json!({"name": "cat_ui", "warehouse": "files"})), ADMINS),
        case("GET", "/ui/admin/warehouses", "/ui/admin/warehouses", None, ADMINS),
        case("GET", "/ui/audit/verify", "/ui/audit/verify", None, ROOT),
        case("POST", "/ui/logout", "/ui/logout", Some(json!({"csrf": ""})), ALL),
        case("GET", "/ui/catalogs/{catalog}/merge-requests", "/ui/catalogs/lake/merge-requests", None, READERS),
        case("GET", "/ui/catalogs/{catalog}/remotes", "/ui/catalogs/lake/remotes", None, READERS),
        case("POST", "/ui/catalogs/{catalog}/merge-requests", "/ui/catalogs/lake/merge-requests", Some(json!({"source": "dev", "target": "main", "title": "t"})), READERS),
        // Allowed, these are answered as no such request (404), after authorization.
        case("GET", "/ui/catalogs/{catalog}/merge-requests/{number}", "/ui/catalogs/lake/merge-requests/999", None, READERS),
        case("POST", "/ui/catalogs/{catalog}/merge-requests/{number}/checks", "/ui/catalogs/lake/merge-requests/999/checks", Some(json!({"csrf": ""})), READERS),
        case("POST", "/ui/catalogs/{catalog}/merge-requests/{number}/merge", "/ui/catalogs/lake/merge-requests/999/merge", Some(json!({"csrf": ""})), READERS),
        case("POST", "/ui/catalogs/{catalog}/merge-requests/{number}/close", "/ui/catalogs/lake/merge-requests/999/close", Some(json!({"csrf": ""})), READERS),
        case("POST", "/ui/catalogs/{catalog}/refs", "/ui/catalogs/lake/refs", Some(json!({"name": "from_ui", "from": "main"})), ADMINS),
        case("POST", "/ui/catalogs/{catalog}/refs/{name}/delete", "/ui/catalogs/lake/refs/scratch3/delete", Some(json!({})), ADMINS),
        case("GET", "/ui/catalogs/{catalog}", "/ui/catalogs/lake", None, READERS),
        case("GET", "/ui/catalogs/{catalog}/log", "/ui/catalogs/lake/log", None, READERS),
        case("GET", "/ui/catalogs/{catalog}/commits/{reference}", "/ui/catalogs/lake/commits/main", None, READERS),
        case("GET", "/ui/catalogs/{catalog}/entries", "/ui/catalogs/lake/entries", None, READERS),
        case("GET", "/ui/catalogs/{catalog}/compare", "/ui/catalogs/lake/compare?source=dev&target=main", None, READERS),
        case("POST", "/ui/catalogs/{catalog}/pick", "/ui/catalogs/lake/pick", Some(json!({"action": "revert", "commit": "main", "branch": "main"})), ADMINS),
        case("POST", "/ui/catalogs/{catalog}/merge", "/ui/catalogs/lake/merge", Some(json!({"source": "scratch", "target": "main"})), ADMINS),
        case("GET", "/ui/catalogs/{catalog}/table", "/ui/catalogs/lake/table?ref=main&key=db%1Ft", None, READERS),
    ]
}

#[tokio::test]
async fn every_role_against_every_route() {
    let env = secure().await;
    let identity = &env.identity;
    identity
        .create_user(
            &Scope::tenant("acme").unwrap(),
            &PrincipalName::new("nobody").unwrap(),
            &Password::new(PASSWORD),
            false,
        )
        .await
        .unwrap();
    let admin = token(&env, Some("acme"), "admin").await;
    // What the requests act on.
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    for namespace in ["db", "empty"] {
        let (status, _) = as_(
            &env,
            &admin,
            Method::POST,
            "/v1/lake/namespaces",
            Some(json!({"namespace": [namespace]})),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }
    let mut table_location = String::new();
    // What only acme has: its tables' and views' files and its commits.
    let mut markers: Vec<String> = Vec::new();
    for name in ["t", "doomed", "movable"] {
        let (status, body) = as_(
            &env,
            &admin,
            Method::POST,
            "/v1/lake/namespaces/db/tables",
            Some(json!({"name": name, "schema": schema})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        table_location = body["metadata-location"].as_str().unwrap().to_owned();
        markers.push(table_location.clone());
        markers.push(body["metadata"]["table-uuid"].as_str().unwrap().to_owned());
    }
    let mut view_location = String::new();
    for name in ["v", "doomed_view", "movable_view"] {
        let (status, body) = as_(
            &env,
            &admin,
            Method::POST,
            "/v1/lake/namespaces/db/views",
            Some(view_body(name)),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        view_location = body["metadata-location"].as_str().unwrap().to_owned();
        markers.push(view_location.clone());
    }
    for branch in ["dev", "scratch", "scratch2", "scratch3"] {
        let (status, _) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/catalogs/lake/refs",
            Some(json!({"name": branch, "from": "main"})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let cases = matrix(&table_location, &view_location);
    // Every route that is not public is in this matrix or in the administration API's
    // (`api/tests/admin_access.rs`, which checks its own routes the same way).
    let covered: BTreeSet<(&str, &str)> = cases.iter().map(|c| (c.method, c.route)).collect();
    let administration = |path: &str| {
        [
            "tenants",
            "warehouses",
            "users",
            "external-principals",
            "service-users",
            "roles",
            "me/",
            "tokens/",
        ]
        .iter()
        .any(|p| path.starts_with(&format!("/api/v1/{p}")))
            || path == "/api/v1/catalogs"
            || path == "/api/v1/catalogs/{catalog}"
    };
    for route in ROUTES
        .iter()
        .filter(|r| r.need != Need::Public && !administration(r.path))
    {
        assert!(
            covered.contains(&(route.method, route.path)),
            "{} {} is missing from the authorization matrix",
            route.method,
            route.path
        );
    }
    let (_, log) = as_(&env, &admin, Method::GET, "/api/v1/catalogs/lake/log", None).await;
    // (The catalogs' first commits are alike in every tenant, content addressing gives them one
    // hash: only the commits acme made are acme's.)
    for commit in log["commits"].as_array().unwrap() {
        if commit["author"] == "user:acme/admin" {
            markers.push(commit["hash"].as_str().unwrap().to_owned());
        }
    }
    // Tenant isolation on every route: globex's admin makes every request of the matrix (in its
    // own tenant, where `lake` exists too) and no answer carries anything of acme's.
    let globex = token(&env, Some("globex"), "admin").await;
    for case in &cases {
        let method = Method::from_bytes(case.method.as_bytes()).unwrap();
        let (_, body) = as_(&env, &globex, method, case.uri, case.body.clone()).await;
        let text = body.to_string();
        for marker in &markers {
            assert!(
                !text.contains(marker.as_str()),
                "{} {} shows globex something of acme's ({marker}): {text}",
                case.method,
                case.uri
            );
        }
    }
    let mut failures = Vec::new();
    for role in ROLES {
        for case in &cases {
            // A fresh token per request: `logout` revokes the one it is sent with.
            let token = match role {
                "root" => token(&env, None, "root").await,
                other => token(&env, Some("acme"), other).await,
            };
            let method = Method::from_bytes(case.method.as_bytes()).unwrap();
            let (status, body) = as_(&env, &token, method, case.uri, case.body.clone()).await;
            let allowed = case.allowed.contains(&role);
            let refused = matches!(status, StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED);
            if allowed == refused {
                failures.push(format!(
                    "{role} {} {}: expected {}, got {status} {body}",
                    case.method,
                    case.uri,
                    if allowed { "allowed" } else { "403" }
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
