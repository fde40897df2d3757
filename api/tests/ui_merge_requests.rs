//! Merge requests from the web UI: opened from the list's form, checked and merged from the
//! request's page, failed checks shown with every message and an override form, and the
//! refusal of a merge past them without a reason.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode, header};
use common::ui::{fetch, page, post_json};
use common::{TestApp, call, create_namespace};
use serde_json::json;

const LIST: &str = "/ui/catalogs/lake/merge-requests";

async fn post(app: &axum::Router, uri: &str, form: &str) -> (StatusCode, String, String) {
    let (status, headers, text) = fetch(app, Method::POST, uri, Some(form), None).await;
    let location = headers
        .get(header::LOCATION)
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, location, text)
}

#[tokio::test]
async fn a_request_is_opened_checked_and_merged_from_its_pages() {
    let env = TestApp::new().await;
    let app = &env.app;
    create_namespace(app, "lake", "legacy").await;
    for branch in ["dev", "cleanup"] {
        post_json(
            app,
            "/api/v1/catalogs/lake/refs",
            json!({"name": branch, "type": "branch", "from": "main"}),
        )
        .await;
    }
    create_namespace(app, "lake%40dev", "sales").await;
    let (status, _) = call(
        app,
        Method::DELETE,
        "/v1/lake%40cleanup/namespaces/legacy",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = call(
        app,
        Method::PUT,
        "/api/v1/catalogs/lake/protection",
        Some(json!({"rules": [{"branch": "main", "checks": [
            {"kind": "forbid", "types": ["drop-namespace"]}]}]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let refs = page(app, "/ui/catalogs/lake").await;
    assert!(
        refs.contains(r#"href="/ui/catalogs/lake/merge-requests""#),
        "{refs}"
    );
    let empty = page(app, LIST).await;
    assert!(empty.contains("No merge requests."), "{empty}");

    let (status, location, text) = post(
        app,
        LIST,
        "csrf=&source=dev&target=main&title=Add+sales&description=",
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    assert_eq!(location, format!("{LIST}/1"));
    let listed = page(app, LIST).await;
    assert!(
        listed.contains("Add sales") && listed.contains("not checked"),
        "{listed}"
    );

    let (status, location, _) = post(app, &format!("{LIST}/1/checks"), "csrf=").await;
    assert_eq!(
        (status, location.as_str()),
        (StatusCode::SEE_OTHER, "/ui/catalogs/lake/merge-requests/1")
    );
    let checked = page(app, &format!("{LIST}/1")).await;
    assert!(checked.contains("verdict-passed"), "{checked}");
    assert!(checked.contains("drop-namespace"), "{checked}");
    assert!(
        !checked.contains("Merge anyway"),
        "nothing failed: {checked}"
    );
    let (status, _, text) = post(app, &format!("{LIST}/1/merge"), "csrf=").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let merged = page(app, &format!("{LIST}/1")).await;
    assert!(merged.contains("Merged by"), "{merged}");
    assert!(
        !merged.contains("Run the checks"),
        "a merged request has no forms: {merged}"
    );

    let (status, location, _) = post(
        app,
        LIST,
        "csrf=&source=cleanup&target=main&title=Drop+legacy",
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    post(app, &format!("{location}/checks"), "csrf=").await;
    let failed = page(app, &location).await;
    assert!(failed.contains("verdict-failed"), "{failed}");
    assert!(failed.contains("drop-namespace legacy"), "{failed}");
    assert!(failed.contains("Merge anyway"), "{failed}");
    let (status, _, text) = post(app, &format!("{location}/merge"), "csrf=").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(text.contains("checks of merge request 2 failed"), "{text}");
    let (status, _, text) = post(
        app,
        &format!("{location}/merge"),
        "csrf=&override_reason=archived+elsewhere",
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let overridden = page(app, &location).await;
    assert!(
        overridden.contains("Failed checks were overridden: archived elsewhere"),
        "{overridden}"
    );
    let merged_only = page(app, &format!("{LIST}?state=merged")).await;
    assert!(merged_only.contains("Drop legacy") && merged_only.contains("Add sales"));
    let open_only = page(app, &format!("{LIST}?state=open")).await;
    assert!(open_only.contains("No merge requests open."), "{open_only}");
}
