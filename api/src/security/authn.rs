//! The layer in front of every route: find the route's need, identify the caller, refuse
//! what the caller may not do, run the handler as the caller, audit the outcome.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{FromRequestParts, MatchedPath, Query, RawPathParams, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use pangolin_catalog::authz::{Principal, PrincipalKind, Resource};
use pangolin_catalog::{PendingAudit, RefSpec};
use pangolin_identity::ApiKey;
use pangolin_records::Outcome;

use super::audit::{self, Entry};
use super::routes::{self, Level, Need, Route};
use super::{AuthMode, Caller, unauthorized};
use crate::address::parse_name;
use crate::error::ApiError;
use crate::namespaces::{levels, namespace_key};
use crate::state::AppState;

/// Root chooses the tenant it acts in with this header (others act in their own).
pub const TENANT_HEADER: &str = "x-pangolin-tenant";

/// The route layer: see the module docs. Every answer it gives or passes on is counted and
/// timed by its route template here, in the one layer every routed request goes through.
pub async fn layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let Some(route) = route_of(&method, request.extensions().get::<MatchedPath>()) else {
        // Deny by default: a route nobody declared a need for is served to no one.
        let refused = super::forbidden("this route is not open to anyone".to_owned());
        crate::observe::record(&method, None, refused.status, started);
        return refused.into_response();
    };
    let response = guard(state, route, request, next).await;
    crate::observe::record(&method, Some(route), response.status(), started);
    response
}

async fn guard(state: AppState, route: &'static Route, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    if route.need == Need::Public {
        return next.run(Request::from_parts(parts, body)).await;
    }
    // A browser on the UI carries its session in a cookie (the UI's own routes only: the API
    // takes credentials from the Authorization header alone).
    let ui = route.path.starts_with("/ui");
    if ui {
        crate::ui::session::bearer_from_cookie(&mut parts.headers);
    }
    let mut renewed = Vec::new();
    let caller = match authenticate(&state, &parts.headers).await {
        Ok(caller) => caller,
        Err(refusal) => {
            let mut details = refusal.details.clone();
            details.insert("reason".to_owned(), refusal.reason.clone());
            audit::write(
                &state.security,
                Entry {
                    tenant: refusal.scope.as_deref().unwrap_or("~"),
                    principal: "unknown",
                    action: route.action,
                    resource_type: "authentication",
                    resource_id: parts.uri.path(),
                    outcome: Outcome::Denied,
                    details,
                },
            )
            .await;
            if !ui {
                return ([(header::WWW_AUTHENTICATE, "Bearer")], refusal.error).into_response();
            }
            match renew_ui_session(&state, &mut parts).await {
                Ok((caller, cookies)) => {
                    renewed = cookies;
                    caller
                }
                Err(response) => return response,
            }
        }
    };
    let params = match RawPathParams::from_request_parts(&mut parts, &state).await {
        Ok(raw) => raw
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect::<HashMap<_, _>>(),
        Err(rejection) => return ApiError::bad_request(rejection.body_text()).into_response(),
    };
    let target = match target(route, &caller, &params, &parts.uri) {
        Ok(target) => target,
        Err(error) => return error.into_response(),
    };
    let allowed = match (route.need, &target) {
        (Need::Path(privilege, _), Some((resource, branch))) => {
            state
                .security
                .authorize(
                    &caller,
                    privilege,
                    resource.clone(),
                    branch.as_deref(),
                    false,
                )
                .await
        }
        (Need::PathOrBelow(privilege, _), Some((resource, branch))) => {
            state
                .security
                .authorize(
                    &caller,
                    privilege,
                    resource.clone(),
                    branch.as_deref(),
                    true,
                )
                .await
        }
        (Need::Root, _) => state.security.require_root(&caller, route.action).await,
        _ => Ok(()),
    };
    if let Err(error) = allowed {
        if ui {
            return crate::ui::error_page(&error);
        }
        return error.into_response();
    }
    let mutation = !matches!(parts.method, Method::GET | Method::HEAD);
    let path = parts.uri.path().to_owned();
    let handler = caller
        .clone()
        .scope(next.run(Request::from_parts(parts, body)));
    if !mutation {
        let mut response = handler.await;
        set_cookies(&mut response, renewed);
        return response;
    }
    let resource_id = target
        .as_ref()
        .map_or_else(|| path.clone(), |(resource, _)| resource.to_string());
    let entry = Entry {
        tenant: &caller.tenant,
        principal: caller.name(),
        action: route.action,
        resource_type: route.action.split('.').next().unwrap_or(route.action),
        resource_id: &resource_id,
        outcome: Outcome::Success,
        details: BTreeMap::from([("path".to_owned(), path)]),
    };
    // A commit the handler lands writes the event with its publish (see `PendingAudit`).
    let pending = PendingAudit::new(audit::event(&entry));
    let mut response = pending.clone().scope(handler).await;
    set_cookies(&mut response, renewed);
    let status = response.status();
    // A UI form that worked answers with a redirect to the page to show next.
    let done = status.is_success() || (ui && status.is_redirection());
    if done && super::recent::Recent::invalidated_by(route.action) {
        state.security.recent.forget();
    }
    if pending.written_with().is_none() {
        let mut entry = entry;
        entry.outcome = outcome_of(status);
        entry
            .details
            .insert("status".to_owned(), status.as_u16().to_string());
        if done {
            audit::write(&state.security, entry).await;
        } else {
            // A refused request changed nothing, so its answer does not wait for the record
            // of it to be durable. Making it wait would be unfair under contention: a writer
            // refused because another got there first would answer after a durable write of
            // its own, while the winner answers with its publish and wins again.
            audit::queue(&state.security, entry);
        }
    }
    response
}

fn set_cookies(response: &mut Response, cookies: Vec<String>) {
    for cookie in cookies {
        if let Ok(value) = header::HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
}

/// A UI request whose session was refused: renewed through the identity provider that signed
/// it in (the caller, and the cookies to set), or the answer to give instead: to the sign-in
/// page (clearing a session that ended), or a 503 page when the provider cannot be reached.
async fn renew_ui_session(
    state: &AppState,
    parts: &mut axum::http::request::Parts,
) -> Result<(Caller, Vec<String>), Response> {
    use crate::ui::provider_session::{Renewal, renew};
    let wanted = parts.uri.path_and_query().map_or("/ui", |p| p.as_str());
    match renew(state, &mut parts.headers).await {
        Renewal::Renewed { caller, cookies } => Ok((*caller, cookies)),
        Renewal::Nothing => Err(crate::ui::session::sign_in_first(wanted)),
        Renewal::Ended(clear) => {
            let mut response = crate::ui::session::sign_in_first(wanted);
            if let Ok(value) = header::HeaderValue::from_str(&clear) {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
            Err(response)
        }
        Renewal::Unavailable(message) => Err(crate::ui::error_page(&ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
            format!("your session could not be renewed: {message}"),
        ))),
    }
}

fn route_of(method: &Method, matched: Option<&MatchedPath>) -> Option<&'static Route> {
    let path = matched?.as_str();
    // HEAD is served by the GET handler where no HEAD handler of its own exists.
    routes::lookup(method, path).or_else(|| {
        (method == Method::HEAD)
            .then(|| routes::lookup(&Method::GET, path))
            .flatten()
    })
}

fn outcome_of(status: StatusCode) -> Outcome {
    match status.as_u16() {
        401 | 403 => Outcome::Denied,
        s if s < 400 => Outcome::Success,
        _ => Outcome::Failed,
    }
}

/// Why a request was not authenticated: the answer, and the reason for the audit log.
#[derive(Debug)]
pub struct Refusal {
    pub error: ApiError,
    pub reason: String,
    /// The scope whose audit log records it (`~` when the credential names none).
    pub scope: Option<String>,
    /// More for the audit record, such as whom a refused token claimed to be.
    pub details: BTreeMap<String, String>,
}

impl Refusal {
    pub fn new(error: ApiError, reason: impl ToString) -> Self {
        Self {
            error,
            reason: reason.to_string(),
            scope: None,
            details: BTreeMap::new(),
        }
    }
}

fn refuse(message: &str, reason: impl ToString) -> Refusal {
    Refusal::new(unauthorized(message), reason)
}

/// Who sent `headers`: the holder of a verified bearer token or API key.
pub async fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<Caller, Refusal> {
    let security = &state.security;
    let identity = match (&security.mode, &security.identity) {
        (AuthMode::Required, Some(identity)) => identity,
        _ => return Ok(Caller::anonymous(&state.tenant)),
    };
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(refuse(
            "sign in: send `Authorization: Bearer <token or API key>`",
            "no credentials",
        ));
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .ok_or_else(|| {
            refuse(
                "the Authorization header must be `Bearer <token>`",
                "malformed header",
            )
        })?;
    if let Some(known) = security.recent.caller(token) {
        return Ok(acting_as(state, headers, known));
    }
    // A token of a configured identity provider: its principals act in the provider's tenant.
    if let Some(providers) = security.external.for_token(token) {
        let caller = super::external::sign_in(security, providers, token, &state.tenant).await?;
        security.recent.remember_caller(token, caller.clone());
        return Ok(acting_as(state, headers, caller));
    }
    let (principal, token_id) = if token.starts_with("pgl_") {
        let key = ApiKey::parse(token).map_err(|e| refuse("invalid API key", e))?;
        // A key not verified lately costs one bcrypt check, which runs on a blocking thread.
        let principal = identity
            .authenticate_api_key(&key)
            .await
            .map_err(|e| refuse("invalid, expired or revoked API key", e))?;
        (principal, None)
    } else {
        let verified = identity
            .verify_access_token(token)
            .await
            .map_err(|e| refuse("invalid, expired or revoked token", e))?;
        (verified.principal, Some(verified.claims.jti.clone()))
    };
    let tenant = principal
        .id
        .scope
        .tenant_name()
        .map(|t| t.as_str().to_owned());
    let own = tenant.clone().unwrap_or_else(|| state.tenant.clone());
    let caller = Caller {
        principal: Principal {
            id: principal.id.to_string(),
            tenant,
            kind: match principal.id.kind {
                pangolin_identity::PrincipalKind::User => PrincipalKind::User,
                pangolin_identity::PrincipalKind::Service => PrincipalKind::Service,
            },
            is_admin: principal.is_admin,
            groups: Vec::new(),
        },
        tenant: own,
        unrestricted: false,
        token_id,
    };
    security.recent.remember_caller(token, caller.clone());
    Ok(acting_as(state, headers, caller))
}

/// The caller acting in its own tenant, or root in the tenant it names (default otherwise).
fn acting_as(state: &AppState, headers: &HeaderMap, mut caller: Caller) -> Caller {
    if caller.principal.tenant.is_none() {
        caller.tenant = headers
            .get(TENANT_HEADER)
            .and_then(|v| v.to_str().ok())
            .map_or_else(|| state.tenant.clone(), str::to_owned);
    }
    caller
}

/// What the path names at the `level` of the route's need, and the ref it works at.
fn target(
    route: &Route,
    caller: &Caller,
    params: &HashMap<String, String>,
    uri: &axum::http::Uri,
) -> Result<Option<(Resource, Option<String>)>, ApiError> {
    let level = match route.need {
        Need::Path(_, level) | Need::PathOrBelow(_, level) => level,
        _ => return Ok(None),
    };
    let tenant = caller.tenant.clone();
    if level == Level::Tenant {
        return Ok(Some((Resource::Tenant { tenant }, None)));
    }
    let (catalog, prefix_ref) = match params.get("prefix").or_else(|| params.get("catalog")) {
        Some(raw) => match raw.split_once('@') {
            Some((name, at)) => (name.to_owned(), Some(ref_name(at)?)),
            None => (raw.clone(), None),
        },
        None => return Ok(None),
    };
    let iceberg = params.contains_key("prefix");
    let mut branch = prefix_ref;
    let resource = match level {
        Level::Tenant | Level::Catalog => Resource::Catalog { tenant, catalog },
        Level::Namespace | Level::Table => {
            let Some(namespace) = params.get("namespace") else {
                return Ok(None);
            };
            let namespace = levels(&namespace_key(namespace)?);
            match params.get("table").or_else(|| params.get("view")) {
                Some(raw) if level == Level::Table => {
                    let name = parse_name(raw)?;
                    if let Some(at) = &name.at {
                        branch = Some(at.ref_name().to_string());
                    }
                    Resource::Table {
                        tenant,
                        catalog,
                        namespace,
                        name: name.name,
                    }
                }
                _ => Resource::Namespace {
                    tenant,
                    catalog,
                    namespace,
                },
            }
        }
    };
    // Management routes name the ref in the path (`refs/{name}`, `commits/{reference}`) or
    // the query (`?ref=`); Iceberg routes work at `main` unless the prefix or name says.
    let named = || {
        params
            .get("name")
            .or_else(|| params.get("reference"))
            .cloned()
            .or_else(|| ref_in_query(uri))
            .and_then(|r| RefSpec::parse(&r).ok())
            .map(|spec| spec.ref_name().to_string())
    };
    // Iceberg routes never name a ref outside the prefix and the name: no query to parse.
    let branch = match branch {
        Some(branch) => Some(branch),
        None if iceberg => Some(pangolin_catalog::DEFAULT_BRANCH.to_owned()),
        None => named().or_else(|| {
            (route.path.ends_with("/log") || route.path.ends_with("/entries"))
                .then(|| pangolin_catalog::DEFAULT_BRANCH.to_owned())
        }),
    };
    Ok(Some((resource, branch)))
}

fn ref_in_query(uri: &axum::http::Uri) -> Option<String> {
    Query::<HashMap<String, String>>::try_from_uri(uri)
        .ok()
        .and_then(|Query(mut query)| query.remove("ref"))
}

fn ref_name(at: &str) -> Result<String, ApiError> {
    RefSpec::parse(at)
        .map(|spec| spec.ref_name().to_string())
        .map_err(|e| ApiError::bad_request(format!("invalid reference: {e}")))
}
