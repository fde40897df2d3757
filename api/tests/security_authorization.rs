//! What a signed-in caller may see and do: tenants see nothing of each other (root alone may
//! choose the tenant), roles decide down to branches through every route that names one,
//! and listings show only what the caller may read.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::secured::{PASSWORD, root_principal};
use common::security::{as_, secure, token};
use common::send;
use pangolin_api::security::Security;
use pangolin_catalog::authz::{Grant, Privilege, Resource, Role};
use pangolin_identity::{Password, PrincipalName, Scope};
use serde_json::json;

#[tokio::test]
async fn tenants_see_nothing_of_each_other() {
    let env = secure().await;
    let acme = token(&env, Some("acme"), "admin").await;
    let globex = token(&env, Some("globex"), "admin").await;
    let (status, _) = as_(
        &env,
        &globex,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["hidden"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_(
        &env,
        &globex,
        Method::POST,
        "/v1/secret/namespaces",
        Some(json!({"namespace": ["plans"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // Same catalog name, another tenant's catalog: its namespace is not there.
    let (status, body) = as_(&env, &acme, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["namespaces"], json!([]));
    let (status, _) = as_(&env, &acme, Method::GET, "/v1/lake/namespaces/hidden", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A catalog only the other tenant has does not exist for this one.
    for uri in [
        "/api/v1/catalogs/secret/log",
        "/api/v1/catalogs/secret/refs",
    ] {
        let (status, body) = as_(&env, &acme, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}: {body}");
    }
    let (_, body) = as_(&env, &acme, Method::GET, "/v1/secret/namespaces", None).await;
    assert!(!body.to_string().contains("plans"), "{body}");
    // Nor can it read the other tenant's commit by hash.
    let (_, log) = as_(
        &env,
        &globex,
        Method::GET,
        "/api/v1/catalogs/secret/log",
        None,
    )
    .await;
    let hash = log["commits"][0]["hash"].as_str().unwrap().to_owned();
    let (status, body) = as_(
        &env,
        &acme,
        Method::GET,
        &format!("/api/v1/catalogs/lake/commits/main%23{hash}"),
        None,
    )
    .await;
    assert!(status.is_client_error(), "{body}");
    assert!(!body.to_string().contains("plans"), "{body}");
    // A tenant admin cannot act in another tenant by asking to.
    let auth = format!("Bearer {acme}");
    let (_, _, body) = send(
        &env.app,
        Method::GET,
        "/v1/lake/namespaces",
        None,
        &[("authorization", &auth), ("x-pangolin-tenant", "globex")],
    )
    .await;
    assert_eq!(
        body["namespaces"],
        json!([]),
        "the header only works for root"
    );
    // Root chooses the tenant explicitly.
    let root = token(&env, None, "root").await;
    let auth = format!("Bearer {root}");
    let (_, _, body) = send(
        &env.app,
        Method::GET,
        "/v1/lake/namespaces",
        None,
        &[("authorization", &auth), ("x-pangolin-tenant", "globex")],
    )
    .await;
    assert_eq!(body["namespaces"], json!([["hidden"]]));
}

#[tokio::test]
async fn roles_decide_down_to_branches() {
    let env = secure().await;
    let admin = token(&env, Some("acme"), "admin").await;
    let reader = token(&env, Some("acme"), "reader").await;
    let writer = token(&env, Some("acme"), "writer").await;
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    let create = json!({"name": "t", "schema": schema});
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/v1/lake/namespaces/db/tables",
        Some(create.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for branch in ["dev", "dev2"] {
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

    // The reader reads and nothing more.
    let (status, _) = as_(
        &env,
        &reader,
        Method::GET,
        "/v1/lake/namespaces/db/tables/t",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let commit = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let (status, body) = as_(
        &env,
        &reader,
        Method::POST,
        "/v1/lake/namespaces/db/tables/t",
        Some(commit.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["type"], "ForbiddenException");
    let (status, _) = as_(
        &env,
        &reader,
        Method::DELETE,
        "/v1/lake/namespaces/db/tables/t",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The writer writes `dev*` branches but not `main`, through any route that names them.
    let (status, body) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake/namespaces/db/tables/t%40dev",
        Some(commit.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake%40dev2/namespaces/db/tables/t",
        Some(commit.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake/namespaces/db/tables/t",
        Some(commit.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/api/v1/catalogs/lake/merge",
        Some(json!({"source": "dev", "target": "main"})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "merging into main needs write on main"
    );
    let transaction = json!({"table-changes": [{"identifier": {"namespace": ["db"], "name": "t"}, "requirements": [], "updates": [{"action": "set-properties", "updates": {"x": "y"}}]}]});
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake/transactions/commit",
        Some(transaction.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake%40dev/transactions/commit",
        Some(transaction),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // Nothing the refusals touched changed: main's table has no `k`.
    let (_, body) = as_(
        &env,
        &admin,
        Method::GET,
        "/v1/lake/namespaces/db/tables/t",
        None,
    )
    .await;
    assert!(body["metadata"]["properties"].get("k").is_none(), "{body}");
    // Managing refs is not granted to the writer either.
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/api/v1/catalogs/lake/refs",
        Some(json!({"name": "dev3"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn listings_show_only_what_the_caller_may_read() {
    let env = secure().await;
    let admin = token(&env, Some("acme"), "admin").await;
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    for namespace in ["hr", "sales"] {
        let (status, _) = as_(
            &env,
            &admin,
            Method::POST,
            "/v1/lake/namespaces",
            Some(json!({"namespace": [namespace]})),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        for table in ["a", "b"] {
            let uri = format!("/v1/lake/namespaces/{namespace}/tables");
            let (status, _) = as_(
                &env,
                &admin,
                Method::POST,
                &uri,
                Some(json!({"name": table, "schema": schema})),
            )
            .await;
            assert_eq!(status, StatusCode::OK);
        }
    }
    env.identity
        .create_user(
            &Scope::tenant("acme").unwrap(),
            &PrincipalName::new("analyst").unwrap(),
            &Password::new(PASSWORD),
            false,
        )
        .await
        .unwrap();
    let grants = vec![Grant::new(
        Privilege::Read,
        Resource::Table {
            tenant: "acme".into(),
            catalog: "lake".into(),
            namespace: vec!["sales".into()],
            name: "a".into(),
        },
    )];
    let security = Security::required(env.identity.clone(), env.store.clone(), env.store.clone());
    security
        .authz
        .create_role(
            &root_principal(),
            &[],
            Role::new("acme", "one-table", grants),
        )
        .await
        .unwrap();
    security
        .authz
        .bind(
            &root_principal(),
            &[],
            "acme",
            "one-table",
            "user:acme/analyst",
        )
        .await
        .unwrap();
    let analyst = token(&env, Some("acme"), "analyst").await;
    let (status, body) = as_(&env, &analyst, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["namespaces"], json!([["sales"]]), "hr is not shown");
    let (status, body) = as_(
        &env,
        &analyst,
        Method::GET,
        "/v1/lake/namespaces/sales/tables",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["identifiers"],
        json!([{"namespace": ["sales"], "name": "a"}])
    );
    let (status, _) = as_(
        &env,
        &analyst,
        Method::GET,
        "/v1/lake/namespaces/hr/tables",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The admin still sees everything.
    let (_, body) = as_(&env, &admin, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(body["namespaces"], json!([["hr"], ["sales"]]));
}
