//! The web UI through the router: pages render what the management API answers, text from the
//! catalog is escaped, paging links keep the page's state, and on a server that requires
//! sign-in the session cookie, the CSRF check on forms and the same authorization as the API.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use common::TestApp;
use common::secured::{PASSWORD, secured};
use pangolin_catalog::authz::{Grant, Privilege, Resource, Role};
use pangolin_identity::SystemClock;
use serde_json::json;
use tower::ServiceExt;

/// Sends a request with optional form body and cookie; returns status, headers and text.
async fn fetch(
    app: &axum::Router,
    method: Method,
    uri: &str,
    form: Option<&str>,
    cookie: Option<&str>,
) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::builder().method(method).uri(uri);
    if form.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    let body = form.map_or_else(Body::empty, |f| Body::from(f.to_owned()));
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn page(app: &axum::Router, uri: &str) -> String {
    let (status, headers, text) = fetch(app, Method::GET, uri, None, None).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {text}");
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{uri}"
    );
    text
}

async fn post_json(app: &axum::Router, uri: &str, body: serde_json::Value) {
    let (status, _, value) =
        common::send(app, Method::POST, uri, Some(body.to_string()), &[]).await;
    assert!(status.is_success(), "{uri}: {status} {value}");
}

#[tokio::test]
async fn pages_show_the_catalog_its_refs_log_commits_and_entries() {
    let env = TestApp::new().await;
    let app = &env.app;
    post_json(app, "/v1/lake/namespaces", json!({"namespace": ["sales"]})).await;
    post_json(
        app,
        "/v1/lake/namespaces/sales/tables",
        json!({"name": "orders", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"}]}}),
    )
    .await;
    post_json(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": "dev", "from": "main"}),
    )
    .await;

    let index = page(app, "/ui").await;
    assert!(index.contains(r#"href="/ui/catalogs/lake""#), "{index}");
    let refs = page(app, "/ui/catalogs/lake").await;
    assert!(refs.contains(">dev<") && refs.contains(">main<"), "{refs}");
    let log = page(app, "/ui/catalogs/lake/log?ref=dev").await;
    assert!(
        log.contains("sales.orders"),
        "the create is in dev's log: {log}"
    );
    let commit = page(app, "/ui/catalogs/lake/commits/main").await;
    assert!(
        commit.contains("sales.orders") && commit.contains("table created"),
        "what the head commit changed, in words: {commit}"
    );
    let entries = page(app, "/ui/catalogs/lake/entries?ref=dev").await;
    assert!(
        entries.contains("sales.orders") && entries.contains("iceberg-table"),
        "{entries}"
    );
    assert!(
        entries.contains("/table?ref=dev&amp;key=sales%1Forders"),
        "tables link to their page: {entries}"
    );
    let table = page(app, "/ui/catalogs/lake/table?ref=dev&key=sales%1Forders").await;
    for shown in [
        "<code>id</code>",
        "<code>long</code>",
        "Not partitioned.",
        "No snapshots yet.",
        "catalog.load_table(&quot;sales.orders@dev&quot;)",
        "SELECT * FROM lake.sales.`orders@dev`",
        "/log?ref=dev&amp;key=sales%1Forders",
    ] {
        assert!(
            table.contains(shown),
            "the table page shows {shown}: {table}"
        );
    }
    let (status, _, text) = fetch(
        app,
        Method::GET,
        "/ui/catalogs/lake/table?ref=main&key=sales%1Fnope",
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
    let (status, headers, css) = fetch(app, Method::GET, "/ui/style.css", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    assert!(css.contains("focus-visible"), "focus stays visible");
}

#[tokio::test]
async fn names_from_the_catalog_are_shown_as_text() {
    let env = TestApp::new().await;
    post_json(
        &env.app,
        "/v1/lake/namespaces",
        json!({"namespace": ["<script>alert(1)</script>"]}),
    )
    .await;
    for uri in [
        "/ui/catalogs/lake/entries",
        "/ui/catalogs/lake/log",
        "/ui/catalogs/lake/commits/main",
    ] {
        let text = page(&env.app, uri).await;
        assert!(!text.contains("<script>"), "{uri} runs a name: {text}");
        assert!(
            text.contains("&lt;script&gt;"),
            "{uri} shows the name: {text}"
        );
    }
}

#[tokio::test]
async fn paging_links_keep_the_page_state_and_refusals_are_pages() {
    let env = TestApp::new().await;
    for ns in ["a", "b", "c"] {
        post_json(&env.app, "/v1/lake/namespaces", json!({"namespace": [ns]})).await;
    }
    let first = page(&env.app, "/ui/catalogs/lake/entries?ref=main&pageSize=2").await;
    let next = first
        .split(r#"rel="next" href=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a next-page link")
        .replace("&amp;", "&");
    assert!(
        next.contains("ref=main") && next.contains("pageSize=2") && next.contains("pageToken="),
        "{next}"
    );
    let second = page(&env.app, &next).await;
    assert!(second.contains(">c<"), "{second}");
    assert!(
        !second.contains(r#"rel="next""#),
        "the last page has no next link"
    );

    let (status, _, text) = fetch(&env.app, Method::GET, "/ui/catalogs/nope", None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(text.contains("<html") && text.contains("nope"), "{text}");
    let (status, _, text) = fetch(
        &env.app,
        Method::GET,
        "/ui/catalogs/lake/log?ref=no..such",
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
}

#[tokio::test]
async fn sign_in_sets_a_session_cookie_and_forms_need_its_csrf_token() {
    let readers = Role::new(
        "acme",
        "readers",
        vec![Grant::new(
            Privilege::Read,
            Resource::Catalog {
                tenant: "acme".into(),
                catalog: "lake".into(),
            },
        )],
    );
    let env = secured(
        &[("acme", "reader", false), ("acme", "nobody", false)],
        vec![(readers, "user:acme/reader")],
        Arc::new(SystemClock),
    )
    .await;
    let app = &env.app;
    // Not signed in: the UI sends the browser to the sign-in page, and back afterwards.
    let (status, headers, _) = fetch(app, Method::GET, "/ui/catalogs/lake", None, None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[header::LOCATION],
        "/ui/login?next=%2Fui%2Fcatalogs%2Flake"
    );
    let form = page(app, "/ui/login?next=/ui/catalogs/lake").await;
    assert!(form.contains(r#"<label for="password">"#), "{form}");

    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/login",
        Some("tenant=acme&username=reader&password=wrong-password&next=/ui"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(text.contains(r#"role="alert""#), "{text}");

    let body =
        format!("tenant=acme&username=reader&password={PASSWORD}&next=%2Fui%2Fcatalogs%2Flake");
    let (status, headers, _) = fetch(app, Method::POST, "/ui/login", Some(&body), None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/ui/catalogs/lake");
    let set = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/ui"),
        "{set}"
    );
    let cookie = set.split(';').next().unwrap().to_owned();

    let (status, _, refs) = fetch(app, Method::GET, "/ui/catalogs/lake", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{refs}");
    assert!(refs.contains("Signed in as user:acme/reader"), "{refs}");
    // The cookie is the UI's: the API does not take it.
    let (status, _, _) = fetch(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/refs",
        None,
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A catalog of another tenant is not the reader's: the page says what is missing.
    let (status, _, text) =
        fetch(app, Method::GET, "/ui/catalogs/secret", None, Some(&cookie)).await;
    assert!(
        matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND),
        "{text}"
    );

    // Forms need this session's CSRF token: a form from elsewhere changes nothing.
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/refs",
        Some("csrf=forged&name=sneaky&from=main"),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(text.contains("CSRF"), "{text}");
    // A reader compares but is not offered a merge, and a posted merge is refused anyway.
    let (status, _, compare) = fetch(
        app,
        Method::GET,
        "/ui/catalogs/lake/compare?source=main&target=main",
        None,
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{compare}");
    assert!(
        !compare.contains("Merge into"),
        "no merge button: {compare}"
    );
    assert!(compare.contains("You may not merge"), "{compare}");
    // With the token, a reader still may not make branches: the API's own refusal.
    let csrf = refs
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/refs",
        Some(&format!("csrf={csrf}&name=sneaky&from=main")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/merge",
        Some(&format!("csrf={csrf}&source=main&target=main")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    let (status, _, refs_now) =
        fetch(app, Method::GET, "/ui/catalogs/lake", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!refs_now.contains("sneaky"), "no branch was made");

    // Sign-out is a form: without this session's CSRF token it is refused.
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/logout",
        Some("csrf=forged"),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    let (status, headers, _) = fetch(
        app,
        Method::POST,
        "/ui/logout",
        Some(&format!("csrf={csrf}")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(
        headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    // The token behind the cookie is revoked: the old cookie signs in no more.
    let (status, _, _) = fetch(app, Method::GET, "/ui/catalogs/lake", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);

    // A user without a role signs in but may not read the catalog.
    let body = format!("tenant=acme&username=nobody&password={PASSWORD}");
    let (_, headers, _) = fetch(app, Method::POST, "/ui/login", Some(&body), None).await;
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, _, text) = fetch(
        app,
        Method::GET,
        "/ui/catalogs/lake/log",
        None,
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        text.contains("read"),
        "the page names the missing privilege: {text}"
    );
}

#[tokio::test]
async fn branches_are_created_and_deleted_from_the_refs_page() {
    let env = TestApp::new().await;
    let app = &env.app;
    let (status, headers, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/refs",
        Some("csrf=&name=feature&type=branch&from=main"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    assert_eq!(headers[header::LOCATION], "/ui/catalogs/lake");
    let refs = page(app, "/ui/catalogs/lake").await;
    assert!(refs.contains(">feature<"), "{refs}");
    assert!(
        !refs.contains(r#"action="/ui/catalogs/lake/refs/main/delete""#),
        "main cannot be deleted, so it has no button"
    );
    // A taken name is a page that says so.
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/refs",
        Some("name=feature&from=main"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(text.contains("feature"), "{text}");
    // A delete from a page that showed another head is refused: the branch moved since.
    let stale = "0".repeat(64);
    let (status, _, _) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/refs/feature/delete",
        Some(&format!("expected={}", &stale[..12])),
        None,
    )
    .await;
    assert!(status.is_client_error(), "{status}");
    let head = refs
        .split(r#"action="/ui/catalogs/lake/refs/feature/delete""#)
        .nth(1)
        .and_then(|rest| rest.split(r#"name="expected" value=""#).nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/refs/feature/delete",
        Some(&format!("expected={head}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    assert!(!page(app, "/ui/catalogs/lake").await.contains(">feature<"));
}

async fn set_property(app: &axum::Router, prefix: &str, value: &str) {
    post_json(
        app,
        &format!("/v1/{prefix}/namespaces/sales/tables/orders"),
        json!({"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"owner": value}}]}),
    )
    .await;
}

#[tokio::test]
async fn a_branch_is_compared_merged_and_its_conflicts_resolved_in_the_ui() {
    let env = TestApp::new().await;
    let app = &env.app;
    post_json(app, "/v1/lake/namespaces", json!({"namespace": ["sales"]})).await;
    post_json(
        app,
        "/v1/lake/namespaces/sales/tables",
        json!({"name": "orders", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"}]}}),
    )
    .await;
    post_json(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": "dev", "from": "main"}),
    )
    .await;
    set_property(app, "lake%40dev", "dev-team").await;

    let compare = page(app, "/ui/catalogs/lake/compare?source=dev&target=main").await;
    assert!(compare.contains("sales.orders"), "{compare}");
    assert!(compare.contains("Merge into main"), "{compare}");
    let expected = compare
        .split(r#"name="expected" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let form = format!("csrf=&source=dev&target=main&expected={expected}");
    let (status, headers, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/merge",
        Some(&form),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let landed = headers[header::LOCATION].to_str().unwrap().to_owned();
    assert!(landed.starts_with("/ui/catalogs/lake/commits/"), "{landed}");
    assert!(page(app, &landed).await.contains("sales.orders"));
    let up_to_date = page(app, "/ui/catalogs/lake/compare?source=dev&target=main").await;
    assert!(
        !up_to_date.contains("Merge into main"),
        "nothing left to merge"
    );

    // Both sides change the same table: a conflict, settled in the page.
    set_property(app, "lake", "main-team").await;
    set_property(app, "lake%40dev", "dev-team-2").await;
    let compare = page(app, "/ui/catalogs/lake/compare?source=dev&target=main").await;
    assert!(compare.contains("Conflicts"), "{compare}");
    let field = "resolve%3Asales%1Forders";
    assert!(compare.contains(r#"name="resolve:sales"#), "{compare}");
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/merge",
        Some("csrf=&source=dev&target=main"),
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "without a choice nothing lands: {text}"
    );
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/merge",
        Some(&format!("csrf=&source=dev&target=main&{field}=theirs")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let (_, loaded) = common::call(
        app,
        Method::GET,
        "/v1/lake/namespaces/sales/tables/orders",
        None,
    )
    .await;
    assert_eq!(loaded["metadata"]["properties"]["owner"], "dev-team-2");
}

#[tokio::test]
async fn the_log_filters_by_table_and_a_commit_is_reverted_or_picked_from_its_page() {
    let env = TestApp::new().await;
    let app = &env.app;
    for ns in ["sales", "hr"] {
        post_json(app, "/v1/lake/namespaces", json!({"namespace": [ns]})).await;
    }
    let schema = json!({"type": "struct", "fields": [
        {"id": 1, "name": "id", "required": true, "type": "long"}]});
    post_json(
        app,
        "/v1/lake/namespaces/sales/tables",
        json!({"name": "orders", "schema": schema}),
    )
    .await;
    post_json(
        app,
        "/v1/lake/namespaces/hr/tables",
        json!({"name": "people", "schema": schema}),
    )
    .await;
    let log = page(app, "/ui/catalogs/lake/log?ref=main&table=sales.orders").await;
    assert!(log.contains("create table sales.orders"), "{log}");
    assert!(
        !log.contains("hr.people"),
        "only the table's commits: {log}"
    );
    assert!(
        log.contains("table then"),
        "each commit links to the table then: {log}"
    );
    assert!(
        log.contains(r#"value="sales.orders""#),
        "the filter stays in the form"
    );

    // Revert the commit that made hr.people, from its page.
    let log = page(app, "/ui/catalogs/lake/log?ref=main&table=hr.people").await;
    let hash = log
        .split(r#"href="/ui/catalogs/lake/commits/"#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let commit = page(app, &format!("/ui/catalogs/lake/commits/{hash}")).await;
    assert!(commit.contains("Revert on the branch"), "{commit}");
    let (status, headers, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/pick",
        Some(&format!("csrf=&action=revert&commit={hash}&branch=main")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    assert!(
        headers[header::LOCATION]
            .to_str()
            .unwrap()
            .contains("/commits/")
    );
    let (status, _) = common::call(
        app,
        Method::GET,
        "/v1/lake/namespaces/hr/tables/people",
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the revert dropped the table"
    );
    // And pick it back from the commit's page.
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/pick",
        Some(&format!(
            "csrf=&action=cherry-pick&commit={hash}&branch=main"
        )),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let (status, _) = common::call(
        app,
        Method::GET,
        "/v1/lake/namespaces/hr/tables/people",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "picked back");
}

#[tokio::test]
async fn root_reads_the_audit_log_and_verifies_its_chain() {
    let env = secured(&[("acme", "reader", false)], vec![], Arc::new(SystemClock)).await;
    let app = &env.app;
    let body = format!("username=root&password={}", common::secured::ROOT_PASSWORD);
    let (status, headers, _) = fetch(app, Method::POST, "/ui/login", Some(&body), None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, _, log) = fetch(
        app,
        Method::GET,
        "/ui/audit?action=auth.login",
        None,
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    assert!(
        log.contains("auth.login") && log.contains("user:~/root"),
        "{log}"
    );
    assert!(
        log.contains(r#"value="auth.login""#),
        "the filter stays in the form"
    );
    let (status, _, verified) =
        fetch(app, Method::GET, "/ui/audit/verify", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{verified}");
    assert!(verified.contains("The chain is intact"), "{verified}");
    // A tenant's user without ReadAudit is refused the page.
    let body = format!("tenant=acme&username=reader&password={PASSWORD}");
    let (_, headers, _) = fetch(app, Method::POST, "/ui/login", Some(&body), None).await;
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, _, _) = fetch(app, Method::GET, "/ui/audit", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
