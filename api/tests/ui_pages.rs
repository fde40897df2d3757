//! The web UI's pages through the router: they render what the management API answers, text
//! from the catalog is escaped, paging links keep the page's state, refusals are pages.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode, header};
use common::TestApp;
use common::ui::{fetch, page, post_json};
use serde_json::json;

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
    assert!(
        refs.contains("<time datetime="),
        "each head says when it was committed: {refs}"
    );
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
    assert!(
        entries.contains("/entries?ref=dev&amp;prefix=sales"),
        "namespaces open what is under them: {entries}"
    );
    let under = page(app, "/ui/catalogs/lake/entries?ref=dev&prefix=sales").await;
    assert!(under.contains("Under <code>sales</code>"), "{under}");
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
    // And a table of that name, in a namespace of its own.
    post_json(
        &env.app,
        "/v1/lake/namespaces",
        json!({"namespace": ["web"]}),
    )
    .await;
    post_json(
        &env.app,
        "/v1/lake/namespaces/web/tables",
        json!({"name": "<script>alert(2)</script>", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "<b>col</b>", "required": false, "type": "string"}]}}),
    )
    .await;
    for uri in [
        "/ui/catalogs/lake/entries",
        "/ui/catalogs/lake/log",
        "/ui/catalogs/lake/commits/main",
        "/ui/catalogs/lake/table?ref=main&key=web%1F%3Cscript%3Ealert(2)%3C%2Fscript%3E",
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
