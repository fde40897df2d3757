//! How people get a provider's tokens (OAuth 2.0, as clients of the provider): the
//! authorization code grant with PKCE (RFC 7636) for the web UI, the device authorization
//! grant (RFC 8628) for the command line, and the refresh token grant for both. The provider's
//! own pages do the signing in; these only build its URLs and speak to its token endpoint.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use sha2::Digest as _;

use crate::discovery::FETCH_TIMEOUT;

/// A client of the provider: its id, and its secret when it is a confidential one.
#[derive(Debug, Clone, Copy)]
pub struct OAuthClient<'a> {
    pub id: &'a str,
    pub secret: Option<&'a str>,
}

impl OAuthClient<'_> {
    fn form(&self) -> Vec<(&'static str, String)> {
        let mut form = vec![("client_id", self.id.to_owned())];
        if let Some(secret) = self.secret {
            form.push(("client_secret", secret.to_owned()));
        }
        form
    }
}

/// A token endpoint's answer to a grant.
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct TokenAnswer {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    #[serde(default)]
    pub expires_in: Option<u64>,
    /// How long the refresh token lasts, where the provider says (Keycloak does).
    #[serde(default)]
    pub refresh_expires_in: Option<u64>,
    #[serde(default)]
    pub id_token: Option<String>,
}

impl std::fmt::Debug for TokenAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenAnswer")
            .field("expires_in", &self.expires_in)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .finish_non_exhaustive()
    }
}

/// Why a grant gave no tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    /// The provider answered with an OAuth error (`invalid_grant`, `access_denied`, ...).
    #[error("the identity provider refused: {code}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        code: String,
        description: Option<String>,
    },
    /// The provider could not be reached or answered nonsense.
    #[error("the identity provider at {url} {reason}")]
    Unavailable { url: String, reason: String },
}

/// A PKCE pair: the verifier stays with whoever started the sign-in, the challenge goes into
/// the authorization URL.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

/// 32 random bytes, base64url: a PKCE verifier, a `state` or a `nonce`.
pub fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

impl Pkce {
    /// A fresh pair, with the S256 method (the only one offered: `plain` shows the verifier).
    pub fn new() -> Result<Self, getrandom::Error> {
        random_token().map(Self::of)
    }

    fn of(verifier: String) -> Self {
        let challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
        Self {
            verifier,
            challenge,
        }
    }
}

/// What an authorization URL asks for.
#[derive(Debug, Clone, Copy)]
pub struct AuthorizationRequest<'a> {
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub scopes: &'a [String],
    pub state: &'a str,
    pub nonce: &'a str,
    pub challenge: &'a str,
}

/// The provider's authorization URL for the code grant with PKCE.
pub fn authorization_url(
    endpoint: &str,
    request: AuthorizationRequest<'_>,
) -> Result<url::Url, url::ParseError> {
    let mut url = url::Url::parse(endpoint)?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", request.client_id)
        .append_pair("redirect_uri", request.redirect_uri)
        .append_pair("scope", &request.scopes.join(" "))
        .append_pair("state", request.state)
        .append_pair("nonce", request.nonce)
        .append_pair("code_challenge", request.challenge)
        .append_pair("code_challenge_method", "S256");
    // OpenID Connect Core 11: a request for offline access (a refresh token) must ask the
    // person's consent, and providers drop the scope otherwise.
    if request.scopes.iter().any(|s| s == "offline_access") {
        url.query_pairs_mut().append_pair("prompt", "consent");
    }
    Ok(url)
}

/// A client for the provider's endpoints: bounded time, no redirects (a token endpoint that
/// redirects is not one to send secrets after). Fails only when the machine's TLS setup cannot
/// be loaded; a default client would follow redirects, so none is made instead.
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// The OAuth error body (RFC 6749 section 5.2).
#[derive(Debug, Deserialize)]
struct ErrorAnswer {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// POSTs `form` to `url` and reads a `T`, or the provider's OAuth error.
async fn post<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    form: &[(&str, String)],
) -> Result<T, FlowError> {
    let unavailable = |reason: String| FlowError::Unavailable {
        url: url.to_owned(),
        reason,
    };
    let answer = http
        .post(url)
        .header("accept", "application/json")
        .form(form)
        .send()
        .await
        .map_err(|e| unavailable(format!("could not be reached: {e}")))?;
    let status = answer.status();
    let body = answer
        .bytes()
        .await
        .map_err(|e| unavailable(format!("could not be read: {e}")))?;
    if status.is_success() {
        return serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("answered what is not a token answer: {e}")));
    }
    match serde_json::from_slice::<ErrorAnswer>(&body) {
        Ok(error) if status.is_client_error() => Err(FlowError::Refused {
            code: error.error,
            description: error.error_description,
        }),
        _ => Err(unavailable(format!("answered {status}"))),
    }
}

/// Trades an authorization `code` (with its PKCE verifier) for tokens.
pub async fn exchange_code(
    http: &reqwest::Client,
    token_endpoint: &str,
    client: OAuthClient<'_>,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<TokenAnswer, FlowError> {
    let mut form = client.form();
    form.extend([
        ("grant_type", "authorization_code".to_owned()),
        ("code", code.to_owned()),
        ("code_verifier", verifier.to_owned()),
        ("redirect_uri", redirect_uri.to_owned()),
    ]);
    post(http, token_endpoint, &form).await
}

/// Trades a refresh token for new tokens (the answer may carry a new refresh token: keep it).
pub async fn refresh(
    http: &reqwest::Client,
    token_endpoint: &str,
    client: OAuthClient<'_>,
    refresh_token: &str,
) -> Result<TokenAnswer, FlowError> {
    let mut form = client.form();
    form.extend([
        ("grant_type", "refresh_token".to_owned()),
        ("refresh_token", refresh_token.to_owned()),
    ]);
    post(http, token_endpoint, &form).await
}

/// The device authorization endpoint's answer: what to show the person, and what to poll with.
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct DeviceAuthorization {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    #[serde(default)]
    pub verification_uri_complete: Option<String>,
    pub expires_in: u64,
    /// Seconds between polls; 5 when the provider does not say (RFC 8628 section 3.2).
    #[serde(default = "default_interval")]
    pub interval: u64,
}

impl std::fmt::Debug for DeviceAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceAuthorization")
            .field("user_code", &self.user_code)
            .field("verification_uri", &self.verification_uri)
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

fn default_interval() -> u64 {
    5
}

/// Starts a device authorization for `client` with `scopes`.
pub async fn start_device(
    http: &reqwest::Client,
    endpoint: &str,
    client: OAuthClient<'_>,
    scopes: &[String],
) -> Result<DeviceAuthorization, FlowError> {
    let mut form = client.form();
    form.push(("scope", scopes.join(" ")));
    post(http, endpoint, &form).await
}

/// Polls the token endpoint until the person confirms (tokens), refuses or lets the code
/// expire (a refusal), backing off when the provider asks to. `waiting` is called before each
/// wait with the seconds left, for progress output.
pub async fn await_device(
    http: &reqwest::Client,
    token_endpoint: &str,
    client: OAuthClient<'_>,
    device: &DeviceAuthorization,
    mut waiting: impl FnMut(u64),
) -> Result<TokenAnswer, FlowError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(device.expires_in);
    let mut interval = device.interval.max(1);
    let mut form = client.form();
    form.extend([
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:device_code".to_owned(),
        ),
        ("device_code", device.device_code.clone()),
    ]);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Err(FlowError::Refused {
                code: "expired_token".to_owned(),
                description: Some("the code was not confirmed in time".to_owned()),
            });
        }
        waiting(left.as_secs());
        tokio::time::sleep(Duration::from_secs(interval).min(left)).await;
        match post::<TokenAnswer>(http, token_endpoint, &form).await {
            Ok(tokens) => return Ok(tokens),
            Err(FlowError::Refused { code, .. }) if code == "authorization_pending" => {}
            Err(FlowError::Refused { code, .. }) if code == "slow_down" => interval += 5,
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_s256_of_the_verifier() {
        // RFC 7636 appendix B.
        let pkce = Pkce::of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".to_owned());
        assert_eq!(
            pkce.challenge,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_ne!(Pkce::new().unwrap().verifier, Pkce::new().unwrap().verifier);
        assert_eq!(random_token().unwrap().len(), 43);
    }

    #[test]
    fn the_authorization_url_carries_every_parameter_encoded() {
        let scopes = vec!["openid".to_owned(), "offline_access".to_owned()];
        let url = authorization_url(
            "https://idp.example.com/auth?tenant=x",
            AuthorizationRequest {
                client_id: "ui",
                redirect_uri: "http://127.0.0.1:8080/ui/login/oidc/callback",
                scopes: &scopes,
                state: "s&t",
                nonce: "n",
                challenge: "c",
            },
        )
        .unwrap();
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("tenant"), Some("x"));
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("scope"), Some("openid offline_access"));
        assert_eq!(get("state"), Some("s&t"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(
            get("redirect_uri"),
            Some("http://127.0.0.1:8080/ui/login/oidc/callback")
        );
        // Offline access asks for consent; without it, nothing is prompted.
        assert_eq!(get("prompt"), Some("consent"));
        let openid = vec!["openid".to_owned()];
        let url = authorization_url(
            "https://idp.example.com/auth",
            AuthorizationRequest {
                scopes: &openid,
                client_id: "ui",
                redirect_uri: "http://127.0.0.1/ui/login/oidc/callback",
                state: "s",
                nonce: "n",
                challenge: "c",
            },
        )
        .unwrap();
        assert!(!url.query_pairs().any(|(k, _)| k == "prompt"), "{url}");
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let answer = TokenAnswer {
            access_token: "at-secret".to_owned(),
            refresh_token: Some("rt-secret".to_owned()),
            expires_in: Some(5),
            refresh_expires_in: None,
            id_token: None,
        };
        let pkce = Pkce::new().unwrap();
        let shown = format!("{answer:?} {pkce:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(!shown.contains(&pkce.verifier), "{shown}");
    }
}
