//! The audit log: changes, sign-ins and refusals are recorded, a tenant admin reads only its
//! tenant's events, root reads every tenant's in pages, and the chain of events verifies.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use common::security::{as_, login, secure, token};
use serde_json::json;

#[tokio::test]
async fn changes_sign_ins_and_refusals_are_audited_and_the_chain_verifies() {
    let env = secure().await;
    let _ = login(&env, Some("acme"), "reader", "wrong-password-123").await;
    let reader = token(&env, Some("acme"), "reader").await;
    let admin = token(&env, Some("acme"), "admin").await;
    let globex = token(&env, Some("globex"), "admin").await;
    let (status, _) = as_(
        &env,
        &reader,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["nope"]})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_(
        &env,
        &globex,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["g"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (status, page) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let events = page["events"].as_array().unwrap();
    assert!(
        events.iter().all(|e| e["tenant"] == "acme"),
        "a tenant admin sees only its tenant"
    );
    let has = |action: &str, outcome: &str, principal: &str| {
        events.iter().any(|e| {
            e["action"] == action && e["outcome"] == outcome && e["principal"] == principal
        })
    };
    assert!(has("auth.login", "denied", "acme/reader"));
    assert!(has("auth.login", "success", "acme/reader"));
    assert!(has("Create", "denied", "user:acme/reader"), "{events:?}");
    assert!(has("namespace.create", "success", "user:acme/admin"));
    // The reader may not read the audit log; root reads every tenant's and verifies the chain.
    let (status, _) = as_(&env, &reader, Method::GET, "/api/v1/audit", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(&env, &admin, Method::GET, "/api/v1/audit/verify", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let root = token(&env, None, "root").await;
    let (_, all) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
    )
    .await;
    let tenants: BTreeSet<&str> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["tenant"].as_str())
        .collect();
    assert!(
        tenants.contains("acme") && tenants.contains("globex"),
        "{tenants:?}"
    );
    let (status, report) = as_(&env, &root, Method::GET, "/api/v1/audit/verify", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(report["intact"], true, "{report}");
    assert!(report["checked"].as_u64().unwrap() >= 6);
    // Paging: one event per page, in order, to the end.
    let (_, first) = as_(&env, &root, Method::GET, "/api/v1/audit?page-size=1", None).await;
    let next = first["next-page-token"].as_str().unwrap();
    let (_, second) = as_(
        &env,
        &root,
        Method::GET,
        &format!("/api/v1/audit?page-size=1&page-token={next}"),
        None,
    )
    .await;
    assert!(second["events"][0]["sequence"].as_u64() > first["events"][0]["sequence"].as_u64());
    let _ = &env.store;
}
