//! Signing in and out: passwords for people, API keys for programs (also through the Iceberg
//! OAuth2 client-credentials flow that PyIceberg and Spark speak), token refresh, logout.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Form, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use pangolin_identity::{
    ApiKey, AuthenticateError, Identity, Password, PrincipalName, Scope, TokenPair,
};
use pangolin_records::Outcome;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::audit::{self, Entry};
use super::limiter::Limited;
use super::{Caller, unauthorized};
use crate::error::ApiError;
use crate::json::JsonBody;
use crate::state::AppState;

/// A password sign-in. Root-scope users leave `tenant` out.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    pub username: String,
    pub password: String,
}

/// Tokens handed out by sign-in and refresh.
#[derive(Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
}

/// What may be shown of a request or answer holding a secret: its kind and public fields.
macro_rules! redacted_debug {
    ($type:ident $(, $field:ident)*) => {
        impl std::fmt::Debug for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($type))
                    $(.field(stringify!($field), &self.$field))*
                    .finish_non_exhaustive()
            }
        }
    };
}

redacted_debug!(LoginRequest, tenant, username);
redacted_debug!(TokenResponse, token_type, expires_in);
redacted_debug!(RefreshRequest);
redacted_debug!(LogoutRequest);
redacted_debug!(OAuthTokenRequest, grant_type, client_id, scope);

fn identity(state: &AppState) -> Result<&Identity, ApiError> {
    state.security.identity.as_ref().ok_or_else(|| {
        ApiError::bad_request(
            "this server runs without authentication: there is nothing to sign in to",
        )
    })
}

fn client_address(connect: Option<Extension<ConnectInfo<SocketAddr>>>) -> String {
    connect.map_or_else(
        || "unknown".to_owned(),
        |Extension(ConnectInfo(a))| a.ip().to_string(),
    )
}

fn too_many(limited: Limited) -> Response {
    let seconds = limited.retry_after.as_secs().max(1);
    (
        [(header::RETRY_AFTER, seconds.to_string())],
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "TooManyRequestsException",
            format!("too many failed sign-ins; retry in {seconds} s"),
        ),
    )
        .into_response()
}

fn pair(tokens: &TokenPair, identity: &Identity) -> TokenResponse {
    TokenResponse {
        access_token: tokens.access.token.clone(),
        token_type: "bearer",
        expires_in: identity.config().access_token_ttl.as_secs() as i64,
        refresh_token: Some(tokens.refresh.token.clone()),
    }
}

async fn audit_sign_in(
    state: &AppState,
    tenant: &str,
    who: &str,
    action: &str,
    outcome: Outcome,
    address: &str,
) {
    audit::write(
        &state.security,
        Entry {
            tenant,
            principal: who,
            action,
            resource_type: "session",
            resource_id: who,
            outcome,
            details: BTreeMap::from([("address".to_owned(), address.to_owned())]),
        },
    )
    .await;
}

/// `POST /api/v1/login`: a password for tokens.
pub async fn login(
    State(state): State<AppState>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    JsonBody(body): JsonBody<LoginRequest>,
) -> Result<Response, ApiError> {
    let identity = identity(&state)?;
    let address = client_address(connect);
    let scope = match &body.tenant {
        Some(t) => Scope::tenant(t.as_str()).map_err(|e| ApiError::bad_request(e.to_string()))?,
        None => Scope::Root,
    };
    let account = format!("{}/{}", scope.segment(), body.username);
    if let Err(limited) = state.security.limiter.check(&account, &address) {
        audit_sign_in(
            &state,
            scope.segment(),
            &account,
            "auth.login",
            Outcome::Denied,
            &address,
        )
        .await;
        return Ok(too_many(limited));
    }
    let name = PrincipalName::new(body.username.as_str());
    let result = match name {
        // bcrypt takes a good fraction of a second: it runs on a blocking thread.
        Ok(name) => {
            let password = Password::new(body.password);
            identity
                .authenticate(&scope, &name, &password)
                .await
                .map_err(|e| match e {
                    AuthenticateError::InvalidCredentials => None,
                    other => Some(other),
                })
        }
        Err(_) => Err(None),
    };
    match result {
        Ok(principal) => {
            state.security.limiter.succeeded(&account);
            audit_sign_in(
                &state,
                scope.segment(),
                &account,
                "auth.login",
                Outcome::Success,
                &address,
            )
            .await;
            let tokens = identity
                .issue_tokens(&principal)
                .map_err(|e| ApiError::internal(&e))?;
            Ok(Json(pair(&tokens, identity)).into_response())
        }
        Err(None) => {
            state.security.limiter.failed(&account, &address);
            audit_sign_in(
                &state,
                scope.segment(),
                &account,
                "auth.login",
                Outcome::Denied,
                &address,
            )
            .await;
            Err(unauthorized("invalid username or password"))
        }
        Err(Some(other)) => Err(ApiError::internal(&other)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefreshRequest {
    pub refresh_token: String,
}

/// `POST /api/v1/token/refresh`: a refresh token (usable once) for a new pair.
pub async fn refresh(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<RefreshRequest>,
) -> Result<Json<TokenResponse>, ApiError> {
    let identity = identity(&state)?;
    let tokens = identity
        .refresh(&body.refresh_token)
        .await
        .map_err(|_| unauthorized("invalid, expired or already used refresh token"))?;
    Ok(Json(pair(&tokens, identity)))
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogoutRequest {
    #[serde(default)]
    pub refresh_token: Option<String>,
}

/// `POST /api/v1/logout`: revokes the caller's access token (and a refresh token, if sent).
pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<StatusCode, ApiError> {
    let identity = identity(&state)?;
    if Caller::current().is_some_and(|c| c.principal.id.starts_with("oidc:")) {
        return Err(ApiError::bad_request(
            "a token of an identity provider is revoked at that provider, not here",
        ));
    }
    let access = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .filter(|t| !t.starts_with("pgl_"))
        .ok_or_else(|| {
            ApiError::bad_request(
                "log out with the token to revoke; API keys are revoked by an administrator",
            )
        })?;
    let refresh = if body.is_empty() {
        None
    } else {
        serde_json::from_slice::<LogoutRequest>(&body)
            .map_err(|e| ApiError::bad_request(format!("invalid logout body: {e}")))?
            .refresh_token
    };
    let mut tokens = vec![access];
    if let Some(refresh) = refresh.as_deref() {
        tokens.push(refresh);
    }
    identity
        .logout(&tokens)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/whoami`: the caller as the server sees it.
pub async fn whoami() -> Result<Json<serde_json::Value>, ApiError> {
    let caller = Caller::current().ok_or_else(|| unauthorized("not signed in"))?;
    Ok(Json(json!({
        "principal": caller.principal.id,
        "tenant": caller.principal.tenant,
        "acting-tenant": caller.tenant,
        "admin": caller.principal.is_admin,
        "root": caller.is_root(),
        "groups": caller.principal.groups,
    })))
}

/// The OAuth2 token request of the Iceberg REST spec (a form body).
#[derive(Deserialize)]
pub struct OAuthTokenRequest {
    pub grant_type: String,
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub client_secret: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        Json(json!({ "error": error, "error_description": description })),
    )
        .into_response()
}

/// `POST /v1/oauth/tokens`: client credentials for an access token. The client id is an API
/// key id (secret: the key's secret) or `<tenant>/<user>` (secret: the user's password;
/// `<user>` alone for root).
pub async fn oauth_token(
    State(state): State<AppState>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    Form(body): Form<OAuthTokenRequest>,
) -> Response {
    let Some(identity) = state.security.identity.as_ref() else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "this server runs without authentication",
        );
    };
    if body.grant_type != "client_credentials" {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "only client_credentials is supported",
        );
    }
    let (Some(client_id), Some(secret)) = (body.client_id, body.client_secret) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "client_id and client_secret are required",
        );
    };
    let address = client_address(connect);
    if let Err(limited) = state.security.limiter.check(&client_id, &address) {
        audit_sign_in(
            &state,
            "~",
            &client_id,
            "auth.oauth-token",
            Outcome::Denied,
            &address,
        )
        .await;
        return too_many(limited);
    }
    let issued = match ApiKey::from_parts(&client_id, &secret) {
        Ok(key) => identity
            .client_credentials_token(&key)
            .await
            .ok()
            .map(|t| (t.token, identity.config().access_token_ttl))
            .ok_or(()),
        Err(_) => {
            let (scope, user) = match client_id.split_once('/') {
                Some((tenant, user)) => (Scope::tenant(tenant).map_err(|_| ()), user),
                None => (Ok(Scope::Root), client_id.as_str()),
            };
            match (scope, PrincipalName::new(user)) {
                (Ok(scope), Ok(name)) => match identity
                    .authenticate(&scope, &name, &Password::new(secret))
                    .await
                {
                    Ok(principal) => identity
                        .issue_tokens(&principal)
                        .map(|pair| (pair.access.token, identity.config().access_token_ttl))
                        .map_err(|_| ()),
                    Err(_) => Err(()),
                },
                _ => Err(()),
            }
        }
    };
    match issued {
        Ok((token, ttl)) => {
            state.security.limiter.succeeded(&client_id);
            audit_sign_in(
                &state,
                "~",
                &client_id,
                "auth.oauth-token",
                Outcome::Success,
                &address,
            )
            .await;
            Json(json!({
                "access_token": token,
                "token_type": "bearer",
                "expires_in": ttl.as_secs(),
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            }))
            .into_response()
        }
        Err(()) => {
            state.security.limiter.failed(&client_id, &address);
            audit_sign_in(
                &state,
                "~",
                &client_id,
                "auth.oauth-token",
                Outcome::Denied,
                &address,
            )
            .await;
            oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "invalid client credentials",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_answers_holding_secrets_do_not_show_them() {
        let login = LoginRequest {
            tenant: Some("acme".into()),
            username: "ana".into(),
            password: "hunter2-hunter2".into(),
        };
        let shown = format!("{login:?}");
        assert!(
            shown.contains("ana") && !shown.contains("hunter2"),
            "{shown}"
        );
        let oauth = OAuthTokenRequest {
            grant_type: "client_credentials".into(),
            client_id: Some("0123".into()),
            client_secret: Some("very-secret".into()),
            scope: None,
        };
        assert!(!format!("{oauth:?}").contains("very-secret"));
        let answer = TokenResponse {
            access_token: "eyJ.secret.sig".into(),
            token_type: "bearer",
            expires_in: 3600,
            refresh_token: Some("eyJ.refresh.sig".into()),
        };
        assert!(!format!("{answer:?}").contains("eyJ"));
        let refresh = RefreshRequest {
            refresh_token: "eyJ.refresh.sig".into(),
        };
        assert!(!format!("{refresh:?}").contains("eyJ"));
    }
}
