//! Remote signing: an S3 request an engine wants to make, checked against a table's prefixes
//! and the caller's access, then signed with the warehouse's keys. The engine never holds a
//! key; the catalog signs only what it can vouch for.
//!
//! What is signed: object reads (`GET`/`HEAD`), object writes and deletes (`PUT`, `DELETE`,
//! multipart uploads, `DeleteObjects` whose body lists only keys inside the prefixes),
//! listings whose `prefix` is inside them, and `HeadBucket`/`GetBucketLocation` on their
//! buckets. Everything else (ACLs, policies, tagging, copies, versioned deletes, any
//! sub-resource or `x-amz-*` header not listed here) is refused.

use std::collections::BTreeMap;
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use percent_encoding::percent_decode_str;

use super::S3Prefix;
use crate::{Access, Secret};

/// A request to sign, as the Iceberg REST protocol's `RemoteSignRequest` has it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SignRequest {
    pub region: String,
    pub uri: String,
    pub method: String,
    #[serde(default)]
    pub headers: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// Only for requests whose body decides what they do (`DeleteObjects`).
    #[serde(default)]
    pub body: Option<String>,
    /// `s3` when absent.
    #[serde(default)]
    pub provider: Option<String>,
}

/// The signed request: the URI to send and the headers to add.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Signed {
    pub uri: String,
    pub headers: BTreeMap<String, Vec<String>>,
}

/// Why a request was not signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The request is well formed but goes beyond what the caller may do.
    #[error("{0}")]
    Refused(String),
    /// The request cannot be understood.
    #[error("{0}")]
    Invalid(String),
}

/// The S3 endpoint a warehouse's requests go to, as signing must see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    scheme: String,
    /// `host[:port]` of path-style requests; virtual-hosted ones prefix it with the bucket.
    authorities: Vec<String>,
    region: String,
}

impl Endpoint {
    /// The endpoint of an S3-compatible server (`http://127.0.0.1:9000`), or AWS's in
    /// `region` when `None`.
    pub fn new(endpoint: Option<&str>, region: &str) -> Result<Self, String> {
        let Some(endpoint) = endpoint else {
            return Ok(Self {
                scheme: "https".to_owned(),
                authorities: vec![
                    format!("s3.{region}.amazonaws.com"),
                    "s3.amazonaws.com".to_owned(),
                ],
                region: region.to_owned(),
            });
        };
        let url = url::Url::parse(endpoint).map_err(|e| format!("`{endpoint}`: {e}"))?;
        Ok(Self {
            scheme: url.scheme().to_owned(),
            authorities: vec![authority(&url).ok_or_else(|| format!("`{endpoint}` has no host"))?],
            region: region.to_owned(),
        })
    }
}

fn authority(url: &url::Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// The warehouse's keys, which sign.
#[derive(Debug, Clone)]
pub struct Keys {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    pub session_token: Option<Secret>,
}

/// What a checked request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Read,
    Write,
}

/// `x-amz-*` headers that do not change what a request may touch or who may see it.
const VOUCHED_HEADERS: &[&str] = &[
    "x-amz-content-sha256",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-user-agent",
    "x-amz-sdk-checksum-algorithm",
    "x-amz-checksum-algorithm",
    "x-amz-checksum-mode",
    "x-amz-decoded-content-length",
    "x-amz-trailer",
    "x-amz-expected-bucket-owner",
    "x-amz-request-payer",
    "x-amz-storage-class",
    "x-amz-server-side-encryption",
    "x-amz-server-side-encryption-aws-kms-key-id",
    "x-amz-server-side-encryption-context",
    "x-amz-server-side-encryption-bucket-key-enabled",
    "x-amz-server-side-encryption-customer-algorithm",
    "x-amz-server-side-encryption-customer-key",
    "x-amz-server-side-encryption-customer-key-md5",
];
const VOUCHED_HEADER_PREFIXES: &[&str] = &["x-amz-checksum-", "x-amz-meta-"];
/// Set by the signature itself, never taken from the request.
const SIGNATURE_HEADERS: &[&str] = &[
    "authorization",
    "x-amz-date",
    "x-amz-content-sha256",
    "x-amz-security-token",
];
/// Listing parameters (`ListObjects`, `ListObjectsV2`).
const LIST_PARAMETERS: &[&str] = &[
    "list-type",
    "prefix",
    "delimiter",
    "max-keys",
    "continuation-token",
    "start-after",
    "encoding-type",
    "fetch-owner",
    "marker",
];

/// Signs requests to one warehouse's S3 endpoint with its keys, for callers whose table and
/// access are given per request.
#[derive(Debug)]
pub struct Signer {
    endpoint: Endpoint,
    keys: Keys,
}

impl Signer {
    pub fn new(endpoint: Endpoint, keys: Keys) -> Self {
        Self { endpoint, keys }
    }

    /// [`check`]s `request` for `prefixes` at `access`, then signs it as of `now`.
    pub fn sign(
        &self,
        request: &SignRequest,
        prefixes: &[S3Prefix],
        access: Access,
        now: SystemTime,
    ) -> Result<Signed, SignError> {
        check(request, &self.endpoint, prefixes, access)?;
        sign_request(request, &self.keys, now)
    }
}

/// Checks `request` against the table's `prefixes` and the caller's `access`; says what it
/// does when it may be signed.
pub fn check(
    request: &SignRequest,
    endpoint: &Endpoint,
    prefixes: &[S3Prefix],
    access: Access,
) -> Result<Operation, SignError> {
    if let Some(provider) = &request.provider
        && provider != "s3"
    {
        return Err(SignError::Invalid(format!(
            "only s3 requests are signed, not `{provider}`"
        )));
    }
    if request.region != endpoint.region {
        return Err(SignError::Refused(format!(
            "the request is for region `{}`; this warehouse's is `{}`",
            request.region, endpoint.region
        )));
    }
    for name in request.headers.keys() {
        let name = name.to_ascii_lowercase();
        let vouched = VOUCHED_HEADERS.contains(&name.as_str())
            || VOUCHED_HEADER_PREFIXES.iter().any(|p| name.starts_with(p));
        if name.starts_with("x-amz-") && !vouched {
            return Err(SignError::Refused(format!(
                "requests with the header `{name}` are not signed"
            )));
        }
    }
    let url = url::Url::parse(&request.uri)
        .map_err(|e| SignError::Invalid(format!("`{}` is not a URL: {e}", request.uri)))?;
    let (bucket, key) = target(&url, endpoint)?;
    let query: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    let names: Vec<&str> = query.keys().map(String::as_str).collect();
    let only = |allowed: &[&str]| names.iter().all(|n| allowed.contains(n));
    let method = request.method.to_ascii_uppercase();
    let object = || {
        if prefixes.iter().any(|p| p.contains(&bucket, &key)) {
            Ok(())
        } else {
            Err(SignError::Refused(format!(
                "`s3://{bucket}/{key}` is outside the table's location"
            )))
        }
    };
    let cannot = || {
        SignError::Refused(format!(
            "{method} requests with `{}` are not signed",
            if names.is_empty() {
                "no parameters".to_owned()
            } else {
                names.join("&")
            }
        ))
    };
    let operation = match (method.as_str(), key.is_empty()) {
        ("GET" | "HEAD", false) if only(&["versionId", "partNumber"]) => {
            object()?;
            Operation::Read
        }
        ("GET", false) if only(&["uploadId", "max-parts", "part-number-marker"]) => {
            object()?;
            Operation::Write
        }
        ("PUT", false) if names.is_empty() || sorted(&names) == ["partNumber", "uploadId"] => {
            object()?;
            Operation::Write
        }
        ("POST", false) if names == ["uploads"] || names == ["uploadId"] => {
            object()?;
            Operation::Write
        }
        ("DELETE", false) if names.is_empty() || names == ["uploadId"] => {
            object()?;
            Operation::Write
        }
        ("GET", true) if names == ["location"] => {
            own_bucket(prefixes, &bucket)?;
            Operation::Read
        }
        ("HEAD", true) if names.is_empty() => {
            own_bucket(prefixes, &bucket)?;
            Operation::Read
        }
        ("GET", true) if !names.is_empty() && only(LIST_PARAMETERS) => {
            let prefix = query.get("prefix").map(String::as_str).unwrap_or_default();
            if !prefixes.iter().any(|p| p.covers_listing(&bucket, prefix)) {
                return Err(SignError::Refused(format!(
                    "listing `s3://{bucket}/{prefix}` goes beyond the table's location"
                )));
            }
            Operation::Read
        }
        ("POST", true) if names == ["delete"] => {
            let body = request.body.as_deref().ok_or_else(|| {
                SignError::Invalid("a DeleteObjects request is signed only with its body".into())
            })?;
            for key in deleted_keys(body)? {
                if !prefixes.iter().any(|p| p.contains(&bucket, &key)) {
                    return Err(SignError::Refused(format!(
                        "deleting `s3://{bucket}/{key}` is outside the table's location"
                    )));
                }
            }
            Operation::Write
        }
        _ => return Err(cannot()),
    };
    if operation == Operation::Write && access == Access::Read {
        return Err(SignError::Refused(format!(
            "a read-only caller's {method} on `s3://{bucket}/{key}` is not signed"
        )));
    }
    Ok(operation)
}

fn sorted<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let mut names = names.to_vec();
    names.sort_unstable();
    names
}

fn own_bucket(prefixes: &[S3Prefix], bucket: &str) -> Result<(), SignError> {
    if prefixes.iter().any(|p| p.bucket == bucket) {
        Ok(())
    } else {
        Err(SignError::Refused(format!(
            "bucket `{bucket}` is not the table's"
        )))
    }
}

/// Bucket and decoded key of a request to `endpoint`, path-style or virtual-hosted.
fn target(url: &url::Url, endpoint: &Endpoint) -> Result<(String, String), SignError> {
    let refused = || {
        SignError::Refused(format!(
            "`{url}` is not a request to this warehouse's storage"
        ))
    };
    if url.scheme() != endpoint.scheme {
        return Err(refused());
    }
    let authority = authority(url).ok_or_else(refused)?;
    let path = url.path().strip_prefix('/').unwrap_or(url.path());
    let (bucket, key) = if endpoint.authorities.contains(&authority) {
        path.split_once('/').unwrap_or((path, ""))
    } else {
        let bucket = endpoint
            .authorities
            .iter()
            .find_map(|base| authority.strip_suffix(base.as_str())?.strip_suffix('.'))
            .ok_or_else(refused)?;
        (bucket, path)
    };
    let decode = |part: &str| {
        percent_decode_str(part)
            .decode_utf8()
            .map(|s| s.into_owned())
            .map_err(|_| SignError::Invalid(format!("`{url}` has a key that is not UTF-8")))
    };
    let bucket = decode(bucket)?;
    if bucket.is_empty() {
        return Err(SignError::Refused(format!("`{url}` names no bucket")));
    }
    Ok((bucket, decode(key)?))
}

/// The keys a `DeleteObjects` body lists. Versioned deletes and anything this reading does
/// not understand are refused rather than guessed at.
fn deleted_keys(body: &str) -> Result<Vec<String>, SignError> {
    if body.contains("<VersionId>") {
        return Err(SignError::Refused(
            "deleting object versions is not signed".into(),
        ));
    }
    if body.contains("&#") || body.contains("<![CDATA[") {
        return Err(SignError::Refused(
            "a DeleteObjects body with character references is not signed".into(),
        ));
    }
    let mut keys = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("<Key>") {
        let after = &rest[start + "<Key>".len()..];
        let end = after
            .find("</Key>")
            .ok_or_else(|| SignError::Invalid("a DeleteObjects body is malformed".into()))?;
        keys.push(
            after[..end]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        );
        rest = &after[end + "</Key>".len()..];
    }
    if keys.is_empty() {
        return Err(SignError::Invalid(
            "a DeleteObjects body lists no key".into(),
        ));
    }
    Ok(keys)
}

/// Signs a request that [`check`] let through, with `keys`, at `now`.
pub fn sign_request(
    request: &SignRequest,
    keys: &Keys,
    now: SystemTime,
) -> Result<Signed, SignError> {
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, values)| values.join(","))
    };
    let given_hash = header("x-amz-content-sha256");
    let body = match (&request.body, given_hash.as_deref()) {
        (Some(body), _) if request.method.eq_ignore_ascii_case("POST") => {
            SignableBody::Bytes(body.as_bytes())
        }
        (_, None | Some("UNSIGNED-PAYLOAD")) => SignableBody::UnsignedPayload,
        (_, Some("STREAMING-UNSIGNED-PAYLOAD-TRAILER")) => {
            SignableBody::StreamingUnsignedPayloadTrailer
        }
        (_, Some(hash)) if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            SignableBody::Precomputed(hash.to_ascii_lowercase())
        }
        (_, Some(other)) => {
            return Err(SignError::Refused(format!(
                "a payload of `{other}` is not signed"
            )));
        }
    };
    let signed_headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(name, values)| (name.to_ascii_lowercase(), values.join(",")))
        .filter(|(name, _)| {
            (name.starts_with("x-amz-") || name == "content-md5")
                && !SIGNATURE_HEADERS.contains(&name.as_str())
        })
        .collect();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let identity = Credentials::new(
        &keys.access_key_id,
        keys.secret_access_key.expose(),
        keys.session_token.as_ref().map(|t| t.expose().to_owned()),
        None,
        "pangolin-warehouse",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&request.region)
        .name("s3")
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| SignError::Invalid(e.to_string()))?
        .into();
    let signable = SignableRequest::new(
        &request.method,
        request.uri.as_str(),
        signed_headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        body,
    )
    .map_err(|e| SignError::Invalid(format!("the request cannot be signed: {e}")))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| SignError::Invalid(format!("the request cannot be signed: {e}")))?
        .into_parts();
    let (headers, _) = instructions.into_parts();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for header in headers {
        out.insert(header.name().to_owned(), vec![header.value().to_owned()]);
    }
    if let (Some(given), Some(signed)) = (&given_hash, out.get("x-amz-content-sha256"))
        && signed.first() != Some(given)
    {
        // The body that was checked is the one signed; a client that says it will send
        // another could delete keys nobody checked.
        return Err(SignError::Refused(
            "the payload hash does not match the body that was checked".into(),
        ));
    }
    Ok(Signed {
        uri: request.uri.clone(),
        headers: out,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn request(method: &str, uri: &str) -> SignRequest {
        SignRequest {
            region: "us-east-1".into(),
            uri: uri.into(),
            method: method.into(),
            headers: BTreeMap::new(),
            properties: BTreeMap::new(),
            body: None,
            provider: None,
        }
    }

    fn local() -> Endpoint {
        Endpoint::new(Some("http://127.0.0.1:9000"), "us-east-1").unwrap()
    }

    fn table() -> Vec<S3Prefix> {
        vec![S3Prefix::parse("s3://lake/wh/db/t").unwrap()]
    }

    fn verdict(request: &SignRequest, access: Access) -> Result<Operation, SignError> {
        check(request, &local(), &table(), access)
    }

    fn refused(request: &SignRequest, access: Access, expected: &str) {
        match verdict(request, access) {
            Err(SignError::Refused(message)) => assert!(message.contains(expected), "{message}"),
            other => panic!("{request:?}: {other:?}"),
        }
    }

    const BASE: &str = "http://127.0.0.1:9000/lake/wh/db/t";

    #[test]
    fn reads_and_writes_inside_the_table_are_signed() {
        let read = Access::Read;
        let write = Access::ReadWrite;
        let object = format!("{BASE}/data/a%20b.parquet");
        assert_eq!(verdict(&request("GET", &object), read), Ok(Operation::Read));
        assert_eq!(
            verdict(&request("HEAD", &object), read),
            Ok(Operation::Read)
        );
        assert_eq!(
            verdict(&request("PUT", &object), write),
            Ok(Operation::Write)
        );
        assert_eq!(
            verdict(&request("DELETE", &object), write),
            Ok(Operation::Write)
        );
        let upload = format!("{object}?uploads");
        assert_eq!(
            verdict(&request("POST", &upload), write),
            Ok(Operation::Write)
        );
        let part = format!("{object}?partNumber=2&uploadId=x");
        assert_eq!(verdict(&request("PUT", &part), write), Ok(Operation::Write));
        let list = "http://127.0.0.1:9000/lake?list-type=2&prefix=wh%2Fdb%2Ft%2Fmetadata%2F";
        assert_eq!(verdict(&request("GET", list), read), Ok(Operation::Read));
        let named = Endpoint::new(Some("http://s3.internal:9000"), "us-east-1").unwrap();
        let virtual_hosted = request("GET", "http://lake.s3.internal:9000/wh/db/t/v1.json");
        assert_eq!(
            check(&virtual_hosted, &named, &table(), read),
            Ok(Operation::Read)
        );
        let path_style = request("GET", "http://s3.internal:9000/lake/wh/db/t/v1.json");
        assert_eq!(
            check(&path_style, &named, &table(), read),
            Ok(Operation::Read)
        );
        let other = request("GET", "http://lake.s3.internal.evil:9000/wh/db/t/v1.json");
        assert!(check(&other, &named, &table(), read).is_err());
        let aws = Endpoint::new(None, "eu-west-1").unwrap();
        let mut on_aws = request("GET", "https://lake.s3.eu-west-1.amazonaws.com/wh/db/t/x");
        on_aws.region = "eu-west-1".into();
        assert_eq!(check(&on_aws, &aws, &table(), read), Ok(Operation::Read));
        let mut headers = request("PUT", &object);
        headers
            .headers
            .insert("x-amz-meta-writer".into(), vec!["spark".into()]);
        headers
            .headers
            .insert("X-Amz-Checksum-Crc32".into(), vec!["AAAA".into()]);
        headers
            .headers
            .insert("Content-Type".into(), vec!["binary".into()]);
        assert_eq!(verdict(&headers, write), Ok(Operation::Write));
    }

    #[test]
    fn anything_else_is_refused() {
        let write = Access::ReadWrite;
        refused(
            &request("GET", "http://127.0.0.1:9000/lake/wh/db/t2/x"),
            write,
            "outside",
        );
        refused(
            &request("GET", "http://127.0.0.1:9000/lake/wh/db/t"),
            write,
            "outside",
        );
        refused(
            &request("GET", "http://127.0.0.1:9000/other/wh/db/t/x"),
            write,
            "outside",
        );
        refused(
            &request("GET", &format!("{BASE}/../t2/x")),
            write,
            "outside",
        );
        refused(
            &request("GET", &format!("{BASE}/%2E%2E/t2/x")),
            write,
            "outside",
        );
        refused(
            &request("GET", "http://evil:9000/lake/wh/db/t/x"),
            write,
            "not a request to",
        );
        refused(
            &request("GET", "https://127.0.0.1:9000/lake/wh/db/t/x"),
            write,
            "not a request",
        );
        refused(
            &request("PUT", &format!("{BASE}/x")),
            Access::Read,
            "read-only",
        );
        refused(
            &request("DELETE", &format!("{BASE}/x")),
            Access::Read,
            "read-only",
        );
        refused(
            &request("PUT", &format!("{BASE}/x?acl")),
            write,
            "not signed",
        );
        refused(
            &request("GET", &format!("{BASE}/x?tagging")),
            write,
            "not signed",
        );
        refused(
            &request("DELETE", &format!("{BASE}/x?versionId=3")),
            write,
            "not signed",
        );
        refused(&request("PATCH", &format!("{BASE}/x")), write, "not signed");
        refused(
            &request(
                "GET",
                "http://127.0.0.1:9000/lake?list-type=2&prefix=wh%2Fdb%2Ft",
            ),
            write,
            "beyond",
        );
        refused(
            &request("GET", "http://127.0.0.1:9000/lake?list-type=2"),
            write,
            "beyond",
        );
        refused(
            &request("GET", "http://127.0.0.1:9000/lake?policy"),
            write,
            "not signed",
        );
        refused(
            &request("PUT", "http://127.0.0.1:9000/lake"),
            write,
            "not signed",
        );
        let mut copy = request("PUT", &format!("{BASE}/x"));
        copy.headers
            .insert("x-amz-copy-source".into(), vec!["/lake/secret".into()]);
        refused(&copy, write, "x-amz-copy-source");
        let mut acl = request("PUT", &format!("{BASE}/x"));
        acl.headers
            .insert("X-Amz-Acl".into(), vec!["public-read".into()]);
        refused(&acl, write, "x-amz-acl");
        let mut region = request("GET", &format!("{BASE}/x"));
        region.region = "eu-west-1".into();
        refused(&region, write, "region");
        let mut gcs = request("GET", &format!("{BASE}/x"));
        gcs.provider = Some("gcs".into());
        assert!(matches!(verdict(&gcs, write), Err(SignError::Invalid(_))));
    }

    #[test]
    fn a_bulk_delete_is_signed_only_for_keys_of_the_table_and_with_its_body() {
        let uri = "http://127.0.0.1:9000/lake?delete";
        let body = |keys: &[&str]| {
            let objects: String = keys
                .iter()
                .map(|k| format!("<Object><Key>{k}</Key></Object>"))
                .collect();
            format!("<Delete>{objects}<Quiet>true</Quiet></Delete>")
        };
        let mut delete = request("POST", uri);
        assert!(matches!(
            verdict(&delete, Access::ReadWrite),
            Err(SignError::Invalid(_))
        ));
        delete.body = Some(body(&["wh/db/t/a", "wh/db/t/b&amp;c"]));
        assert_eq!(verdict(&delete, Access::ReadWrite), Ok(Operation::Write));
        refused(&delete, Access::Read, "read-only");
        delete.body = Some(body(&["wh/db/t/a", "wh/db/other/b"]));
        refused(&delete, Access::ReadWrite, "outside");
        delete.body = Some(
            "<Delete><Object><Key>wh/db/t/a</Key><VersionId>1</VersionId></Object></Delete>".into(),
        );
        refused(&delete, Access::ReadWrite, "versions");

        // The signature covers the checked body: a client announcing another is refused.
        let keys = Keys {
            access_key_id: "AKID".into(),
            secret_access_key: Secret::new("secret"),
            session_token: None,
        };
        delete.body = Some(body(&["wh/db/t/a"]));
        let signed = sign_request(&delete, &keys, SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(signed.headers["x-amz-content-sha256"][0].len(), 64);
        delete.headers.insert(
            "x-amz-content-sha256".into(),
            vec!["UNSIGNED-PAYLOAD".into()],
        );
        assert!(matches!(
            sign_request(&delete, &keys, SystemTime::UNIX_EPOCH),
            Err(SignError::Refused(_))
        ));
    }

    /// AWS's published example of a signed `ListObjects` request (Signature Version 4,
    /// "Examples: Signature Calculations in AWS Signature Version 4", GET Bucket).
    #[test]
    fn signatures_match_the_published_example() {
        let mut list = request(
            "GET",
            "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J",
        );
        list.headers.insert(
            "x-amz-content-sha256".into(),
            vec!["e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into()],
        );
        let keys = Keys {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            session_token: None,
        };
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_369_353_600);
        let signed = sign_request(&list, &keys, at).unwrap();
        assert_eq!(
            signed.headers["authorization"],
            [
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
                 SignedHeaders=host;x-amz-content-sha256;x-amz-date, \
                 Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
            ]
        );
        assert_eq!(signed.headers["x-amz-date"], ["20130524T000000Z"]);
        assert_eq!(signed.uri, list.uri);

        // Temporary keys add their token, and a request that gives no payload hash is
        // signed as an unsigned payload.
        let temporary = Keys {
            session_token: Some(Secret::new("token")),
            ..keys
        };
        let signed = sign_request(&request("GET", &format!("{BASE}/x")), &temporary, at).unwrap();
        assert_eq!(signed.headers["x-amz-security-token"], ["token"]);
        assert_eq!(signed.headers["x-amz-content-sha256"], ["UNSIGNED-PAYLOAD"]);
    }
}
