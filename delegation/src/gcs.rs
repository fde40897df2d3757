//! Google Cloud Storage: OAuth tokens of the warehouse's service account, downscoped to a
//! table's prefixes by a credential access boundary at Google's token exchange. The token an
//! engine gets can read (or write) objects below those prefixes and nothing else, whatever
//! the service account itself may do.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::cache::{CredentialCache, Expiring, refresh_margin};
use crate::{Access, Secret};

/// Google's token exchange, which downscopes tokens.
pub const DEFAULT_TOKEN_EXCHANGE: &str = "https://sts.googleapis.com/v1/token";
/// Google's token endpoint, when the key file names none.
const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// What the service account's own (source) token is for.
const SCOPE: &str = "https://www.googleapis.com/auth/devstorage.read_write";
/// How long Google's tokens live; what the cache's margin is taken from.
const TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// How long one call to a token endpoint may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A folder of a bucket: `gs://bucket/some/prefix`, read literally.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GcsPrefix {
    pub bucket: String,
    /// No leading or trailing slash; never empty.
    pub key: String,
}

impl GcsPrefix {
    /// The prefix of `gs://bucket/key`; `None` for other locations, a bucket's top, `.`, `..`
    /// or empty segments, and quotes or backslashes (which the boundary's condition quotes).
    pub fn parse(location: &str) -> Option<Self> {
        let (bucket, key) = location.strip_prefix("gs://")?.split_once('/')?;
        let key = key.trim_end_matches('/');
        let fine = !bucket.is_empty()
            && bucket
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
            && !key.is_empty()
            && key
                .split('/')
                .all(|s| !s.is_empty() && s != "." && s != "..")
            && !key.contains(['\'', '\\', '"']);
        fine.then(|| Self {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// `gs://bucket/key`.
    pub fn url(&self) -> String {
        format!("gs://{}/{}", self.bucket, self.key)
    }
}

/// The credential access boundary for `prefixes` at `access`: per prefix, the bucket as the
/// resource, the object viewer (or admin) role, and a condition limiting it to objects below
/// the prefix and to listings of it.
pub fn access_boundary(prefixes: &[GcsPrefix], access: Access) -> Value {
    let role = match access {
        Access::Read => "inRole:roles/storage.objectViewer",
        Access::ReadWrite => "inRole:roles/storage.objectAdmin",
    };
    let mut prefixes = prefixes.to_vec();
    prefixes.sort();
    prefixes.dedup();
    let rules: Vec<Value> = prefixes
        .iter()
        .map(|p| {
            json!({
                "availablePermissions": [role],
                "availableResource": format!("//storage.googleapis.com/projects/_/buckets/{}", p.bucket),
                "availabilityCondition": {
                    "expression": format!(
                        "resource.name.startsWith('projects/_/buckets/{}/objects/{}/') || \
                         api.getAttribute('storage.googleapis.com/objectListPrefix', '')\
                         .startsWith('{}/')",
                        p.bucket, p.key, p.key
                    ),
                },
            })
        })
        .collect();
    json!({"accessBoundary": {"accessBoundaryRules": rules}})
}

/// A token and when it stops working.
#[derive(Debug)]
pub struct Token {
    pub token: Secret,
    pub expires_at: SystemTime,
    pub access: Access,
}

impl Expiring for Token {
    fn expires_at(&self) -> SystemTime {
        self.expires_at
    }
}

/// Why no token was made. Messages carry the endpoint's words and never a token or key.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("the token endpoint {endpoint} refused: {status}: {message}")]
    Refused {
        endpoint: String,
        status: u16,
        message: String,
    },
    #[error("the token endpoint {endpoint} could not be reached: {reason}")]
    Unreachable { endpoint: String, reason: String },
    #[error("the token endpoint {endpoint} answered without a usable token: {reason}")]
    Malformed { endpoint: String, reason: String },
}

/// The fields of a service account key file that matter here (and to `object_store`, which
/// needs the key's id too).
#[derive(serde::Deserialize)]
struct KeyFile {
    client_email: String,
    private_key: String,
    private_key_id: String,
    #[serde(default)]
    token_uri: Option<String>,
}

impl KeyFile {
    fn parse(key_file: &Secret) -> Result<(Self, EncodingKey), String> {
        let file: Self = serde_json::from_str(key_file.expose()).map_err(|_| {
            "a service account key is the JSON file Google issues (client_email, \
             private_key_id, private_key)"
                .to_owned()
        })?;
        let key = EncodingKey::from_rsa_pem(file.private_key.as_bytes())
            .map_err(|_| "the service account's private key is not an RSA PEM key".to_owned())?;
        Ok((file, key))
    }
}

/// Checks that `key_file` is a service account's JSON key with an RSA key; the message says
/// what is wrong without quoting the file.
pub fn check_key_file(key_file: &Secret) -> Result<(), String> {
    KeyFile::parse(key_file).map(|_| ())
}

/// Downscopes the tokens of one service account.
pub struct Downscoper {
    client_email: String,
    key_id: String,
    key: EncodingKey,
    token_uri: String,
    exchange: String,
    http: reqwest::Client,
    /// The service account's own token, under an empty prefix list.
    source: CredentialCache<GcsPrefix, Token>,
    tokens: CredentialCache<GcsPrefix, Token>,
}

impl std::fmt::Debug for Downscoper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Downscoper")
            .field("client_email", &self.client_email)
            .field("exchange", &self.exchange)
            .finish_non_exhaustive()
    }
}

impl Downscoper {
    /// A downscoper for the service account of `key_file` (its JSON key), exchanging at
    /// `exchange` ([`DEFAULT_TOKEN_EXCHANGE`] on Google). Reaches nothing yet.
    pub fn new(key_file: &Secret, exchange: &str) -> Result<Self, String> {
        let (file, key) = KeyFile::parse(key_file)?;
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        let margin = refresh_margin(TOKEN_LIFETIME);
        Ok(Self {
            client_email: file.client_email,
            key_id: file.private_key_id,
            key,
            token_uri: file
                .token_uri
                .unwrap_or_else(|| DEFAULT_TOKEN_URI.to_owned()),
            exchange: exchange.to_owned(),
            http,
            source: CredentialCache::new(margin),
            tokens: CredentialCache::new(margin),
        })
    }

    /// A token for `prefixes` at `access`: from the cache while it has time left, else
    /// exchanged from the service account's token.
    #[tracing::instrument(level = "debug", skip_all, fields(access = %access, prefixes = prefixes.len()))]
    pub async fn token(
        &self,
        prefixes: &[GcsPrefix],
        access: Access,
    ) -> Result<Arc<Token>, TokenError> {
        let mut key = prefixes.to_vec();
        key.sort();
        key.dedup();
        self.tokens
            .get_or_fetch((key, access), |(prefixes, access)| async move {
                let source = self.source_token().await?;
                self.downscope(&source, &prefixes, access)
                    .await
                    .map(Arc::new)
            })
            .await
    }

    /// The service account's own token (OAuth 2.0 JWT bearer grant), cached.
    async fn source_token(&self) -> Result<Arc<Token>, TokenError> {
        self.source
            .get_or_fetch((Vec::new(), Access::ReadWrite), |_| async move {
                let now = jiff::Timestamp::now().as_second();
                let claims = json!({
                    "iss": self.client_email, "scope": SCOPE, "aud": self.token_uri,
                    "iat": now, "exp": now + 3600,
                });
                let mut header = Header::new(Algorithm::RS256);
                header.kid = Some(self.key_id.clone());
                let assertion = jsonwebtoken::encode(&header, &claims, &self.key).map_err(|e| {
                    TokenError::Malformed {
                        endpoint: self.token_uri.clone(),
                        reason: format!("the assertion cannot be signed: {e}"),
                    }
                })?;
                let form = [
                    ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                    ("assertion", assertion.as_str()),
                ];
                self.post(&self.token_uri, &form, Access::ReadWrite)
                    .await
                    .map(Arc::new)
            })
            .await
    }

    /// Exchanges `source` for a token limited by the access boundary of `prefixes`.
    async fn downscope(
        &self,
        source: &Token,
        prefixes: &[GcsPrefix],
        access: Access,
    ) -> Result<Token, TokenError> {
        let options = access_boundary(prefixes, access).to_string();
        let form = [
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            ("subject_token", source.token.expose()),
            ("options", options.as_str()),
        ];
        let mut token = self.post(&self.exchange, &form, access).await?;
        // A downscoped token lives no longer than the one it came from.
        token.expires_at = token.expires_at.min(source.expires_at);
        Ok(token)
    }

    /// POSTs a form to a token endpoint and reads `access_token` and `expires_in`.
    async fn post(
        &self,
        endpoint: &str,
        form: &[(&str, &str)],
        access: Access,
    ) -> Result<Token, TokenError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let answer = self
            .http
            .post(endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| TokenError::Unreachable {
                endpoint: endpoint.to_owned(),
                reason: e.to_string(),
            })?;
        let status = answer.status();
        let malformed = |reason: String| TokenError::Malformed {
            endpoint: endpoint.to_owned(),
            reason,
        };
        let value: Value = answer
            .json()
            .await
            .map_err(|e| malformed(format!("not JSON: {e}")))?;
        if !status.is_success() {
            let message = [&value["error"], &value["error_description"]]
                .iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(": ");
            return Err(TokenError::Refused {
                endpoint: endpoint.to_owned(),
                status: status.as_u16(),
                message,
            });
        }
        let token = value["access_token"]
            .as_str()
            .ok_or_else(|| malformed("no access_token".to_owned()))?;
        let seconds = value["expires_in"]
            .as_u64()
            .ok_or_else(|| malformed("no expires_in".to_owned()))?;
        Ok(Token {
            token: Secret::new(token),
            expires_at: SystemTime::now() + Duration::from_secs(seconds),
            access,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, OnceLock};

    use axum::Json;
    use axum::extract::{Form, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use jsonwebtoken::{DecodingKey, Validation};

    use super::*;

    /// A key made for these tests only.
    const PRIVATE_KEY: &str = r#"-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQC05nYP/3l6LYM0
HMHzbbXkG15a3mSTko4lkfSAK/WB7KCW2zU5rEYMq7FvxLhco7plPes+vyU3IbCT
4+0K4PdgGa+fyqQMQMZEiferZw4nVN680Y7kc2QE6npZ/9hwDH8s7NmUofrEzbJ3
f0OpXCjqV2Dw/BzpXT4TEAC4stblHe+kl8peNe+kTG7Yk4cRVdJ18aTjtEpXpBuC
ARnBfLpWnd10BW+FYFVf8M1Q3H6HTPyDzcIXxoJQjEnO4ffphXWz05EKmmFloEpe
EXf8tONEglPqPLQYklDV4jKuQefoaJan5xNvciFvNtT1oTi53wL0FEUVDVX/4ct4
YjVrIaq3AgMBAAECggEAHZmOHO0FEABNdSP1emLrvcDargywsVLsLmqU8rn+qH0z
A6wnp+Gv7pfTZ0Htlr71m2ZHzVMSgFRjY7eKTFrmL1PUoFVUhWq95m4a1/F7Z+Uj
swqpEmltJr7FOV+7Jw5sasnwijj84uHzf0kUJayeR0X350ahZm/q3cyjCZW9wuxe
C2OorxgCxJ/4z6vqCLAjmZKrJgWl9i0tiBGa3lMqRaJTFoaivT3b/JYU0QkIW3vU
pEyAG5M1lcT9QFfxDfE1vp1rWT7wFNozxvw1CO+/qGFDzF5UoOyf0Zt4Yu/aB+vI
Wn3uMsiVrJrY15Pyc4TXWbKEWbM5YTlG61FPUxrhHQKBgQDia5BGBkOvAthS42Wg
HDqPmXqAKIRMl28POo6e+snyfCVZlrn1aj8w60C52V5HcnGbAhxthnIwcUwozvPE
Ylr97IH1ZxJXlQyh7EZp3LaQhrw19l4muFWI/G2S43Xn3oS0YG3RK8zs3RuNDMMR
e2k1Uq06L93ezZ8X9UqPOFZqmwKBgQDMiIVcVrA2Lt7MXMUbi/p9J0zcBaPANf4H
M0Js1gw60VM+jaZaumT+0lbUc6QjwYxe7+wGG6D+1L6kb3i2tjmNELxVCwBQStKY
dQpOQX3+Ig2u8+0LCUlhM+omb98ijVy1pHag19pV1TyDWs5G9bZ3Qfxv+r2jX8tP
VuwXAumEFQKBgQCW4GRgNRZvDa9G9J6opYbkX7qAof8e5p4sALI/ABEIE2/0FftO
rQD0wR79ePpZE8reJvb4iOmYnDbKzrUjfQLzR+GFvKw9TmX/lGmLa3cAMbhDISu2
E4lz4fnGMupDm0TEyakEBHLmt6P/RqzJ/nmp/bDPIExxhoVoOpz3eOwk1wKBgFcl
xEz30tUDW4MP9BwspGo3GJSXApKfbsF6oc7l1QgqsKFykXMPAIFi9gRH0aQ6j6jT
6Wkg1JQ/6Yr+xBx1wEfO3bAOo++SMfErzVxSo3Bo6hOlc1bEejOkfxwphpWeTeZH
URRvZGQ2GzaMtl+dykU+JGVCHRNDeckwbB/R6dWRAoGBAJNvfO4MpAWN6iA9IPKs
m9SXDaC65sKD0XGqDw5UCnLwwrJZNYt9hOf7u2HF3KN3morrj3mlE+kyWa004u+C
gZABXfx30cJ3T/R65c6l20+gaAJIiaeW1Tgiri9wdddiybHl2T5Nxg1eYqbzbR+P
YDLUszpPkU0W96XDkisFLq/T
-----END PRIVATE KEY-----"#;
    const PUBLIC_KEY: &str = r#"-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtOZ2D/95ei2DNBzB8221
5BteWt5kk5KOJZH0gCv1geyglts1OaxGDKuxb8S4XKO6ZT3rPr8lNyGwk+PtCuD3
YBmvn8qkDEDGRIn3q2cOJ1TevNGO5HNkBOp6Wf/YcAx/LOzZlKH6xM2yd39DqVwo
6ldg8Pwc6V0+ExAAuLLW5R3vpJfKXjXvpExu2JOHEVXSdfGk47RKV6QbggEZwXy6
Vp3ddAVvhWBVX/DNUNx+h0z8g83CF8aCUIxJzuH36YV1s9ORCpphZaBKXhF3/LTj
RIJT6jy0GJJQ1eIyrkHn6GiWp+cTb3IhbzbU9aE4ud8C9BRFFQ1V/+HLeGI1ayGq
twIDAQAB
-----END PUBLIC KEY-----"#;

    fn prefix(location: &str) -> GcsPrefix {
        GcsPrefix::parse(location).unwrap()
    }

    #[test]
    fn prefixes_are_folders_of_buckets() {
        let p = prefix("gs://lake/wh/db/t-1/");
        assert_eq!((p.bucket.as_str(), p.key.as_str()), ("lake", "wh/db/t-1"));
        assert_eq!(p.url(), "gs://lake/wh/db/t-1");
        for bad in [
            "gs://lake",
            "gs://lake/",
            "gs://lake/a/../b",
            "gs://lake/a//b",
            "gs://lake/it's",
            "gs://Lake/a",
            "s3://lake/a",
        ] {
            assert_eq!(GcsPrefix::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_boundary_allows_objects_and_listings_below_each_prefix() {
        let boundary = access_boundary(&[prefix("gs://lake/wh/t")], Access::Read);
        assert_eq!(
            boundary,
            json!({"accessBoundary": {"accessBoundaryRules": [{
                "availablePermissions": ["inRole:roles/storage.objectViewer"],
                "availableResource": "//storage.googleapis.com/projects/_/buckets/lake",
                "availabilityCondition": {"expression":
                    "resource.name.startsWith('projects/_/buckets/lake/objects/wh/t/') || \
                     api.getAttribute('storage.googleapis.com/objectListPrefix', '')\
                     .startsWith('wh/t/')"}}]}})
        );
        let writer = access_boundary(
            &[
                prefix("gs://lake/wh/t"),
                prefix("gs://lake/wh/t/data"),
                prefix("gs://lake/wh/t"),
            ],
            Access::ReadWrite,
        );
        let rules = writer["accessBoundary"]["accessBoundaryRules"]
            .as_array()
            .unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[0]["availablePermissions"],
            json!(["inRole:roles/storage.objectAdmin"])
        );
    }

    /// Google's two endpoints, standing in: the token endpoint checks the JWT assertion with
    /// the key's public half and records its claims; the exchange records each form, and
    /// refuses while `refuse` is set.
    #[derive(Clone, Default)]
    struct Google {
        url: Arc<OnceLock<String>>,
        assertions: Arc<Mutex<Vec<Value>>>,
        exchanges: Arc<Mutex<Vec<HashMap<String, String>>>>,
        refuse: Arc<AtomicBool>,
    }

    impl Google {
        async fn start() -> Self {
            let google = Self::default();
            let app = axum::Router::new()
                .route("/token", axum::routing::post(source_token))
                .route("/v1/token", axum::routing::post(exchange))
                .with_state(google.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            google.url.set(url).unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            google
        }

        fn url(&self) -> &str {
            self.url.get().unwrap()
        }

        fn key_file(&self) -> Secret {
            Secret::new(
                json!({"type": "service_account", "client_email": "lake@p.iam.gserviceaccount.com",
                       "private_key_id": "k1", "private_key": PRIVATE_KEY,
                       "token_uri": format!("{}/token", self.url())})
                .to_string(),
            )
        }
    }

    async fn source_token(
        State(google): State<Google>,
        Form(form): Form<HashMap<String, String>>,
    ) -> Response {
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_audience(&[format!("{}/token", google.url())]);
        let key = DecodingKey::from_rsa_pem(PUBLIC_KEY.as_bytes()).unwrap();
        let grant = form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer";
        match jsonwebtoken::decode::<Value>(&form["assertion"], &key, &validation) {
            Ok(decoded) if grant && decoded.header.kid.as_deref() == Some("k1") => {
                let mut assertions = google.assertions.lock().unwrap();
                assertions.push(decoded.claims);
                let n = assertions.len();
                Json(
                    json!({"access_token": format!("source-{n}"), "expires_in": 3599,
                            "token_type": "Bearer"}),
                )
                .into_response()
            }
            _ => (
                StatusCode::UNAUTHORIZED,
                Json(json!({"error": "invalid_grant"})),
            )
                .into_response(),
        }
    }

    async fn exchange(
        State(google): State<Google>,
        Form(form): Form<HashMap<String, String>>,
    ) -> Response {
        if google.refuse.load(Ordering::SeqCst) {
            let body = json!({"error": "invalid_request",
                              "error_description": "The access boundary is invalid."});
            return (StatusCode::BAD_REQUEST, Json(body)).into_response();
        }
        let mut exchanges = google.exchanges.lock().unwrap();
        exchanges.push(form);
        let n = exchanges.len();
        Json(
            json!({"access_token": format!("downscoped-{n}"), "expires_in": 3000,
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                    "token_type": "Bearer"}),
        )
        .into_response()
    }

    #[tokio::test]
    async fn tokens_are_exchanged_for_the_prefixes_and_kept() {
        let google = Google::start().await;
        let downscoper =
            Downscoper::new(&google.key_file(), &format!("{}/v1/token", google.url())).unwrap();
        let table = [prefix("gs://lake/wh/t")];
        let read = downscoper.token(&table, Access::Read).await.unwrap();
        assert_eq!(read.token.expose(), "downscoped-1");
        let left = read.expires_at.duration_since(SystemTime::now()).unwrap();
        assert!(left <= Duration::from_secs(3000) && left > Duration::from_secs(2990));

        // The service account asked for its own token with a signed assertion...
        let claims = google.assertions.lock().unwrap()[0].clone();
        assert_eq!(claims["iss"], "lake@p.iam.gserviceaccount.com");
        assert_eq!(claims["scope"], SCOPE);
        assert_eq!(claims["aud"], format!("{}/token", google.url()));
        // ...and exchanged it for one bounded to the table's prefix.
        let form = google.exchanges.lock().unwrap()[0].clone();
        assert_eq!(
            form["grant_type"],
            "urn:ietf:params:oauth:grant-type:token-exchange"
        );
        assert_eq!(
            form["subject_token_type"],
            "urn:ietf:params:oauth:token-type:access_token"
        );
        assert_eq!(
            form["requested_token_type"],
            "urn:ietf:params:oauth:token-type:access_token"
        );
        assert_eq!(form["subject_token"], "source-1");
        let options: Value = serde_json::from_str(&form["options"]).unwrap();
        assert_eq!(options, access_boundary(&table, Access::Read));

        // Kept while fresh; a writer gets its own token from the same source token.
        let again = downscoper.token(&table, Access::Read).await.unwrap();
        assert_eq!(again.token.expose(), "downscoped-1");
        let write = downscoper.token(&table, Access::ReadWrite).await.unwrap();
        assert_eq!(write.token.expose(), "downscoped-2");
        assert_eq!(google.exchanges.lock().unwrap().len(), 2);
        assert_eq!(google.assertions.lock().unwrap().len(), 1);

        // The exchange's refusal, in its words; an endpoint nobody answers.
        google.refuse.store(true, Ordering::SeqCst);
        let err = downscoper
            .token(&[prefix("gs://lake/wh/u")], Access::Read)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, TokenError::Refused { status: 400, message, .. }
                if message == "invalid_request: The access boundary is invalid."),
            "{err}"
        );
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let nowhere =
            Downscoper::new(&google.key_file(), &format!("http://{closed}/v1/token")).unwrap();
        let err = nowhere.token(&table, Access::Read).await.unwrap_err();
        assert!(matches!(err, TokenError::Unreachable { .. }), "{err}");
    }

    #[test]
    fn a_key_file_is_googles_json_with_an_rsa_key() {
        let exchange = DEFAULT_TOKEN_EXCHANGE;
        assert!(Downscoper::new(&Secret::new("{}"), exchange).is_err());
        let not_rsa = json!({"client_email": "a", "private_key_id": "k", "private_key": "nope"});
        assert!(Downscoper::new(&Secret::new(not_rsa.to_string()), exchange).is_err());
        let no_id = json!({"client_email": "a", "private_key": PRIVATE_KEY}).to_string();
        assert!(check_key_file(&Secret::new(no_id)).is_err());
        let fine = json!({"client_email": "a", "private_key_id": "k", "private_key": PRIVATE_KEY});
        let fine = Secret::new(fine.to_string());
        assert!(check_key_file(&fine).is_ok());
        assert!(Downscoper::new(&fine, exchange).is_ok());
    }
}
