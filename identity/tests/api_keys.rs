//! Service users and API keys: format and parsing, verification, expiry, revocation, rotation,
//! `last_used` throttling and the verification cache.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Env, START, config, name, tenant};
use pangolin_identity::{
    ApiKey, ApiKeyAuthError, ApiKeyParseError, CreateServiceUserError, CreatedApiKey,
    IdentityConfig,
};
use pangolin_store::Timestamp;

const ID: &str = "0123456789abcdef";
const SECRET: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

#[test]
fn keys_parse_only_in_the_exact_format() {
    let key = ApiKey::parse(&format!("pgl_{ID}_{SECRET}")).unwrap();
    assert_eq!(key.id().as_str(), ID);
    assert_eq!(key.secret(), SECRET);
    assert_eq!(key.expose(), format!("pgl_{ID}_{SECRET}"));
    let cases = [
        (
            format!("pgx_{ID}_{SECRET}"),
            ApiKeyParseError::MissingPrefix,
        ),
        (
            format!("pgl_{ID}{SECRET}"),
            ApiKeyParseError::MissingSeparator,
        ),
        (
            format!("pgl_{}_{SECRET}", &ID[1..]),
            ApiKeyParseError::InvalidKeyId,
        ),
        (
            format!("pgl_{}_{SECRET}", ID.to_uppercase()),
            ApiKeyParseError::InvalidKeyId,
        ),
        (
            format!("pgl_{ID}_{}", &SECRET[1..]),
            ApiKeyParseError::InvalidSecret,
        ),
        (
            format!("pgl_{ID}_{SECRET}0"),
            ApiKeyParseError::InvalidSecret,
        ),
        (
            format!("pgl_{ID}_{}", SECRET.replace('a', "g")),
            ApiKeyParseError::InvalidSecret,
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(ApiKey::parse(&text).unwrap_err(), expected, "{text}");
    }
    let key = ApiKey::parse_client_credential(&format!("{ID}:{SECRET}")).unwrap();
    assert_eq!(key.expose(), format!("pgl_{ID}_{SECRET}"));
    assert_eq!(
        ApiKey::parse_client_credential(ID).unwrap_err(),
        ApiKeyParseError::MissingColon
    );
}

#[test]
fn debug_output_of_a_key_shows_no_secret() {
    let key = ApiKey::parse(&format!("pgl_{ID}_{SECRET}")).unwrap();
    let debug = format!("{key:?}");
    assert!(!debug.contains(SECRET), "{debug}");
    assert!(debug.contains(ID), "{debug}");
}

async fn service(env: &Env) -> CreatedApiKey {
    env.identity
        .create_service_user(&tenant("acme"), &name("etl"))
        .await
        .unwrap();
    env.identity
        .create_api_key(&tenant("acme"), &name("etl"), None)
        .await
        .unwrap()
}

async fn new_keys_have_the_documented_format_and_work(env: Env) {
    let created = service(&env).await;
    let text = created.key.expose();
    let rest = text.strip_prefix("pgl_").unwrap();
    let (id, secret) = rest.split_once('_').unwrap();
    assert_eq!(id.len(), 16);
    assert_eq!(secret.len(), 64);
    assert!(
        rest.bytes()
            .all(|b| b == b'_' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    assert!(!format!("{created:?}").contains(secret));

    let parsed = ApiKey::parse(&text).unwrap();
    let principal = env.identity.authenticate_api_key(&parsed).await.unwrap();
    assert_eq!(principal.id.to_string(), "service:acme/etl");
    assert_eq!(principal.key_id.as_ref(), Some(created.key.id()));
    // The same key through the OAuth2 client-credentials form.
    let principal = env.identity.authenticate_client(id, secret).await.unwrap();
    assert_eq!(principal.id.to_string(), "service:acme/etl");

    // Listings carry no secret.
    let keys = env
        .identity
        .list_api_keys(&tenant("acme"), &name("etl"))
        .await
        .unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(&keys[0].id, created.key.id());
    assert!(!format!("{keys:?}").contains(secret));
    // Another tenant sees nothing of it.
    assert!(
        env.identity
            .api_key(&tenant("globex"), created.key.id())
            .await
            .unwrap()
            .is_none()
    );
}

async fn a_wrong_secret_or_unknown_id_is_refused_alike(env: Env) {
    let created = service(&env).await;
    let wrong = ApiKey::from_parts(created.key.id().as_str(), SECRET).unwrap();
    let err = env.identity.authenticate_api_key(&wrong).await.unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::InvalidCredentials), "{err}");
    let unknown = ApiKey::from_parts(ID, created.key.secret()).unwrap();
    let err = env
        .identity
        .authenticate_api_key(&unknown)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::InvalidCredentials), "{err}");
    // A wrong secret for a cached key is still refused.
    env.identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap();
    let err = env.identity.authenticate_api_key(&wrong).await.unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::InvalidCredentials), "{err}");
    let err = env
        .identity
        .authenticate_client(created.key.id().as_str(), "nope")
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::InvalidCredentials), "{err}");
}

async fn expired_keys_are_refused(env: Env) {
    env.identity
        .create_service_user(&tenant("acme"), &name("etl"))
        .await
        .unwrap();
    let expires = Timestamp::from_millis(START.as_millis() + 10_000);
    let created = env
        .identity
        .create_api_key(&tenant("acme"), &name("etl"), Some(expires))
        .await
        .unwrap();
    env.identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap();
    env.clock.advance(Duration::from_secs(10));
    // Refused although the verification is cached.
    let err = env
        .identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::Expired(_)), "{err}");
    // And on a server that never saw it.
    let other = env.server(config()).await;
    let err = other.authenticate_api_key(&created.key).await.unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::Expired(_)), "{err}");
}

async fn revoking_drops_the_cached_verification_at_once(env: Env) {
    let created = service(&env).await;
    env.identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap();
    let info = env
        .identity
        .revoke_api_key(&tenant("acme"), created.key.id())
        .await
        .unwrap();
    assert_eq!(info.revoked_at, Some(START));
    let err = env
        .identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::Revoked(_)), "{err}");
    // Another tenant cannot revoke it.
    let other = service_in(&env, "globex").await;
    assert!(
        env.identity
            .revoke_api_key(&tenant("acme"), other.key.id())
            .await
            .is_err()
    );
    env.identity.authenticate_api_key(&other.key).await.unwrap();
}

async fn service_in(env: &Env, t: &str) -> CreatedApiKey {
    env.identity
        .create_service_user(&tenant(t), &name("etl"))
        .await
        .unwrap();
    env.identity
        .create_api_key(&tenant(t), &name("etl"), None)
        .await
        .unwrap()
}

async fn other_servers_see_a_revocation_within_the_record_ttl(env: Env) {
    let created = service(&env).await;
    let replica = env.server(config()).await;
    replica.authenticate_api_key(&created.key).await.unwrap();
    env.identity
        .revoke_api_key(&tenant("acme"), created.key.id())
        .await
        .unwrap();
    // The replica trusts what it read of the record until that is a record TTL old...
    let record_ttl = config().api_key_record_ttl;
    env.clock.advance(record_ttl - Duration::from_millis(1));
    replica.authenticate_api_key(&created.key).await.unwrap();
    // ...and then reads it again (well before the verification itself expires).
    env.clock.advance(Duration::from_millis(1));
    let err = replica
        .authenticate_api_key(&created.key)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::Revoked(_)), "{err}");
}

/// A replica keeps a key it verified working across reads of its record, and sees an owner
/// disabled through another server within the record TTL.
async fn record_reads_keep_a_key_working_and_see_a_disabled_owner(env: Env) {
    let created = service(&env).await;
    let replica = env.server(config()).await;
    replica.authenticate_api_key(&created.key).await.unwrap();
    for _ in 0..3 {
        env.clock.advance(config().api_key_record_ttl);
        replica.authenticate_api_key(&created.key).await.unwrap();
    }
    env.identity
        .set_service_user_disabled(&tenant("acme"), &name("etl"), true)
        .await
        .unwrap();
    env.clock.advance(config().api_key_record_ttl);
    let err = replica
        .authenticate_api_key(&created.key)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::Disabled(_)), "{err}");
}

async fn rotation_without_grace_revokes_the_old_key_now(env: Env) {
    let old = service(&env).await;
    env.identity.authenticate_api_key(&old.key).await.unwrap();
    let new = env
        .identity
        .rotate_api_key(&tenant("acme"), old.key.id(), None, None)
        .await
        .unwrap();
    assert_ne!(new.key.id(), old.key.id());
    env.identity.authenticate_api_key(&new.key).await.unwrap();
    let err = env
        .identity
        .authenticate_api_key(&old.key)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::Revoked(_)), "{err}");
    let listed = env
        .identity
        .list_api_keys(&tenant("acme"), &name("etl"))
        .await
        .unwrap();
    assert_eq!(listed.len(), 2);
    assert!(
        listed
            .iter()
            .any(|k| &k.id == new.key.id() && k.revoked_at.is_none())
    );
}

async fn rotation_with_grace_keeps_the_old_key_until_the_grace_ends(env: Env) {
    let old = service(&env).await;
    env.identity.authenticate_api_key(&old.key).await.unwrap();
    let new = env
        .identity
        .rotate_api_key(
            &tenant("acme"),
            old.key.id(),
            Some(Duration::from_secs(300)),
            None,
        )
        .await
        .unwrap();
    env.clock.advance(Duration::from_secs(299));
    env.identity.authenticate_api_key(&old.key).await.unwrap();
    env.identity.authenticate_api_key(&new.key).await.unwrap();
    env.clock.advance(Duration::from_secs(1));
    let err = env
        .identity
        .authenticate_api_key(&old.key)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::Revoked(_)), "{err}");
    env.identity.authenticate_api_key(&new.key).await.unwrap();
}

async fn last_used_is_written_at_most_once_a_minute(env: Env) {
    let created = service(&env).await;
    let last_used = |env: &Env| {
        let identity = env.identity.clone();
        let id = created.key.id().clone();
        async move {
            identity
                .api_key(&tenant("acme"), &id)
                .await
                .unwrap()
                .unwrap()
                .last_used
        }
    };
    assert_eq!(last_used(&env).await, None);
    env.identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap();
    assert_eq!(last_used(&env).await, Some(START));

    let record =
        pangolin_records::RecordKey::new(format!("identity/api-keys/{}", created.key.id()))
            .unwrap();
    let version = env
        .store
        .get_record(&record)
        .await
        .unwrap()
        .unwrap()
        .version;
    for _ in 0..5 {
        env.clock.advance(Duration::from_secs(10));
        env.identity
            .authenticate_api_key(&created.key)
            .await
            .unwrap();
    }
    // Fifty seconds of use: no write.
    assert_eq!(
        env.store
            .get_record(&record)
            .await
            .unwrap()
            .unwrap()
            .version,
        version
    );
    assert_eq!(last_used(&env).await, Some(START));
    env.clock.advance(Duration::from_secs(10));
    env.identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap();
    assert_eq!(
        last_used(&env).await,
        Some(Timestamp::from_millis(START.as_millis() + 60_000))
    );
    assert_eq!(
        env.store
            .get_record(&record)
            .await
            .unwrap()
            .unwrap()
            .version,
        version + 1
    );
}

async fn disabled_or_deleted_service_users_cannot_use_their_keys(env: Env) {
    let created = service(&env).await;
    env.identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap();
    env.identity
        .set_service_user_disabled(&tenant("acme"), &name("etl"), true)
        .await
        .unwrap();
    let err = env
        .identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::Disabled(_)), "{err}");
    env.identity
        .set_service_user_disabled(&tenant("acme"), &name("etl"), false)
        .await
        .unwrap();
    env.identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap();
    env.identity
        .delete_service_user(&tenant("acme"), &name("etl"))
        .await
        .unwrap();
    let err = env
        .identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiKeyAuthError::InvalidCredentials), "{err}");
    // Created again under the same name, it has no keys.
    env.identity
        .create_service_user(&tenant("acme"), &name("etl"))
        .await
        .unwrap();
    assert!(
        env.identity
            .list_api_keys(&tenant("acme"), &name("etl"))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn service_users_are_per_tenant_and_list_in_pages(env: Env) {
    let id = &env.identity;
    for n in ["b", "a", "c"] {
        id.create_service_user(&tenant("acme"), &name(n))
            .await
            .unwrap();
    }
    id.create_service_user(&tenant("globex"), &name("a"))
        .await
        .unwrap();
    let err = id
        .create_service_user(&tenant("acme"), &name("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CreateServiceUserError::AlreadyExists(_)),
        "{err}"
    );
    let page = id
        .list_service_users(&tenant("acme"), None, 2)
        .await
        .unwrap();
    let names: Vec<_> = page
        .service_users
        .iter()
        .map(|s| s.name.to_string())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let page = id
        .list_service_users(&tenant("acme"), page.next_after.as_ref(), 2)
        .await
        .unwrap();
    let names: Vec<_> = page
        .service_users
        .iter()
        .map(|s| s.name.to_string())
        .collect();
    assert_eq!(names, ["c"]);
    assert!(page.next_after.is_none());
    assert!(
        id.service_user(&tenant("initech"), &name("a"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        id.service_user(&tenant("globex"), &name("a"))
            .await
            .unwrap()
            .is_some()
    );
}

async fn keys_need_an_existing_service_user(env: Env) {
    let err = env
        .identity
        .create_api_key(&tenant("acme"), &name("ghost"), None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("service:acme/ghost"), "{err}");
}

#[tokio::test]
async fn without_a_cache_every_use_checks_the_record() {
    let env = Env::with_config(
        common::Backend::Memory,
        IdentityConfig {
            api_key_cache_capacity: 0,
            ..config()
        },
    )
    .await
    .unwrap();
    let created = service(&env).await;
    env.identity
        .authenticate_api_key(&created.key)
        .await
        .unwrap();
    let replica = env.server(config()).await;
    replica
        .revoke_api_key(&tenant("acme"), created.key.id())
        .await
        .unwrap();
    assert!(
        env.identity
            .authenticate_api_key(&created.key)
            .await
            .is_err()
    );
}

on_every_backend!(
    new_keys_have_the_documented_format_and_work,
    a_wrong_secret_or_unknown_id_is_refused_alike,
    expired_keys_are_refused,
    revoking_drops_the_cached_verification_at_once,
    other_servers_see_a_revocation_within_the_record_ttl,
    record_reads_keep_a_key_working_and_see_a_disabled_owner,
    rotation_without_grace_revokes_the_old_key_now,
    rotation_with_grace_keeps_the_old_key_until_the_grace_ends,
    last_used_is_written_at_most_once_a_minute,
    disabled_or_deleted_service_users_cannot_use_their_keys,
    service_users_are_per_tenant_and_list_in_pages,
    keys_need_an_existing_service_user,
);
