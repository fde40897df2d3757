//! JWTs: round trips, every kind of forged or stale token, refresh, logout and revocation,
//! and the signing key's life across restarts and racing first starts.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{Backend, Env, START, bare_store, config, name, password, scope, tenant};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use pangolin_identity::{
    Claims, Identity, IdentityConfig, ManualClock, Principal, RefreshError, Scope, SigningKey,
    SigningKeyError, TokenType, VerifyTokenError,
};
use pangolin_records::{ExpectedVersion, Record, RecordError, RecordKey, RecordPage, RecordStore};
use pangolin_store::BackendError;
use tokio::sync::Barrier;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef-test-signing-key";
const PW: &str = "a-long-password-1";

fn keyed() -> IdentityConfig {
    IdentityConfig {
        signing_key: Some(SigningKey::new(KEY).unwrap()),
        ..config()
    }
}

async fn user(env: &Env) -> Principal {
    env.identity
        .create_user(&scope("acme"), &name("ana"), &password(PW), true)
        .await
        .unwrap();
    env.identity
        .authenticate(&scope("acme"), &name("ana"), &password(PW))
        .await
        .unwrap()
}

fn parts(token: &str) -> Vec<String> {
    token.split('.').map(str::to_owned).collect()
}

fn payload(token: &str) -> serde_json::Value {
    let bytes = URL_SAFE_NO_PAD.decode(&parts(token)[1]).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

async fn tokens_round_trip_with_the_documented_claims(env: Env) {
    let principal = user(&env).await;
    let pair = env.identity.issue_tokens(&principal).unwrap();
    let verified = env
        .identity
        .verify_access_token(&pair.access.token)
        .await
        .unwrap();
    assert_eq!(verified.principal, principal);
    let claims = payload(&pair.access.token);
    assert_eq!(claims["iss"], "pangolin");
    assert_eq!(claims["sub"], "user:acme/ana");
    assert_eq!(claims["tenant"], "acme");
    assert_eq!(claims["kind"], "user");
    assert_eq!(claims["admin"], true);
    assert_eq!(claims["typ"], "access");
    assert_eq!(claims["iat"], START.as_millis() / 1000);
    assert_eq!(claims["exp"], START.as_millis() / 1000 + 3600);
    assert_eq!(claims["jti"], pair.access.jti.as_str());
    uuid::Uuid::parse_str(&pair.access.jti).unwrap();
    assert_eq!(
        payload(&pair.refresh.token)["exp"],
        START.as_millis() / 1000 + 7 * 86400
    );
    let header = URL_SAFE_NO_PAD
        .decode(&parts(&pair.access.token)[0])
        .unwrap();
    let header: serde_json::Value = serde_json::from_slice(&header).unwrap();
    assert_eq!(header["alg"], "HS256");
    // The token never shows in Debug output.
    let debug = format!("{pair:?}");
    assert!(!debug.contains(&pair.access.token), "{debug}");
    assert!(!debug.contains(&pair.refresh.token), "{debug}");
}

async fn root_tokens_have_no_tenant(env: Env) {
    env.identity
        .create_user(&Scope::Root, &name("root"), &password(PW), true)
        .await
        .unwrap();
    let principal = env
        .identity
        .authenticate(&Scope::Root, &name("root"), &password(PW))
        .await
        .unwrap();
    let pair = env.identity.issue_tokens(&principal).unwrap();
    let claims = payload(&pair.access.token);
    assert_eq!(claims["sub"], "user:~/root");
    assert!(claims.get("tenant").is_none());
    let verified = env
        .identity
        .verify_access_token(&pair.access.token)
        .await
        .unwrap();
    assert_eq!(verified.principal.id.scope, Scope::Root);
}

async fn a_tampered_payload_is_refused(env: Env) {
    let pair = env.identity.issue_tokens(&user(&env).await).unwrap();
    let p = parts(&pair.access.token);
    let mut claims = payload(&pair.access.token);
    claims["sub"] = "user:acme/eve".into();
    let forged = format!(
        "{}.{}.{}",
        p[0],
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap()),
        p[2]
    );
    let err = env.identity.verify_access_token(&forged).await.unwrap_err();
    assert!(matches!(err, VerifyTokenError::Invalid(_)), "{err}");
}

async fn a_tampered_signature_is_refused(env: Env) {
    let pair = env.identity.issue_tokens(&user(&env).await).unwrap();
    let p = parts(&pair.access.token);
    let mut signature = URL_SAFE_NO_PAD.decode(&p[2]).unwrap();
    signature[0] ^= 1;
    let forged = format!("{}.{}.{}", p[0], p[1], URL_SAFE_NO_PAD.encode(signature));
    let err = env.identity.verify_access_token(&forged).await.unwrap_err();
    assert!(matches!(err, VerifyTokenError::Invalid(_)), "{err}");
}

async fn an_unsigned_alg_none_token_is_refused(env: Env) {
    let pair = env.identity.issue_tokens(&user(&env).await).unwrap();
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let body = &parts(&pair.access.token)[1];
    for forged in [format!("{header}.{body}."), format!("{header}.{body}")] {
        let err = env.identity.verify_access_token(&forged).await.unwrap_err();
        assert!(matches!(err, VerifyTokenError::Invalid(_)), "{err}");
    }
}

async fn a_token_signed_with_another_algorithm_and_the_same_key_is_refused(env: Env) {
    let identity = env.server(keyed()).await;
    let principal = user(&env).await;
    let pair = identity.issue_tokens(&principal).unwrap();
    identity
        .verify_access_token(&pair.access.token)
        .await
        .unwrap();
    let claims: Claims = serde_json::from_value(payload(&pair.access.token)).unwrap();
    for alg in [Algorithm::HS384, Algorithm::HS512] {
        let forged = jsonwebtoken::encode(
            &Header::new(alg),
            &claims,
            &EncodingKey::from_secret(KEY).unwrap(),
        )
        .unwrap();
        let err = identity.verify_access_token(&forged).await.unwrap_err();
        assert!(
            matches!(err, VerifyTokenError::Invalid(_)),
            "{alg:?}: {err}"
        );
    }
    // Same claims, same key, HS256: accepted, so the refusals above are about the algorithm.
    let same = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(KEY).unwrap(),
    )
    .unwrap();
    identity.verify_access_token(&same).await.unwrap();
}

async fn expired_tokens_are_refused_after_the_leeway(env: Env) {
    let pair = env.identity.issue_tokens(&user(&env).await).unwrap();
    env.clock.advance(Duration::from_secs(3600 + 30));
    env.identity
        .verify_access_token(&pair.access.token)
        .await
        .unwrap();
    env.clock.advance(Duration::from_secs(1));
    let err = env
        .identity
        .verify_access_token(&pair.access.token)
        .await
        .unwrap_err();
    assert!(matches!(err, VerifyTokenError::Expired), "{err}");
}

async fn a_refresh_token_is_not_an_access_token_nor_the_reverse(env: Env) {
    let pair = env.identity.issue_tokens(&user(&env).await).unwrap();
    let err = env
        .identity
        .verify_access_token(&pair.refresh.token)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            VerifyTokenError::WrongType {
                expected: TokenType::Access,
                found: TokenType::Refresh
            }
        ),
        "{err}"
    );
    let err = env.identity.refresh(&pair.access.token).await.unwrap_err();
    assert!(
        matches!(
            err,
            RefreshError::Verify(VerifyTokenError::WrongType { .. })
        ),
        "{err}"
    );
}

async fn logged_out_and_admin_revoked_tokens_are_refused(env: Env) {
    let principal = user(&env).await;
    let pair = env.identity.issue_tokens(&principal).unwrap();
    env.identity
        .logout(&[&pair.access.token, &pair.refresh.token])
        .await
        .unwrap();
    let err = env
        .identity
        .verify_access_token(&pair.access.token)
        .await
        .unwrap_err();
    assert!(matches!(err, VerifyTokenError::Revoked), "{err}");
    assert!(env.identity.refresh(&pair.refresh.token).await.is_err());

    let other = env.identity.issue_tokens(&principal).unwrap();
    env.identity
        .verify_access_token(&other.access.token)
        .await
        .unwrap();
    env.identity
        .revoke_token_id(&other.access.jti)
        .await
        .unwrap();
    let err = env
        .identity
        .verify_access_token(&other.access.token)
        .await
        .unwrap_err();
    assert!(matches!(err, VerifyTokenError::Revoked), "{err}");
    assert!(env.identity.revoke_token_id("not-a-uuid").await.is_err());
}

async fn a_refresh_token_works_once(env: Env) {
    let pair = env.identity.issue_tokens(&user(&env).await).unwrap();
    env.clock.advance(Duration::from_secs(5));
    let renewed = env.identity.refresh(&pair.refresh.token).await.unwrap();
    env.identity
        .verify_access_token(&renewed.access.token)
        .await
        .unwrap();
    assert_ne!(renewed.refresh.jti, pair.refresh.jti);
    let err = env.identity.refresh(&pair.refresh.token).await.unwrap_err();
    assert!(
        matches!(err, RefreshError::Verify(VerifyTokenError::Revoked)),
        "{err}"
    );
    env.identity.refresh(&renewed.refresh.token).await.unwrap();
}

async fn pruning_drops_only_revocations_of_expired_tokens(env: Env) {
    let principal = user(&env).await;
    let old = env.identity.issue_tokens(&principal).unwrap();
    env.identity.logout(&[&old.access.token]).await.unwrap();
    env.clock.advance(Duration::from_secs(1800));
    let newer = env.identity.issue_tokens(&principal).unwrap();
    env.identity.logout(&[&newer.access.token]).await.unwrap();
    assert_eq!(env.identity.prune_revocations().await.unwrap(), 0);
    env.clock.advance(Duration::from_secs(1800 + 31));
    assert_eq!(env.identity.prune_revocations().await.unwrap(), 1);
    // The newer token is still revoked.
    let err = env
        .identity
        .verify_access_token(&newer.access.token)
        .await
        .unwrap_err();
    assert!(matches!(err, VerifyTokenError::Revoked), "{err}");
}

async fn the_generated_key_survives_a_restart(env: Env) {
    let pair = env.identity.issue_tokens(&user(&env).await).unwrap();
    let restarted = env.server(config()).await;
    restarted
        .verify_access_token(&pair.access.token)
        .await
        .unwrap();
    // A server with a different key refuses it.
    let other_key = env.server(keyed()).await;
    assert!(
        other_key
            .verify_access_token(&pair.access.token)
            .await
            .is_err()
    );
}

async fn service_tokens_stop_with_their_key(env: Env) {
    env.identity
        .create_service_user(&tenant("acme"), &name("etl"))
        .await
        .unwrap();
    let created = env
        .identity
        .create_api_key(&tenant("acme"), &name("etl"), None)
        .await
        .unwrap();
    let token = env
        .identity
        .client_credentials_token(&created.key)
        .await
        .unwrap();
    let claims = payload(&token.token);
    assert_eq!(claims["sub"], "service:acme/etl");
    assert_eq!(claims["kind"], "service");
    assert_eq!(claims["key_id"], created.key.id().as_str());
    let verified = env
        .identity
        .verify_access_token(&token.token)
        .await
        .unwrap();
    assert_eq!(verified.principal.key_id.as_ref(), Some(created.key.id()));
    env.identity
        .revoke_api_key(&tenant("acme"), created.key.id())
        .await
        .unwrap();
    let err = env
        .identity
        .verify_access_token(&token.token)
        .await
        .unwrap_err();
    assert!(matches!(err, VerifyTokenError::KeyInvalid(_)), "{err}");
}

/// A store whose first `readers` reads of keys under `prefix` wait for each other, so that
/// racing callers all read before any of them writes: the race is certain, not likely.
struct ReadTogether {
    inner: Arc<dyn RecordStore>,
    prefix: &'static str,
    readers: usize,
    reads: AtomicUsize,
    barrier: Barrier,
}

#[async_trait::async_trait]
impl RecordStore for ReadTogether {
    async fn get_record(&self, key: &RecordKey) -> Result<Option<Record>, BackendError> {
        let record = self.inner.get_record(key).await;
        if key.as_str().starts_with(self.prefix)
            && self.reads.fetch_add(1, Ordering::SeqCst) < self.readers
        {
            self.barrier.wait().await;
        }
        record
    }

    async fn put_record(
        &self,
        key: &RecordKey,
        expected: ExpectedVersion,
        value: bytes::Bytes,
    ) -> Result<u64, RecordError> {
        self.inner.put_record(key, expected, value).await
    }

    async fn delete_record(&self, key: &RecordKey, version: u64) -> Result<(), RecordError> {
        self.inner.delete_record(key, version).await
    }

    async fn list_records(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<RecordPage, BackendError> {
        self.inner.list_records(prefix, after, limit).await
    }
}

async fn servers_starting_together_agree_on_one_key(backend: Backend) {
    const SERVERS: usize = 4;
    let Some((inner, _dir)) = bare_store(backend).await else {
        return;
    };
    let store: Arc<dyn RecordStore> = Arc::new(ReadTogether {
        inner: inner.clone(),
        prefix: "identity/signing-key",
        readers: SERVERS,
        reads: AtomicUsize::new(0),
        barrier: Barrier::new(SERVERS),
    });
    let clock = Arc::new(ManualClock::new(START));
    let mut starts = tokio::task::JoinSet::new();
    for _ in 0..SERVERS {
        let (store, clock) = (store.clone(), clock.clone());
        starts.spawn(async move { Identity::open(store, config(), clock).await.unwrap() });
    }
    let mut servers = Vec::new();
    while let Some(server) = starts.join_next().await {
        servers.push(server.unwrap());
    }
    // And one started later, over the plain store.
    servers.push(Identity::open(inner, config(), clock).await.unwrap());
    servers[0]
        .create_user(&scope("acme"), &name("ana"), &password(PW), false)
        .await
        .unwrap();
    let principal = servers[0]
        .authenticate(&scope("acme"), &name("ana"), &password(PW))
        .await
        .unwrap();
    for issuer in &servers {
        let token = issuer.issue_tokens(&principal).unwrap().access.token;
        for verifier in &servers {
            verifier.verify_access_token(&token).await.unwrap();
        }
    }
}

/// Two refreshes with one token, both past the revocation check before either revokes it:
/// exactly one gets new tokens.
async fn racing_refreshes_of_one_token_let_one_win(backend: Backend) {
    let Some((inner, _dir)) = bare_store(backend).await else {
        return;
    };
    let store: Arc<dyn RecordStore> = Arc::new(ReadTogether {
        inner,
        prefix: "identity/revoked-tokens/",
        readers: 2,
        reads: AtomicUsize::new(0),
        barrier: Barrier::new(2),
    });
    let clock = Arc::new(ManualClock::new(START));
    let identity = Identity::open(store, config(), clock).await.unwrap();
    identity
        .create_user(&scope("acme"), &name("ana"), &password(PW), false)
        .await
        .unwrap();
    let principal = identity
        .authenticate(&scope("acme"), &name("ana"), &password(PW))
        .await
        .unwrap();
    let refresh = identity.issue_tokens(&principal).unwrap().refresh.token;
    let (a, b) = tokio::join!(identity.refresh(&refresh), identity.refresh(&refresh));
    let wins = [a.is_ok(), b.is_ok()].into_iter().filter(|ok| *ok).count();
    assert_eq!(wins, 1, "{:?} / {:?}", a.map(|_| ()), b.map(|_| ()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_refreshes_of_one_token_let_one_win_in_memory() {
    racing_refreshes_of_one_token_let_one_win(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_refreshes_of_one_token_let_one_win_on_sqlite() {
    racing_refreshes_of_one_token_let_one_win(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_refreshes_of_one_token_let_one_win_on_postgres() {
    racing_refreshes_of_one_token_let_one_win(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_starting_together_agree_on_one_key_in_memory() {
    servers_starting_together_agree_on_one_key(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_starting_together_agree_on_one_key_on_sqlite() {
    servers_starting_together_agree_on_one_key(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_starting_together_agree_on_one_key_on_postgres() {
    servers_starting_together_agree_on_one_key(Backend::Postgres).await;
}

#[test]
fn signing_keys_must_be_32_to_128_bytes() {
    assert!(matches!(
        SigningKey::new(vec![7u8; 31]),
        Err(SigningKeyError::Length(31))
    ));
    assert!(SigningKey::new(vec![7u8; 129]).is_err());
    SigningKey::new(vec![7u8; 32]).unwrap();
    SigningKey::new(vec![7u8; 128]).unwrap();
}

fn env_free_identity(config: IdentityConfig) -> Identity {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(Identity::open(
            Arc::new(pangolin_backend_memory::MemoryBackend::new()),
            config,
            Arc::new(ManualClock::new(START)),
        ))
        .unwrap()
}

#[test]
fn debug_output_of_keys_configuration_and_identity_shows_no_secret() {
    let secret = "a-signing-key-nobody-may-see-0123456789";
    let key = SigningKey::new(secret).unwrap();
    let config = IdentityConfig {
        signing_key: Some(key.clone()),
        ..config()
    };
    let identity = env_free_identity(config.clone());
    for debug in [
        format!("{key:?}"),
        format!("{config:?}"),
        format!("{identity:?}"),
    ] {
        assert!(!debug.contains(secret), "{debug}");
        assert!(!debug.contains("nobody"), "{debug}");
    }
}

on_every_backend!(
    tokens_round_trip_with_the_documented_claims,
    root_tokens_have_no_tenant,
    a_tampered_payload_is_refused,
    a_tampered_signature_is_refused,
    an_unsigned_alg_none_token_is_refused,
    a_token_signed_with_another_algorithm_and_the_same_key_is_refused,
    expired_tokens_are_refused_after_the_leeway,
    a_refresh_token_is_not_an_access_token_nor_the_reverse,
    logged_out_and_admin_revoked_tokens_are_refused,
    a_refresh_token_works_once,
    pruning_drops_only_revocations_of_expired_tokens,
    the_generated_key_survives_a_restart,
    service_tokens_stop_with_their_key,
);
