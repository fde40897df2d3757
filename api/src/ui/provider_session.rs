//! Keeping a UI session that an identity provider signed in alive past its access token: the
//! provider's refresh token waits in a cookie of its own, sealed under the server key (the
//! browser holds it but can neither read nor alter it), and when the route layer refuses the
//! session's token (expired, or its cookie gone) the server trades the refresh token for a new
//! access token at the provider, checks it as every token of the provider is checked, and
//! carries on with the request, setting the new session in the answer. A refused refresh ends
//! the session (the cookie is cleared and the person signs in again); an unreachable provider
//! keeps it for a later try.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pangolin_catalog::tenancy::secret;
use pangolin_catalog::tenancy::{Sealed, SecretKey};
use pangolin_oidc::{FlowError, OAuthClient, TokenAnswer};
use pangolin_records::Outcome;

use super::session::{SESSION_COOKIE, cookie, secure};
use crate::security::Caller;
use crate::security::audit::{self, Entry};
use crate::security::external::{self, Provider};
use crate::state::AppState;

/// The cookie holding the provider's sealed refresh token.
pub const REFRESH_COOKIE: &str = "pangolin_refresh";
/// Binds a sealed refresh token to this use: a value sealed for anything else does not open.
const ASSOCIATED: &[u8] = b"pangolin ui refresh v1";
/// How long the refresh cookie lasts when the provider does not say how long its refresh
/// token does: a working day.
const DEFAULT_REFRESH_SECONDS: u64 = 12 * 3600;
/// How long a renewal's answer serves the same refresh token again: a page's requests that
/// all find the session expired renew once, even where the provider rotates refresh tokens
/// and would refuse the old one the second time.
const SHARED_FOR: Duration = Duration::from_secs(30);

/// What the refresh cookie holds, sealed.
#[derive(serde::Serialize, serde::Deserialize)]
struct Held {
    /// The provider's tenant, or `~`.
    scope: String,
    provider: String,
    refresh_token: String,
}

/// The session cookie for a provider's access token, for as long as the token lives.
pub fn session_cookie(tokens: &TokenAnswer, headers: &HeaderMap) -> String {
    let lifetime = tokens.expires_in.unwrap_or(3600);
    format!(
        "{SESSION_COOKIE}={}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={lifetime}{}",
        tokens.access_token,
        secure(headers)
    )
}

/// The refresh cookie for `tokens`, when the provider gave a refresh token (it does when the
/// browser client asks for `offline_access`).
pub fn refresh_cookie(
    state: &AppState,
    provider: &Provider,
    tokens: &TokenAnswer,
    headers: &HeaderMap,
) -> Option<String> {
    let refresh_token = tokens.refresh_token.as_deref()?;
    let value = sealed_refresh(state.catalogs.tenancy().key(), provider, refresh_token)?;
    let lifetime = tokens.refresh_expires_in.unwrap_or(DEFAULT_REFRESH_SECONDS);
    Some(format!(
        "{REFRESH_COOKIE}={value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={lifetime}{}",
        secure(headers)
    ))
}

/// The refresh cookie's value: `provider`'s `refresh_token`, sealed under the server `key`.
pub fn sealed_refresh(key: &SecretKey, provider: &Provider, refresh_token: &str) -> Option<String> {
    let held = Held {
        scope: provider.scope_segment().to_owned(),
        provider: provider.name.as_str().to_owned(),
        refresh_token: refresh_token.to_owned(),
    };
    let plain = zeroize::Zeroizing::new(serde_json::to_vec(&held).ok()?);
    let sealed = secret::seal(key, ASSOCIATED, &plain).ok()?;
    Some(URL_SAFE_NO_PAD.encode(sealed.to_bytes().ok()?))
}

/// Clears the refresh cookie.
pub fn forget_refresh() -> String {
    format!("{REFRESH_COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0")
}

fn open(state: &AppState, value: &str) -> Option<Held> {
    let bytes = URL_SAFE_NO_PAD.decode(value).ok()?;
    let sealed = Sealed::from_bytes(&bytes).ok()?;
    let plain = secret::open(state.catalogs.tenancy().key(), ASSOCIATED, &sealed).ok()?;
    serde_json::from_slice(&plain).ok()
}

/// How a renewal went.
#[derive(Debug)]
pub enum Renewal {
    /// No refresh cookie: nothing to renew.
    Nothing,
    /// Signed in again: the caller, and the cookies the answer sets.
    Renewed {
        caller: Box<Caller>,
        cookies: Vec<String>,
    },
    /// The session is over (refused by the provider, or a cookie this server cannot use): the
    /// cookie that clears it.
    Ended(String),
    /// The provider cannot be reached; the session may renew later.
    Unavailable(String),
}

/// Renews the session of `headers` through its refresh cookie (see the module docs). When
/// renewed, `headers` carry the new access token, as the credential and as the session cookie
/// the handler sees (its CSRF tokens follow the new session).
pub async fn renew(state: &AppState, headers: &mut HeaderMap) -> Renewal {
    let Some(value) = cookie(headers, REFRESH_COOKIE) else {
        return Renewal::Nothing;
    };
    let Some(held) = open(state, &value) else {
        return Renewal::Ended(forget_refresh());
    };
    let Some(provider) = state
        .security
        .external
        .of_scope(&held.scope)
        .find(|p| p.name.as_str() == held.provider && p.browser.is_some())
        .cloned()
    else {
        return Renewal::Ended(forget_refresh());
    };
    let tokens = match provider
        .renewals
        .renew(
            &held.refresh_token,
            refresh_at(&provider, &held.refresh_token),
        )
        .await
    {
        Ok(tokens) => tokens,
        Err(error @ FlowError::Refused { .. }) => {
            refused(state, &provider, &error.to_string()).await;
            return Renewal::Ended(forget_refresh());
        }
        Err(error @ FlowError::Unavailable { .. }) => {
            return Renewal::Unavailable(error.to_string());
        }
    };
    let signed_in = external::sign_in(
        &state.security,
        std::slice::from_ref(&provider),
        &tokens.access_token,
        &state.tenant,
    )
    .await;
    let caller = match signed_in {
        Ok(caller) => caller,
        Err(refusal) if refusal.error.status == StatusCode::SERVICE_UNAVAILABLE => {
            return Renewal::Unavailable(refusal.error.message);
        }
        Err(refusal) => {
            refused(state, &provider, &refusal.reason).await;
            return Renewal::Ended(forget_refresh());
        }
    };
    let mut cookies = vec![session_cookie(&tokens, headers)];
    // A provider that rotates refresh tokens gave a new one: keep it.
    if tokens
        .refresh_token
        .as_deref()
        .is_some_and(|t| t != held.refresh_token)
        && let Some(refresh) = refresh_cookie(state, &provider, &tokens, headers)
    {
        cookies.push(refresh);
    }
    use_session(headers, &tokens.access_token);
    Renewal::Renewed {
        caller: Box::new(caller),
        cookies,
    }
}

async fn refresh_at(provider: &Provider, refresh_token: &str) -> Result<TokenAnswer, FlowError> {
    let unavailable = |reason: String| FlowError::Unavailable {
        url: provider.issuer.settings().issuer.clone(),
        reason,
    };
    let (client, discovery) = super::provider_sign_in::browser_client(provider)
        .await
        .map_err(unavailable)?;
    let endpoint = discovery
        .token_endpoint
        .as_deref()
        .ok_or_else(|| unavailable("names no token endpoint".to_owned()))?;
    let oauth = OAuthClient {
        id: &client.client_id,
        secret: client.client_secret.as_deref(),
    };
    pangolin_oidc::refresh(provider.issuer.http(), endpoint, oauth, refresh_token).await
}

/// The request as it would have come with the renewed session: its credential and its cookie.
fn use_session(headers: &mut HeaderMap, token: &str) {
    if let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}")) {
        headers.insert(header::AUTHORIZATION, value);
    }
    let others: Vec<String> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .map(str::trim)
        .filter(|pair| !pair.starts_with(&format!("{SESSION_COOKIE}=")) && !pair.is_empty())
        .map(ToOwned::to_owned)
        .collect();
    let mut pairs = others;
    pairs.push(format!("{SESSION_COOKIE}={token}"));
    if let Ok(value) = HeaderValue::from_str(&pairs.join("; ")) {
        headers.insert(header::COOKIE, value);
    }
}

/// A renewal the provider (or the check of its new token) refused, in the provider's scope's
/// audit log.
async fn refused(state: &AppState, provider: &Provider, reason: &str) {
    audit::write(
        &state.security,
        Entry {
            tenant: provider.scope_segment(),
            principal: "unknown",
            action: "ui.renew-oidc",
            resource_type: "authentication",
            resource_id: provider.name.as_str(),
            outcome: Outcome::Denied,
            details: std::collections::BTreeMap::from([
                ("provider".to_owned(), provider.name.to_string()),
                ("reason".to_owned(), reason.to_owned()),
            ]),
        },
    )
    .await;
}

/// Renewals of the last moments, by refresh token (its hash), so concurrent requests of one
/// browser renew once (see [`SHARED_FOR`]).
#[derive(Debug, Default)]
pub struct Renewals {
    recent: parking_lot::Mutex<HashMap<[u8; 32], Slot>>,
}

/// One refresh token's renewal: locked while in flight, then its answer and when it came.
type Slot = Arc<tokio::sync::Mutex<Option<(Instant, Arc<TokenAnswer>)>>>;

impl Renewals {
    async fn renew(
        &self,
        refresh_token: &str,
        fetch: impl Future<Output = Result<TokenAnswer, FlowError>>,
    ) -> Result<Arc<TokenAnswer>, FlowError> {
        let key = *blake3::hash(refresh_token.as_bytes()).as_bytes();
        let slot = {
            let mut recent = self.recent.lock();
            // Past answers go; one in flight (locked) stays.
            recent.retain(|_, slot| {
                slot.try_lock().map_or(true, |held| {
                    held.as_ref()
                        .is_some_and(|(at, _)| at.elapsed() < SHARED_FOR)
                })
            });
            recent.entry(key).or_default().clone()
        };
        let mut held = slot.lock().await;
        if let Some((at, answer)) = held.as_ref()
            && at.elapsed() < SHARED_FOR
        {
            return Ok(answer.clone());
        }
        let answer = Arc::new(fetch.await?);
        *held = Some((Instant::now(), answer.clone()));
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn concurrent_renewals_of_one_refresh_token_ask_the_provider_once() {
        let renewals = Renewals::default();
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let fetch = || async {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(TokenAnswer {
                access_token: "new".to_owned(),
                refresh_token: None,
                expires_in: Some(60),
                refresh_expires_in: None,
                id_token: None,
            })
        };
        let (a, b) = tokio::join!(renewals.renew("rt", fetch()), renewals.renew("rt", fetch()));
        assert_eq!(a.unwrap().access_token, "new");
        assert_eq!(b.unwrap().access_token, "new");
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
        // Another refresh token is another renewal.
        renewals.renew("other", fetch()).await.unwrap();
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_refused_renewal_is_not_remembered() {
        let renewals = Renewals::default();
        let refused = renewals
            .renew("rt", async {
                Err(FlowError::Refused {
                    code: "invalid_grant".to_owned(),
                    description: None,
                })
            })
            .await;
        assert!(refused.is_err());
        let again = renewals
            .renew("rt", async {
                Ok(TokenAnswer {
                    access_token: "later".to_owned(),
                    refresh_token: None,
                    expires_in: None,
                    refresh_expires_in: None,
                    id_token: None,
                })
            })
            .await;
        assert_eq!(again.unwrap().access_token, "later");
    }

    #[test]
    fn the_renewed_session_replaces_the_cookie_the_handler_reads() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; pangolin_session=old; pangolin_refresh=r"),
        );
        use_session(&mut headers, "new");
        assert_eq!(cookie(&headers, SESSION_COOKIE).as_deref(), Some("new"));
        assert_eq!(cookie(&headers, "a").as_deref(), Some("1"));
        assert_eq!(cookie(&headers, REFRESH_COOKIE).as_deref(), Some("r"));
        assert_eq!(headers[header::AUTHORIZATION], "Bearer new");
    }
}
