//! Signing in to the UI through the tenant's identity provider (or, with no tenant named, a
//! provider of the root scope): the authorization code grant
//! with PKCE. The browser is sent to the provider with a fresh `state`, `nonce` and PKCE
//! challenge, whose secrets wait in an HttpOnly cookie scoped to these routes; the provider
//! sends it back with a code, which the server (holding the client's secret, if any) trades
//! for the provider's access token. That token is checked as every bearer token of the
//! provider is (signature, issuer, audience, expiry, disabled principal; audited) and becomes
//! the UI session, as a password sign-in's token does.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::provider_session;
use super::session::{next_of, secure};
use super::{enc, page};
use crate::security::external::{self, BrowserClient, Provider};
use crate::state::AppState;

/// The cookie holding a sign-in in flight: `state.verifier.scope.provider.next`.
const FLIGHT_COOKIE: &str = "pangolin_oidc";
const CALLBACK: &str = "/ui/login/oidc/callback";
/// How the root scope is written in the flight cookie, as in principal ids.
const ROOT: &str = "~";

#[derive(Debug, Deserialize)]
pub struct Start {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    next: Option<String>,
}

/// `GET /ui/login/oidc?tenant=T[&provider=P]`: to the provider's sign-in page (or, when the
/// tenant has several providers for the browser, a choice of them). No tenant: the root
/// scope's providers, as a password sign-in without a tenant is a root-scope user's.
pub async fn start(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(start): Query<Start>,
) -> Response {
    let next = next_of(start.next.as_deref());
    let tenant = start.tenant.trim();
    let scope = if tenant.is_empty() { ROOT } else { tenant };
    let usable: Vec<&Arc<Provider>> = state
        .security
        .external
        .of_scope(scope)
        .filter(|p| p.browser.is_some())
        .collect();
    let chosen = match start.provider.as_deref() {
        Some(name) => usable.iter().find(|p| p.name.as_str() == name).copied(),
        None if usable.len() == 1 => usable.first().copied(),
        None if usable.len() > 1 => return choice(tenant, &usable, &next),
        None => None,
    };
    let Some(provider) = chosen else {
        let whose = if tenant.is_empty() {
            "The root scope has".to_owned()
        } else {
            format!("Tenant `{tenant}` has")
        };
        return problem(
            StatusCode::NOT_FOUND,
            &format!("{whose} no identity provider to sign in through here."),
        );
    };
    match redirect(provider, &headers, &next).await {
        Ok(response) => response,
        Err(message) => problem(StatusCode::SERVICE_UNAVAILABLE, &message),
    }
}

fn choice(tenant: &str, providers: &[&Arc<Provider>], next: &str) -> Response {
    page(
        &super::Chrome::default(),
        "Sign in",
        html! {
            @if tenant.is_empty() {
                p { "Sign in to the root scope through:" }
            } @else {
                p { "Sign in to tenant " code { (tenant) } " through:" }
            }
            ul {
                @for p in providers {
                    li { a href=(format!("/ui/login/oidc?tenant={}&provider={}&next={}",
                        enc(tenant), enc(p.name.as_str()), enc(next))) { (p.name.as_str()) } }
                }
            }
        },
    )
    .into_response()
}

fn problem(status: StatusCode, message: &str) -> Response {
    let body = page(
        &super::Chrome::default(),
        "Sign in",
        html! {
            div.error role="alert" { p { (message) } }
            p { a href="/ui/login" { "Back to sign-in" } }
        },
    );
    (status, body).into_response()
}

/// Where the provider sends the browser back: this server as the browser reached it.
fn callback_uri(headers: &HeaderMap) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let scheme = if secure(headers).is_empty() {
        "http"
    } else {
        "https"
    };
    Some(format!("{scheme}://{host}{CALLBACK}"))
}

/// The provider's client for browsers and its discovery document, or why there is none.
pub(super) async fn browser_client(
    provider: &Provider,
) -> Result<(&BrowserClient, &pangolin_oidc::Discovery), String> {
    let client = provider
        .browser
        .as_ref()
        .ok_or_else(|| "This identity provider signs no browser in.".to_owned())?;
    let discovery = provider
        .issuer
        .discovery()
        .await
        .map_err(|e| format!("The identity provider cannot be reached: {e}"))?;
    Ok((client, discovery))
}

async fn redirect(
    provider: &Provider,
    headers: &HeaderMap,
    next: &str,
) -> Result<Response, String> {
    let (client, discovery) = browser_client(provider).await?;
    let endpoint = discovery
        .authorization_endpoint
        .as_deref()
        .ok_or_else(|| "The identity provider names no authorization endpoint.".to_owned())?;
    let redirect_uri =
        callback_uri(headers).ok_or_else(|| "The request names no host.".to_owned())?;
    let random = |_| "no random numbers on this machine".to_owned();
    let pkce = pangolin_oidc::Pkce::new().map_err(random)?;
    let flight_state = pangolin_oidc::random_token().map_err(random)?;
    let nonce = pangolin_oidc::random_token().map_err(random)?;
    let url = pangolin_oidc::authorization_url(
        endpoint,
        pangolin_oidc::AuthorizationRequest {
            client_id: &client.client_id,
            redirect_uri: &redirect_uri,
            scopes: &client.scopes,
            state: &flight_state,
            nonce: &nonce,
            challenge: &pkce.challenge,
        },
    )
    .map_err(|e| format!("The identity provider's authorization endpoint: {e}"))?;
    // Lax, not Strict: the provider's redirect back is a cross-site navigation.
    let cookie = format!(
        "{FLIGHT_COOKIE}={flight_state}.{}.{}.{}.{}; Path=/ui/login/oidc; HttpOnly; \
         SameSite=Lax; Max-Age=600{}",
        pkce.verifier,
        provider.scope_segment(),
        provider.name.as_str(),
        enc(next),
        secure(headers)
    );
    Ok(([(header::SET_COOKIE, cookie)], Redirect::to(url.as_str())).into_response())
}

#[derive(Debug, Deserialize)]
pub struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// A sign-in in flight, from its cookie.
struct Flight {
    state: String,
    verifier: String,
    /// The provider's tenant, or `~`.
    scope: String,
    provider: String,
    next: String,
}

fn flight(headers: &HeaderMap) -> Option<Flight> {
    let value = super::session::cookie(headers, FLIGHT_COOKIE)?;
    let mut parts = value.splitn(5, '.');
    let (state, verifier, scope, provider, next) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    let next = percent_encoding::percent_decode_str(next)
        .decode_utf8()
        .ok()?;
    Some(Flight {
        state: state.to_owned(),
        verifier: verifier.to_owned(),
        scope: scope.to_owned(),
        provider: provider.to_owned(),
        next: next_of(Some(&next)),
    })
}

/// `GET /ui/login/oidc/callback?code&state`: the provider's answer, turned into a session.
pub async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(answer): Query<Callback>,
) -> Response {
    let Some(flight) = flight(&headers) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "This sign-in did not start here or took too long: sign in again.",
        );
    };
    if let Some(error) = &answer.error {
        let said = answer.error_description.as_deref().unwrap_or(error);
        return problem(
            StatusCode::UNAUTHORIZED,
            &format!("The identity provider did not sign you in: {said}"),
        );
    }
    let given = answer.state.as_deref().unwrap_or_default();
    if !super::session::constant_time_eq(given.as_bytes(), flight.state.as_bytes()) {
        return problem(
            StatusCode::BAD_REQUEST,
            "This answer is not for the sign-in this browser started: sign in again.",
        );
    }
    let Some(code) = answer.code.as_deref().filter(|c| !c.is_empty()) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "The identity provider sent no code.",
        );
    };
    let Some(provider) = state
        .security
        .external
        .of_scope(&flight.scope)
        .find(|p| p.name.as_str() == flight.provider)
        .cloned()
    else {
        return problem(
            StatusCode::NOT_FOUND,
            "That identity provider is no longer configured.",
        );
    };
    match session_token(&state, &provider, &headers, code, &flight).await {
        Ok(tokens) => {
            let session = provider_session::session_cookie(&tokens, &headers);
            // Without a refresh token, one of an earlier session must not outlive this one.
            let refresh = provider_session::refresh_cookie(&state, &provider, &tokens, &headers)
                .unwrap_or_else(provider_session::forget_refresh);
            let done =
                format!("{FLIGHT_COOKIE}=; Path=/ui/login/oidc; HttpOnly; SameSite=Lax; Max-Age=0");
            let mut response = Redirect::to(&flight.next).into_response();
            for cookie in [session, refresh, done] {
                if let Ok(value) = cookie.parse() {
                    response.headers_mut().append(header::SET_COOKIE, value);
                }
            }
            response
        }
        Err((status, message)) => problem(status, &message),
    }
}

/// Trades the code for the provider's tokens and checks the access token as every request
/// will.
async fn session_token(
    state: &AppState,
    provider: &Arc<Provider>,
    headers: &HeaderMap,
    code: &str,
    flight: &Flight,
) -> Result<pangolin_oidc::TokenAnswer, (StatusCode, String)> {
    let unavailable = |m: String| (StatusCode::SERVICE_UNAVAILABLE, m);
    let (client, discovery) = browser_client(provider).await.map_err(unavailable)?;
    let token_endpoint = discovery
        .token_endpoint
        .as_deref()
        .ok_or_else(|| unavailable("The identity provider names no token endpoint.".into()))?;
    let redirect_uri = callback_uri(headers)
        .ok_or_else(|| (StatusCode::BAD_REQUEST, "The request names no host.".into()))?;
    let oauth = pangolin_oidc::OAuthClient {
        id: &client.client_id,
        secret: client.client_secret.as_deref(),
    };
    let tokens = pangolin_oidc::exchange_code(
        provider.issuer.http(),
        token_endpoint,
        oauth,
        code,
        &flight.verifier,
        &redirect_uri,
    )
    .await
    .map_err(|e| match e {
        pangolin_oidc::FlowError::Refused { .. } => (StatusCode::UNAUTHORIZED, e.to_string()),
        pangolin_oidc::FlowError::Unavailable { .. } => unavailable(e.to_string()),
    })?;
    let signed_in = external::sign_in(
        &state.security,
        std::slice::from_ref(provider),
        &tokens.access_token,
        &state.tenant,
    )
    .await;
    if let Err(refusal) = signed_in {
        let mut details = refusal.details;
        details.insert("reason".to_owned(), refusal.reason);
        // A refusal here is audited as the route layer audits every refused credential.
        crate::security::audit::write(
            &state.security,
            crate::security::audit::Entry {
                tenant: provider.scope_segment(),
                principal: "unknown",
                action: "ui.login-oidc",
                resource_type: "authentication",
                resource_id: CALLBACK,
                outcome: pangolin_records::Outcome::Denied,
                details,
            },
        )
        .await;
        return Err((refusal.error.status, refusal.error.message));
    }
    Ok(tokens)
}
