//! Merge requests and branch protection as records, on every backend: protection kept in the
//! catalog's record and applied to the catalog opened from it, requests numbered per catalog,
//! and nothing left of either once the catalog is deleted.
#![allow(clippy::unwrap_used)]

mod common;

use pangolin_catalog::merge_requests::{BranchProtection, NewMergeRequest};
use pangolin_catalog::tenancy::{Name, SecretKey, SetProtectionError};
use pangolin_refs::{RefName, Reference};
use pangolin_store::Timestamp;

use common::tenancy::*;

on_every_backend!(protection_and_requests_live_and_die_with_their_catalog);

fn request(title: &str) -> NewMergeRequest {
    NewMergeRequest {
        title: title.to_owned(),
        description: Some("why".to_owned()),
        source: RefName::new("dev").unwrap(),
        target: RefName::new("main").unwrap(),
    }
}

async fn protection_and_requests_live_and_die_with_their_catalog(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    let _dir = acme_local(&tenancy).await;
    // `sales2` starts with `sales`: deleting one must leave the other's records alone.
    for name in ["sales", "sales2"] {
        tenancy
            .create_catalog("acme", name, new_catalog("files"), "ana")
            .await
            .unwrap();
    }
    let protection: BranchProtection = serde_json::from_value(serde_json::json!({"rules": [
        {"branch": "main", "checks": [{"kind": "no-lost-rows"}]}
    ]}))
    .unwrap();
    tenancy
        .set_catalog_protection("acme", "sales", Some(protection.clone()))
        .await
        .unwrap();
    let catalog = tenancy.open_catalog("acme", "sales").await.unwrap();
    assert_eq!(catalog.protection(), Some(&protection));
    let main = Reference::branch(RefName::new("main").unwrap());
    assert!(catalog.check_unprotected(&main).is_err());
    let bad: BranchProtection = serde_json::from_value(serde_json::json!({"rules": [
        {"branch": "main", "checks": [{"kind": "forbid", "types": []}]}
    ]}))
    .unwrap();
    let refused = tenancy
        .set_catalog_protection("acme", "sales", Some(bad))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, SetProtectionError::Invalid(_)),
        "{refused}"
    );

    let requests = tenancy.merge_requests();
    let acme = Name::new("tenant", "acme").unwrap();
    let sales = Name::new("catalog", "sales").unwrap();
    let sales2 = Name::new("catalog", "sales2").unwrap();
    for (catalog, title) in [(&sales, "a"), (&sales, "b"), (&sales2, "c")] {
        requests
            .create(&acme, catalog, request(title), "bo", Timestamp::now())
            .await
            .unwrap();
    }
    let second = requests.get(&acme, &sales, 2).await.unwrap().value;
    assert_eq!((second.title.as_str(), second.author.as_str()), ("b", "bo"));
    assert_eq!(
        requests.get(&acme, &sales2, 1).await.unwrap().value.title,
        "c"
    );

    tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap();
    assert!(requests.get(&acme, &sales, 1).await.is_err());
    let left = requests.list(&acme, &sales, None, None, 10).await.unwrap();
    assert!(left.items.is_empty());
    // The other catalog keeps its requests and goes on numbering them.
    let next = requests
        .create(&acme, &sales2, request("d"), "bo", Timestamp::now())
        .await
        .unwrap();
    assert_eq!(next.value.number, 2);
    // A catalog made again under the deleted name starts afresh.
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let fresh = requests
        .create(&acme, &sales, request("e"), "bo", Timestamp::now())
        .await
        .unwrap();
    assert_eq!(fresh.value.number, 1);
    assert_eq!(
        tenancy
            .open_catalog("acme", "sales")
            .await
            .unwrap()
            .protection(),
        None
    );
}
