//! The issuer's discovery document (`/.well-known/openid-configuration`), and the fetches of
//! the issuer's documents.

use std::time::Duration;

use serde::Deserialize;

/// How long one fetch of an issuer's document may take.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest document taken from an issuer.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// What the discovery document says that matters here.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub jwks_uri: String,
    #[serde(default)]
    pub token_endpoint: Option<String>,
    #[serde(default)]
    pub device_authorization_endpoint: Option<String>,
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
}

/// Why an issuer's document could not be had: the issuer is down or answers nonsense (the
/// caller's token may well be fine).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url}: {reason}")]
pub struct FetchError {
    pub url: String,
    pub reason: String,
}

/// GETs `url` and reads it as JSON of type `T`.
pub(crate) async fn fetch<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<T, FetchError> {
    let failed = |reason: String| FetchError {
        url: url.to_owned(),
        reason,
    };
    let answer = http
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| failed(format!("could not be reached: {e}")))?;
    if !answer.status().is_success() {
        return Err(failed(format!("answered {}", answer.status())));
    }
    let body = answer
        .bytes()
        .await
        .map_err(|e| failed(format!("could not be read: {e}")))?;
    if body.len() > MAX_DOCUMENT_BYTES {
        return Err(failed("answered with a document over 1 MiB".to_owned()));
    }
    serde_json::from_slice(&body).map_err(|e| failed(format!("is not the document expected: {e}")))
}

/// The discovery document of `issuer`, which must name that issuer (as OpenID Connect
/// Discovery requires: a document elsewhere cannot speak for it) and an http(s) JWKS.
pub async fn discover(http: &reqwest::Client, issuer: &str) -> Result<Discovery, FetchError> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let document: Discovery = fetch(http, &url).await?;
    if document.issuer != issuer {
        return Err(FetchError {
            url,
            reason: format!("names the issuer `{}`, not `{issuer}`", document.issuer),
        });
    }
    if !document.jwks_uri.starts_with("https://") && !document.jwks_uri.starts_with("http://") {
        return Err(FetchError {
            url,
            reason: format!(
                "names a JWKS that is not an http(s) URL: `{}`",
                document.jwks_uri
            ),
        });
    }
    Ok(document)
}
