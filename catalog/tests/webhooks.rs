//! Webhook records on every backend: subscriptions with sealed secrets, their delivery state
//! changed only by compare-and-swap, the attempts log and dead letters, and what deleting a
//! subscription or its catalog leaves (nothing).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use pangolin_catalog::events::Cursor;
use pangolin_catalog::tenancy::{Name, SecretKey};
use pangolin_catalog::webhooks::{
    Attempt, AttemptOutcome, DeadLetter, DeleteWebhookError, DeliveryState, Filter,
    GetWebhookError, NewWebhook, SigningSecret, StateError, UpdateWebhookError, WebhookPatch,
    lease_name,
};
use pangolin_store::Timestamp;

use common::tenancy::*;

on_every_backend!(
    subscriptions_are_created_listed_changed_and_deleted,
    delivery_state_changes_only_from_the_version_read,
    attempts_are_listed_newest_first_and_dead_letters_oldest_first,
    deleting_a_catalog_deletes_its_webhooks,
);

fn names() -> (Name, Name) {
    (
        Name::new("tenant", "acme").unwrap(),
        Name::new("catalog", "sales").unwrap(),
    )
}

fn new_webhook(url: &str) -> NewWebhook {
    NewWebhook {
        url: url.to_owned(),
        description: None,
        filter: Filter::default(),
        max_attempts: None,
        secret: None,
        after: Some(Cursor::end_of(3)),
    }
}

async fn sales(
    f: &Fixture,
    key: &SecretKey,
) -> (pangolin_catalog::tenancy::Tenancy, tempfile::TempDir) {
    let tenancy = f.tenancy(key);
    let dir = acme_local(&tenancy).await;
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    (tenancy, dir)
}

async fn subscriptions_are_created_listed_changed_and_deleted(f: Fixture) {
    let key = SecretKey::generate();
    let (tenancy, _dir) = sales(&f, &key).await;
    let webhooks = tenancy.webhooks();
    let (tenant, catalog) = names();
    let mut ids = BTreeSet::new();
    let mut secrets = Vec::new();
    for i in 0..3 {
        let (created, secret) = webhooks
            .create(
                &tenant,
                &catalog,
                new_webhook(&format!("https://hooks.example.com/{i}")),
                "ana",
                Timestamp::from_millis(1_000),
            )
            .await
            .unwrap();
        assert!(created.value.enabled);
        assert_eq!(created.value.max_attempts, 10);
        ids.insert(created.value.id.clone());
        secrets.push((created.value, secret));
    }
    for (subscription, secret) in &secrets {
        let stored = webhooks
            .get(&tenant, &catalog, &subscription.id)
            .await
            .unwrap();
        assert_eq!(
            webhooks.secret(&stored.value).unwrap().as_bytes(),
            secret.as_bytes(),
            "the sealed secret opens to what was handed out"
        );
        let state = webhooks.state(&stored.value).await.unwrap();
        assert_eq!(state.value.after.as_deref(), Some("3"));
    }
    // Under another server key the secrets do not open.
    let other = f.tenancy(&SecretKey::generate()).webhooks();
    assert!(other.secret(&secrets[0].0).is_err());

    let first = webhooks.list(&tenant, &catalog, None, 2).await.unwrap();
    let second = webhooks
        .list(&tenant, &catalog, first.next_after.as_ref(), 2)
        .await
        .unwrap();
    assert_eq!(second.next_after, None);
    let listed: BTreeSet<String> = first
        .items
        .iter()
        .chain(&second.items)
        .map(|s| s.value.id.clone())
        .collect();
    assert_eq!(listed, ids);
    let (everyone, _) = webhooks.list_all(None, 100).await.unwrap();
    assert_eq!(everyone.len(), 3);

    let id = secrets[0].0.id.clone();
    let rotated = SigningSecret::generate();
    let changed = webhooks
        .update(
            &tenant,
            &catalog,
            &id,
            WebhookPatch {
                enabled: Some(false),
                description: Some("paused".into()),
                secret: Some(rotated.clone()),
                ..WebhookPatch::default()
            },
            Timestamp::from_millis(2_000),
        )
        .await
        .unwrap();
    assert!(!changed.value.enabled);
    assert_eq!(changed.value.description.as_deref(), Some("paused"));
    assert_eq!(changed.value.url, "https://hooks.example.com/0");
    assert_eq!(
        webhooks.secret(&changed.value).unwrap().as_bytes(),
        rotated.as_bytes()
    );
    let refused = webhooks
        .update(
            &tenant,
            &catalog,
            &id,
            WebhookPatch {
                max_attempts: Some(99),
                ..WebhookPatch::default()
            },
            Timestamp::from_millis(3_000),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, UpdateWebhookError::Invalid(_)),
        "{refused}"
    );

    webhooks.delete(&tenant, &catalog, &id).await.unwrap();
    let gone = webhooks.get(&tenant, &catalog, &id).await.unwrap_err();
    assert!(matches!(gone, GetWebhookError::NotFound { .. }), "{gone}");
    let again = webhooks.delete(&tenant, &catalog, &id).await.unwrap_err();
    assert!(
        matches!(again, DeleteWebhookError::NotFound { .. }),
        "{again}"
    );
    assert!(
        f.records()
            .list_records(&format!("webhooks/state/acme/sales/{id}"), None, 10)
            .await
            .unwrap()
            .records
            .is_empty(),
        "its state went with it"
    );
}

async fn delivery_state_changes_only_from_the_version_read(f: Fixture) {
    let key = SecretKey::generate();
    let (tenancy, _dir) = sales(&f, &key).await;
    let webhooks = tenancy.webhooks();
    let (tenant, catalog) = names();
    let (created, _) = webhooks
        .create(
            &tenant,
            &catalog,
            new_webhook("https://h/"),
            "ana",
            Timestamp::from_millis(1),
        )
        .await
        .unwrap();
    let subscription = created.value;
    let read = webhooks.state(&subscription).await.unwrap();
    let next = DeliveryState {
        after: Some("4".into()),
        delivered: 1,
        attempts: 1,
        ..read.value.clone()
    };
    let version = webhooks
        .save_state(&subscription, read.version, &next)
        .await
        .unwrap();
    assert!(version > read.version);
    // A second server that read the same version loses.
    let stale = webhooks
        .save_state(&subscription, read.version, &DeliveryState::default())
        .await
        .unwrap_err();
    assert!(matches!(stale, StateError::Lost(_)), "{stale}");
    assert_eq!(webhooks.state(&subscription).await.unwrap().value, next);
}

fn attempt(number: u64, event: &str) -> Attempt {
    Attempt {
        number,
        event: event.to_owned(),
        event_type: "create-table".to_owned(),
        attempt: 1,
        at: Timestamp::from_millis(i64::try_from(number).unwrap()),
        duration_ms: 3,
        status: Some(500),
        error: Some("the endpoint answered 500".to_owned()),
        outcome: AttemptOutcome::Retrying,
    }
}

async fn attempts_are_listed_newest_first_and_dead_letters_oldest_first(f: Fixture) {
    let key = SecretKey::generate();
    let (tenancy, _dir) = sales(&f, &key).await;
    let webhooks = tenancy.webhooks();
    let (tenant, catalog) = names();
    let (created, _) = webhooks
        .create(
            &tenant,
            &catalog,
            new_webhook("https://h/"),
            "ana",
            Timestamp::from_millis(1),
        )
        .await
        .unwrap();
    let subscription = created.value;
    let lease = pangolin_records::Lease::new(&lease_name(&subscription), "server-1").unwrap();
    assert!(
        lease
            .try_take(
                f.records(),
                Timestamp::from_millis(1),
                std::time::Duration::from_secs(30)
            )
            .await
            .unwrap()
    );
    for n in 1..=12 {
        webhooks
            .log_attempt(&subscription, &attempt(n, &format!("{n}.0")))
            .await
            .unwrap();
    }
    let (page, more) = webhooks.attempts(&subscription, None, 5).await.unwrap();
    assert!(more);
    assert_eq!(
        page.iter().map(|a| a.number).collect::<Vec<_>>(),
        [12, 11, 10, 9, 8]
    );
    let (rest, _) = webhooks
        .attempts(&subscription, Some(8), 100)
        .await
        .unwrap();
    assert_eq!(rest.first().unwrap().number, 7);
    assert_eq!(rest.len(), 7);

    // Cursor order, not text order: 10.0 after 9.1.
    for event in [Cursor::event(10, 0), Cursor::event(9, 1), Cursor::end_of(9)] {
        webhooks
            .add_dead_letter(
                &subscription,
                &event,
                &DeadLetter {
                    event: event.to_string(),
                    event_type: "update-table".to_owned(),
                    attempts: 10,
                    last_error: "no answer within the timeout".to_owned(),
                    at: Timestamp::from_millis(5),
                    body: "{}".to_owned(),
                },
            )
            .await
            .unwrap();
    }
    let (letters, _) = webhooks
        .dead_letters(&subscription, None, 10)
        .await
        .unwrap();
    assert_eq!(
        letters.iter().map(|l| l.event.as_str()).collect::<Vec<_>>(),
        ["9.1", "9", "10.0"]
    );
    let (after, _) = webhooks
        .dead_letters(&subscription, Some(&Cursor::event(9, 1)), 10)
        .await
        .unwrap();
    assert_eq!(after.len(), 2);
    assert!(
        webhooks
            .remove_dead_letter(&subscription, &Cursor::event(9, 1))
            .await
            .unwrap()
    );
    assert!(
        !webhooks
            .remove_dead_letter(&subscription, &Cursor::event(9, 1))
            .await
            .unwrap()
    );
    webhooks
        .delete(&tenant, &catalog, &subscription.id)
        .await
        .unwrap();
    for kind in ["webhooks/attempts", "webhooks/dead", "leases/webhook"] {
        let left = f
            .records()
            .list_records(&format!("{kind}/acme/sales/"), None, 10)
            .await
            .unwrap();
        assert!(left.records.is_empty(), "{kind} left: {:?}", left.records);
    }
}

async fn deleting_a_catalog_deletes_its_webhooks(f: Fixture) {
    let key = SecretKey::generate();
    let (tenancy, _dir) = sales(&f, &key).await;
    let webhooks = tenancy.webhooks();
    let (tenant, catalog) = names();
    webhooks
        .create(
            &tenant,
            &catalog,
            new_webhook("https://h/"),
            "ana",
            Timestamp::from_millis(1),
        )
        .await
        .unwrap();
    tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap();
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let page = webhooks.list(&tenant, &catalog, None, 10).await.unwrap();
    assert!(
        page.items.is_empty(),
        "a new catalog of the name starts without them"
    );
    let left = f
        .records()
        .list_records("webhooks/", None, 10)
        .await
        .unwrap();
    assert!(left.records.is_empty(), "{:?}", left.records);
}
