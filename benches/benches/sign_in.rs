//! Sign-in with an identity provider's token, on its hot path: a token the server has not seen
//! in the last moments is verified with the provider's kept keys (no fetch), beside the RS256
//! signature check alone as the baseline; and reading a token's claimed issuer, which every
//! bearer token that is not an API key pays to find its provider.

use std::hint::black_box;

use axum::Json;
use criterion::{Criterion, criterion_group, criterion_main};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use pangolin_oidc::{Issuer, IssuerSettings, unverified_issuer};
use serde_json::{Value, json};

/// The RSA key of the tests' service account: a key made for tests.
fn key() -> EncodingKey {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/pyiceberg/gcs/service-account.json"
    );
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the key file")).expect("JSON");
    let pem = file["private_key"].as_str().expect("a private key");
    EncodingKey::from_rsa_pem(pem.as_bytes()).expect("an RSA key")
}

/// A provider on loopback serving its discovery document and one key.
async fn provider(key: &EncodingKey) -> String {
    let mut jwk = Jwk::from_encoding_key(key, Algorithm::RS256).expect("a JWK");
    jwk.common.key_id = Some("k1".into());
    let set = JwkSet { keys: vec![jwk] };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let issuer = format!("http://{}", listener.local_addr().expect("an address"));
    let discovery = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")});
    let app = axum::Router::new()
        .route(
            "/.well-known/openid-configuration",
            axum::routing::get(move || async move { Json(discovery) }),
        )
        .route(
            "/jwks",
            axum::routing::get(move || async move { Json(set) }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serving") });
    issuer
}

fn token(key: &EncodingKey, issuer: &str) -> String {
    let now = unix_now();
    let claims = json!({"iss": issuer, "aud": "pangolin", "sub": "engine", "exp": now + 3600,
                        "iat": now, "preferred_username": "engine",
                        "groups": ["data-engineers", "analysts"]});
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("k1".into());
    jsonwebtoken::encode(&header, &claims, key).expect("a token")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

fn sign_in(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let key = key();
    let issuer_url = runtime.block_on(provider(&key));
    let token = token(&key, &issuer_url);
    let issuer =
        Issuer::new(IssuerSettings::new(&issuer_url, vec!["pangolin".into()])).expect("settings");
    // The first verification fetches the discovery document and the keys; the rest use them.
    runtime
        .block_on(issuer.verify(&token))
        .expect("a valid token");

    let jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).expect("a JWK");
    let decoding = DecodingKey::from_jwk(&jwk).expect("a decoding key");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&["pangolin"]);
    let mut group = c.benchmark_group("sign_in");
    group.bench_function("rs256_signature_alone", |b| {
        b.iter(|| {
            jsonwebtoken::decode::<Value>(black_box(&token), &decoding, &validation).expect("valid")
        })
    });
    group.bench_function("verify_with_kept_keys", |b| {
        b.iter(|| {
            runtime
                .block_on(issuer.verify(black_box(&token)))
                .expect("valid")
        })
    });
    group.bench_function("claimed_issuer", |b| {
        b.iter(|| unverified_issuer(black_box(&token)).expect("an issuer"))
    });
    group.finish();
}

criterion_group!(benches, sign_in);
criterion_main!(benches);
