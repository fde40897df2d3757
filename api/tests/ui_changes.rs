//! Changing the catalog from the web UI: branches and tags, compare and merge with conflicts,
//! the log's filters, cherry-pick and revert.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode, header};
use common::TestApp;
use common::ui::{fetch, page, post_json};
use serde_json::json;

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
async fn a_merge_commit_shows_in_the_log_as_a_branch_of_the_graph() {
    let env = TestApp::new().await;
    let app = &env.app;
    post_json(app, "/v1/lake/namespaces", json!({"namespace": ["a"]})).await;
    post_json(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": "dev", "from": "main"}),
    )
    .await;
    // Both sides move on (different entries), so the merge needs a merge commit.
    post_json(
        app,
        "/v1/lake/namespaces",
        json!({"namespace": ["on_main"]}),
    )
    .await;
    post_json(
        app,
        "/v1/lake%40dev/namespaces",
        json!({"namespace": ["on_dev"]}),
    )
    .await;
    post_json(
        app,
        "/api/v1/catalogs/lake/merge",
        json!({"source": "dev", "target": "main"}),
    )
    .await;
    let log = page(app, "/ui/catalogs/lake/log?ref=main").await;
    assert!(
        log.contains("◆") && log.contains("●"),
        "merges and commits on the line: {log}"
    );
    assert!(log.contains("merge of"), "{log}");
    let line = log
        .split(r#"href="/ui/catalogs/lake/log?ref="#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a link to the merged line")
        .to_owned();
    let merged = page(app, &format!("/ui/catalogs/lake/log?ref={line}")).await;
    assert!(merged.contains("create namespace on_dev"), "{merged}");
}

#[tokio::test]
async fn the_compare_page_merges_inside_a_table_or_says_why_it_cannot() {
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
    // Different properties on each side commute; the same one set twice does not.
    post_json(
        app,
        "/v1/lake%40dev/namespaces/sales/tables/orders",
        json!({"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"tier": "gold"}}]}),
    )
    .await;
    set_property(app, "lake", "main-team").await;

    let plain = page(app, "/ui/catalogs/lake/compare?source=dev&target=main").await;
    assert!(plain.contains("both-modified"), "{plain}");
    let auto = page(
        app,
        "/ui/catalogs/lake/compare?source=dev&target=main&tables=auto",
    )
    .await;
    assert!(auto.contains("merged inside"), "{auto}");
    assert!(auto.contains("properties set: tier"), "{auto}");
    assert!(auto.contains(r#"name="tables" value="auto""#), "{auto}");
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/merge",
        Some("csrf=&source=dev&target=main&tables=auto"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");

    set_property(app, "lake", "a").await;
    set_property(app, "lake%40dev", "b").await;
    let overlap = page(
        app,
        "/ui/catalogs/lake/compare?source=dev&target=main&tables=auto",
    )
    .await;
    assert!(overlap.contains("table-changes-overlap"), "{overlap}");
    assert!(
        overlap.contains("both sides changed property `owner`"),
        "{overlap}"
    );
}
