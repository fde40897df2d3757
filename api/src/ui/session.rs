//! Signing in to the UI: the API's own sign-in (rate limits and audit included) behind a form,
//! its access token (or a service user's API key) kept in an HttpOnly, SameSite=Strict cookie
//! that the route layer reads for `/ui` routes only, and a CSRF token on every form: derived
//! from the session cookie, which another site can neither read nor send.

use axum::extract::{Form, FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::page;
use crate::json::JsonBody;
use crate::security::AuthMode;
use crate::security::login::{self, LoginRequest};
use crate::state::AppState;

/// The cookie holding the UI session's bearer credential.
pub const SESSION_COOKIE: &str = "pangolin_session";

/// The cookie that ties a sign-in form to the browser it was served to: before there is a
/// session, its random value is the form's CSRF token.
pub const LOGIN_COOKIE: &str = "pangolin_login";

/// The request's session credential, from its cookie.
#[derive(Debug, Clone, Default)]
pub struct Session {
    token: Option<String>,
    /// The identity provider's sealed refresh token of a session it signed in, which outlives
    /// the access tokens it renews (see `provider_session`).
    refresh: Option<String>,
}

/// A cookie's value from the request.
pub(super) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
        .filter(|v| !v.is_empty())
}

impl Session {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        Self {
            token: cookie(headers, SESSION_COOKIE),
            refresh: cookie(headers, super::provider_session::REFRESH_COOKIE),
        }
    }

    /// The secret the CSRF token derives from: the refresh cookie where there is one, so a
    /// form rendered before the session was renewed still belongs to it.
    fn secret(&self) -> Option<&str> {
        self.refresh.as_deref().or(self.token.as_deref())
    }

    /// The CSRF token of this session: a hash of its secret credential, so only a page the
    /// server rendered for this session can hold it. Empty without a session.
    pub fn csrf(&self) -> String {
        self.secret().map(csrf_of).unwrap_or_default()
    }

    /// Whether a form's CSRF field belongs to this session. Without a session (no sign-in
    /// needed) there is no credential to ride on.
    pub fn accepts(&self, field: &str) -> bool {
        match self.secret() {
            None => true,
            Some(secret) => constant_time_eq(csrf_of(secret).as_bytes(), field.as_bytes()),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Session {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::from_headers(&parts.headers))
    }
}

fn csrf_of(token: &str) -> String {
    let mut hasher = blake3::Hasher::new_derive_key("pangolin ui csrf v1");
    hasher.update(token.as_bytes());
    hasher.finalize().to_hex()[..32].to_owned()
}

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// For `/ui` routes: the session cookie as the request's bearer credential, unless the
/// request carries its own.
pub fn bearer_from_cookie(headers: &mut HeaderMap) {
    if headers.contains_key(header::AUTHORIZATION) {
        return;
    }
    if let Some(token) = Session::from_headers(headers).token
        && let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}"))
    {
        headers.insert(header::AUTHORIZATION, value);
    }
}

/// Where the route layer sends a UI request that is not signed in.
pub fn sign_in_first(path_and_query: &str) -> Response {
    Redirect::to(&format!("/ui/login?next={}", super::enc(path_and_query))).into_response()
}

#[derive(Debug, Deserialize)]
pub struct Next {
    next: Option<String>,
}

/// Only paths of the UI itself: a sign-in never sends the browser elsewhere.
pub(super) fn next_of(next: Option<&str>) -> String {
    next.filter(|n| n.starts_with("/ui") && !n.starts_with("//"))
        .unwrap_or("/ui")
        .to_owned()
}

pub async fn form(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(next): Query<Next>,
) -> Response {
    if state.security.mode != AuthMode::Required {
        return Redirect::to(&next_of(next.next.as_deref())).into_response();
    }
    login_page(
        &headers,
        StatusCode::OK,
        &next_of(next.next.as_deref()),
        None,
        state.security.external.signs_browsers_in(),
    )
}

/// The sign-in form with a fresh login token, in its hidden field and in its cookie.
fn login_page(
    headers: &HeaderMap,
    status: StatusCode,
    next: &str,
    problem: Option<&str>,
    providers: bool,
) -> Response {
    let token = uuid::Uuid::new_v4().simple().to_string();
    let cookie = format!(
        "{LOGIN_COOKIE}={token}; Path=/ui/login; HttpOnly; SameSite=Strict; Max-Age=900{}",
        secure(headers)
    );
    (
        status,
        [(header::SET_COOKIE, cookie)],
        login_markup(next, &token, problem, providers),
    )
        .into_response()
}

fn login_markup(next: &str, token: &str, problem: Option<&str>, providers: bool) -> Markup {
    page(
        &super::Chrome::default(),
        "Sign in",
        html! {
            @if providers {
                form #provider-sign-in method="get" action="/ui/login/oidc" {
                    input type="hidden" name="next" value=(next);
                    label for="provider-tenant" { "Tenant" }
                    input #provider-tenant type="text" name="tenant" autocomplete="organization";
                    p { button type="submit" { "Sign in through your identity provider" } }
                }
                p.muted { "Or with a Pangolin user or API key:" }
            }
            @if let Some(problem) = problem { div.error role="alert" { p { (problem) } } }
            form method="post" action="/ui/login" {
                input type="hidden" name="next" value=(next);
                input type="hidden" name="login" value=(token);
                label for="tenant" { "Tenant " span.muted { "(empty for the root scope)" } }
                input #tenant type="text" name="tenant" autocomplete="organization";
                label for="username" { "User" }
                input #username type="text" name="username" autocomplete="username";
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password";
                p.muted { "A service user signs in with an API key instead:" }
                label for="api_key" { "API key" }
                input #api_key type="password" name="api_key" autocomplete="off";
                p { button type="submit" { "Sign in" } }
            }
        },
    )
}

#[derive(Deserialize)]
pub struct SignIn {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    api_key: String,
    #[serde(default)]
    next: String,
    /// The form's login token, which must match the login cookie.
    #[serde(default)]
    login: String,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("tenant", &self.tenant)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// Signs in through the API's own sign-in (or takes an API key, which the route layer checks
/// on every request like any bearer credential) and sets the session cookie.
pub async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    let next = next_of(Some(form.next.as_str()));
    let providers = state.security.external.signs_browsers_in();
    let refused = |headers: &HeaderMap, next: &str, problem: &str| {
        login_page(
            headers,
            StatusCode::UNAUTHORIZED,
            next,
            Some(problem),
            providers,
        )
    };
    let served = cookie(&headers, LOGIN_COOKIE).unwrap_or_default();
    if served.is_empty() || !constant_time_eq(served.as_bytes(), form.login.as_bytes()) {
        return login_page(
            &headers,
            StatusCode::FORBIDDEN,
            &next,
            Some("This sign-in form expired or did not come from this server: sign in again."),
            providers,
        );
    }
    let token = if !form.api_key.trim().is_empty() {
        let key = form.api_key.trim().to_owned();
        if pangolin_identity::ApiKey::parse(&key).is_err() {
            return refused(&headers, &next, "That is not an API key (pgl_…).");
        }
        key
    } else {
        let request = LoginRequest {
            tenant: Some(form.tenant.trim().to_owned()).filter(|t| !t.is_empty()),
            username: form.username.trim().to_owned(),
            password: form.password,
        };
        let answer = match login::login(State(state), None, JsonBody(request)).await {
            Ok(answer) => answer,
            Err(error) => return refused(&headers, &next, &error.message),
        };
        let status = answer.status();
        let bytes = axum::body::to_bytes(answer.into_body(), 1 << 16)
            .await
            .unwrap_or_default();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        match body["access_token"].as_str() {
            Some(token) if status.is_success() => token.to_owned(),
            _ => {
                let message = body["error"]["message"]
                    .as_str()
                    .unwrap_or("Wrong user or password.");
                return refused(&headers, &next, message);
            }
        }
    };
    let cookie = format!(
        "{SESSION_COOKIE}={token}; Path=/ui; HttpOnly; SameSite=Strict{}",
        secure(&headers)
    );
    // An identity provider's refresh token of an earlier session would renew that session,
    // not this one.
    let refresh = super::provider_session::forget_refresh();
    (
        AppendHeaders([(header::SET_COOKIE, cookie), (header::SET_COOKIE, refresh)]),
        Redirect::to(&next),
    )
        .into_response()
}

/// `; Secure` when the request came over TLS (through a proxy that says so).
pub(super) fn secure(headers: &HeaderMap) -> &'static str {
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    if https { "; Secure" } else { "" }
}

#[derive(Debug, Deserialize)]
pub struct SignOut {
    #[serde(default)]
    csrf: String,
}

/// Revokes the session's token (an API key stays valid: an administrator revokes keys) and
/// clears the cookie.
pub async fn logout(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<SignOut>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return super::error_page(&crate::error::ApiError::new(
            StatusCode::FORBIDDEN,
            "ForbiddenException",
            "the form did not come from this session's page (CSRF check failed)",
        ));
    }
    if let (Some(token), Some(identity)) = (&session.token, &state.security.identity)
        && !token.starts_with("pgl_")
        && let Err(e) = identity.logout(&[token.as_str()]).await
    {
        tracing::warn!(error = %e, "ui: could not revoke the session token");
    }

    let cookie = format!("{SESSION_COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0");
    // A provider's refresh token would sign the browser in again: it goes too.
    let refresh = super::provider_session::forget_refresh();
    (
        AppendHeaders([(header::SET_COOKIE, cookie), (header::SET_COOKIE, refresh)]),
        Redirect::to("/ui/login"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_comes_from_its_cookie_and_forms_must_carry_its_csrf_token() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("other=1; pangolin_session=tok123"),
        );
        let session = Session::from_headers(&headers);
        assert!(session.accepts(&session.csrf()));
        assert!(!session.accepts("forged"));
        assert!(!session.accepts(""));
        bearer_from_cookie(&mut headers);
        assert_eq!(headers[header::AUTHORIZATION], "Bearer tok123");
    }

    #[test]
    fn a_form_of_a_provider_session_stays_valid_when_the_session_is_renewed() {
        let session = |cookies: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::COOKIE, HeaderValue::from_static(cookies));
            Session::from_headers(&headers)
        };
        let before = session("pangolin_session=old; pangolin_refresh=sealed");
        let after = session("pangolin_session=new; pangolin_refresh=sealed");
        assert!(after.accepts(&before.csrf()));
        // Another refresh cookie is another session.
        assert!(!session("pangolin_session=new; pangolin_refresh=other").accepts(&before.csrf()));
    }

    #[test]
    fn a_sign_in_only_leads_back_into_the_ui() {
        assert_eq!(next_of(Some("/ui/catalogs/lake")), "/ui/catalogs/lake");
        assert_eq!(next_of(Some("https://evil.example")), "/ui");
        assert_eq!(next_of(Some("//evil.example")), "/ui");
        assert_eq!(next_of(None), "/ui");
    }
}
