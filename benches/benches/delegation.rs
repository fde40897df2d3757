//! Delegated storage access on its hot paths: each S3 request an engine has signed (checked
//! against the table's prefixes and signed with SigV4, beside SigV4 alone as the baseline),
//! the session policy of a vend, and a vend answered from the credential cache, which is what
//! every load of a busy table pays.

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::time::{Duration, SystemTime};

use axum::extract::Form;
use criterion::{Criterion, criterion_group, criterion_main};
use pangolin_delegation::s3::sign::{Endpoint, Keys, SignRequest, Signer, sign_request};
use pangolin_delegation::s3::{S3Prefix, StsConfig, StsVendor, session_policy};
use pangolin_delegation::{Access, Secret};

fn prefixes() -> Vec<S3Prefix> {
    vec![
        S3Prefix::parse("s3://lake/warehouse/sales/orders-9c12d44103fe46939a96a0705ddf69c1")
            .expect("a prefix"),
    ]
}

fn sign(c: &mut Criterion) {
    let endpoint = Endpoint::new(Some("http://127.0.0.1:9000"), "us-east-1").expect("an endpoint");
    let keys = Keys {
        access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
        secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        session_token: None,
    };
    let signer = Signer::new(endpoint, keys.clone());
    let request = SignRequest {
        region: "us-east-1".into(),
        uri: "http://127.0.0.1:9000/lake/warehouse/sales/orders-9c12d44103fe46939a96a0705ddf69c1/\
              data/00000-0-5f1c.parquet"
            .into(),
        method: "GET".into(),
        headers: BTreeMap::from([
            ("range".into(), vec!["bytes=0-65535".into()]),
            ("user-agent".into(), vec!["botocore/1.43".into()]),
        ]),
        properties: BTreeMap::new(),
        body: None,
        provider: None,
    };
    let prefixes = prefixes();
    // The baseline: SigV4 alone, without checking anything.
    c.bench_function("delegation/sigv4 only", |b| {
        b.iter(|| sign_request(black_box(&request), &keys, SystemTime::now()).expect("signed"))
    });
    c.bench_function("delegation/sign a GET", |b| {
        b.iter(|| {
            signer
                .sign(
                    black_box(&request),
                    &prefixes,
                    Access::Read,
                    SystemTime::now(),
                )
                .expect("signed")
        })
    });
    c.bench_function("delegation/session policy", |b| {
        b.iter(|| session_policy("aws", black_box(&prefixes), Access::ReadWrite).to_string())
    });
}

/// A token service on loopback that answers every `AssumeRole`.
async fn stand_in() -> String {
    async fn assume(Form(_): Form<HashMap<String, String>>) -> &'static str {
        "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIABENCH</AccessKeyId>\
         <SecretAccessKey>secret</SecretAccessKey><SessionToken>token</SessionToken>\
         <Expiration>2099-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleResult>\
         </AssumeRoleResponse>"
    }
    let app = axum::Router::new().route("/", axum::routing::post(assume));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serving") });
    url
}

fn vend(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let url = runtime.block_on(stand_in());
    let config = StsConfig {
        role_arn: "arn:aws:iam::123456789012:role/lake".into(),
        external_id: None,
        endpoint: Some(url),
        region: "us-east-1".into(),
        lifetime: Duration::from_secs(900),
    };
    let vendor = StsVendor::new(config, "AKIDBENCH", &Secret::new("secret"));
    let prefixes = prefixes();
    runtime
        .block_on(vendor.vend(&prefixes, Access::Read))
        .expect("vended");
    c.bench_function("delegation/vend from the cache", |b| {
        b.iter(|| {
            runtime
                .block_on(vendor.vend(black_box(&prefixes), Access::Read))
                .expect("cached")
        })
    });
}

criterion_group!(benches, sign, vend);
criterion_main!(benches);
