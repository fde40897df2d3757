//! Sign-in with tokens of an organisation's identity provider (OpenID Connect): engines and
//! people pass the provider's token as a bearer token, and it stands for the principal
//! `oidc:<tenant>/<provider>/<subject>`, a member of `group:<tenant>/<provider>/<group>` for
//! each group the token names, so roles bound to a group apply without setting up each person.
//! A provider is configured for one tenant; its principals act in that tenant only. A provider
//! of the root scope (tenant `~`) signs in the deployment's administrators: members of its
//! admin groups are root, and its other principals may do nothing, as any root-scope
//! principal that is not an admin. Admin groups of a tenant's provider make tenant admins.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use pangolin_catalog::authz::{Principal, PrincipalKind};
use pangolin_identity::{
    ExternalSignIn, ExternalSignInError, PrincipalName, Scope, external_group_id,
};
use pangolin_oidc::{ExternalIdentity, Issuer, IssuerSettings, VerifyError, unverified_issuer};
use pangolin_records::Outcome;

use super::audit::{self, Entry};
use super::authn::Refusal;
use super::{Caller, Security, unauthorized};
use crate::error::ApiError;

/// One provider as an operator configures it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProviderConfig {
    /// The tenant whose principals its tokens stand for, or `~` for the root scope.
    pub tenant: String,
    /// Its name in principal ids (`okta`).
    pub name: String,
    pub settings: IssuerSettings,
    /// The provider's public client through which `pangolin login --oidc` signs people in
    /// (device authorization grant); without it the provider takes engines' tokens only.
    #[serde(default)]
    pub cli: Option<PublicClient>,
    /// The provider's client through which the web UI signs people in (authorization code
    /// grant with PKCE, redirected back to `/ui/login/oidc/callback`).
    #[serde(default)]
    pub browser: Option<BrowserClient>,
    /// The groups (as the token names them) whose members are admins of the provider's scope:
    /// tenant admins, or root for a provider of the root scope. A tenant's provider needs none
    /// (roles bound to groups grant the rest); a root-scope provider needs at least one.
    #[serde(default)]
    pub admin_groups: Vec<String>,
}

/// The web UI's client of the provider; its secret, if it has one, stays on the server.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BrowserClient {
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    /// What to ask the provider for; `openid` when absent.
    #[serde(default = "default_browser_scopes")]
    pub scopes: Vec<String>,
}

fn default_browser_scopes() -> Vec<String> {
    vec!["openid".to_owned()]
}

impl std::fmt::Debug for BrowserClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// A public OAuth client of the provider (no secret: it runs on people's machines).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PublicClient {
    pub client_id: String,
    /// What to ask the provider for; `openid offline_access` (a refresh token) when absent.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
}

fn default_scopes() -> Vec<String> {
    vec!["openid".to_owned(), "offline_access".to_owned()]
}

/// A configured provider, ready to verify.
#[derive(Debug)]
pub struct Provider {
    /// Its tenant, or the root scope.
    pub scope: Scope,
    pub name: PrincipalName,
    pub issuer: Issuer,
    pub cli: Option<PublicClient>,
    pub browser: Option<BrowserClient>,
    pub admin_groups: HashSet<String>,
    /// The web UI's sessions renewed through its refresh tokens of late.
    pub renewals: crate::ui::provider_session::Renewals,
}

impl Provider {
    /// How its scope is written in ids, audit events and the sign-in flow: the tenant or `~`.
    pub fn scope_segment(&self) -> &str {
        self.scope.segment()
    }
}

/// The configured providers, by issuer.
#[derive(Debug, Default)]
pub struct Providers {
    by_issuer: HashMap<String, Vec<Arc<Provider>>>,
    /// In the order configured, for listing a scope's.
    all: Vec<Arc<Provider>>,
}

impl Providers {
    /// The providers of `configs`, refusing invalid settings, bad names, a name used twice in
    /// a scope, an issuer and audience configured for two scopes (its tokens would stand for
    /// principals of both), and a root-scope provider without admin groups (no one it signs in
    /// could do anything).
    pub fn new(configs: Vec<ProviderConfig>) -> Result<Self, String> {
        let mut by_issuer: HashMap<String, Vec<Arc<Provider>>> = HashMap::new();
        let mut all = Vec::new();
        let mut names = HashSet::new();
        let mut audiences = HashMap::new();
        for config in configs {
            let scope = Scope::from_segment(&config.tenant).map_err(|e| e.to_string())?;
            let name = PrincipalName::new(&config.name).map_err(|e| e.to_string())?;
            if !names.insert((config.tenant.clone(), config.name.clone())) {
                return Err(format!(
                    "tenant `{}` has two identity providers named `{}`",
                    config.tenant, config.name
                ));
            }
            for audience in &config.settings.audiences {
                let key = (config.settings.issuer.clone(), audience.clone());
                if let Some(other) = audiences.insert(key, config.tenant.clone())
                    && other != config.tenant
                {
                    return Err(format!(
                        "the issuer `{}` with audience `{audience}` is configured for tenants \
                         `{other}` and `{}`: give each tenant its own audience",
                        config.settings.issuer, config.tenant
                    ));
                }
            }
            let issuer = Issuer::new(config.settings.clone()).map_err(|e| {
                format!(
                    "identity provider `{}` of tenant `{}`: {e}",
                    config.name, config.tenant
                )
            })?;
            let clients = [
                (
                    "cli",
                    config.cli.as_ref().map(|c| (&c.client_id, &c.scopes)),
                ),
                (
                    "browser",
                    config.browser.as_ref().map(|c| (&c.client_id, &c.scopes)),
                ),
            ];
            for (which, client) in clients {
                if let Some((id, scopes)) = client
                    && (id.is_empty() || scopes.iter().any(|s| s.is_empty() || s.contains(' ')))
                {
                    return Err(format!(
                        "identity provider `{}` of tenant `{}`: its {which} client needs a \
                         client id, and scopes without spaces",
                        config.name, config.tenant
                    ));
                }
            }
            if scope == Scope::Root && config.admin_groups.is_empty() {
                return Err(format!(
                    "identity provider `{}` of the root scope needs `admin-groups`: the \
                     groups whose members are root (no other principal of the root scope may do \
                     anything)",
                    config.name
                ));
            }
            if config.admin_groups.iter().any(String::is_empty) {
                return Err(format!(
                    "identity provider `{}` of `{}`: an admin group needs a name",
                    config.name, config.tenant
                ));
            }
            let provider = Arc::new(Provider {
                scope,
                name,
                issuer,
                cli: config.cli,
                browser: config.browser,
                admin_groups: config.admin_groups.into_iter().collect(),
                renewals: Default::default(),
            });
            all.push(provider.clone());
            by_issuer
                .entry(config.settings.issuer.clone())
                .or_default()
                .push(provider);
        }
        Ok(Self { by_issuer, all })
    }

    /// Whether any provider signs people in to the web UI.
    pub fn signs_browsers_in(&self) -> bool {
        self.all.iter().any(|p| p.browser.is_some())
    }

    /// The providers of `scope` (a tenant's name, or `~` for the root scope).
    pub fn of_scope<'a>(&'a self, scope: &'a str) -> impl Iterator<Item = &'a Arc<Provider>> {
        self.all.iter().filter(move |p| p.scope_segment() == scope)
    }

    /// The provider whose token an external principal (`oidc:<scope>/<provider>/<subject>`)
    /// signed in with.
    pub fn of_principal(&self, principal: &str) -> Option<&Arc<Provider>> {
        let rest = principal.strip_prefix("oidc:")?;
        let mut parts = rest.splitn(3, '/');
        let (scope, name) = (parts.next()?, parts.next()?);
        self.all
            .iter()
            .find(|p| p.scope_segment() == scope && p.name.as_str() == name)
    }

    /// The providers `token` claims to come from, if any is configured.
    pub fn for_token(&self, token: &str) -> Option<&[Arc<Provider>]> {
        if self.by_issuer.is_empty() {
            return None;
        }
        let issuer = unverified_issuer(token)?;
        self.by_issuer.get(&issuer).map(Vec::as_slice)
    }
}

/// The caller a provider's `token` stands for; a refusal (401) when no provider of its issuer
/// takes it or its principal is disabled, a 503 when the provider cannot be reached to check
/// it. A principal of the root scope acts in `default_tenant` until it names another.
pub async fn sign_in(
    security: &Security,
    providers: &[Arc<Provider>],
    token: &str,
    default_tenant: &str,
) -> Result<Caller, Refusal> {
    verify(security, providers, token, default_tenant)
        .await
        .map_err(|refusal| claimed(refusal, providers, token))
}

/// A refusal of `token`, with the issuer and subject it claims (unverified, and so named) for
/// the audit record, kept in its providers' scope when they share one.
fn claimed(mut refusal: Refusal, providers: &[Arc<Provider>], token: &str) -> Refusal {
    let Some(first) = providers.first() else {
        return refusal;
    };
    if providers.iter().all(|p| p.scope == first.scope) {
        refusal.scope = Some(first.scope_segment().to_owned());
    }
    if let Some(issuer) = pangolin_oidc::unverified_issuer(token) {
        refusal.details.insert("claimed-issuer".to_owned(), issuer);
    }
    let subject_claim = &first.issuer.settings().claims.subject;
    if let Some(subject) = pangolin_oidc::unverified_claim(token, subject_claim) {
        refusal
            .details
            .insert("claimed-subject".to_owned(), subject);
    }
    refusal
}

async fn verify(
    security: &Security,
    providers: &[Arc<Provider>],
    token: &str,
    default_tenant: &str,
) -> Result<Caller, Refusal> {
    let mut refusal = None;
    for provider in providers {
        match provider.issuer.verify(token).await {
            Ok(identity) => {
                return signed_in(security, provider, &identity, token, default_tenant).await;
            }
            Err(VerifyError::Invalid(reason)) => refusal = Some(reason),
            Err(error @ VerifyError::Unavailable(_)) => {
                return Err(Refusal::new(
                    ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "ServiceUnavailableException",
                        error.to_string(),
                    ),
                    format!("{}: {error}", provider.issuer.settings().issuer),
                ));
            }
        }
    }
    let reason = refusal.unwrap_or_else(|| "no provider takes it".to_owned());
    Err(Refusal::new(
        unauthorized(format!(
            "the identity provider's token is refused: {reason}"
        )),
        format!("external token: {reason}"),
    ))
}

/// Records the sign-in of a verified token (refused when its principal is disabled) and
/// audits each token's first use with the issuer, subject and groups, never the token.
async fn signed_in(
    security: &Security,
    provider: &Provider,
    identity: &ExternalIdentity,
    token: &str,
    default_tenant: &str,
) -> Result<Caller, Refusal> {
    let Some(store) = &security.identity else {
        return Err(Refusal::new(
            unauthorized("sign-in is off on this server"),
            "no identity store",
        ));
    };
    let groups: Vec<String> = identity
        .groups
        .iter()
        .map(|g| external_group_id(&provider.scope, &provider.name, g))
        .collect();
    let is_admin = identity
        .groups
        .iter()
        .any(|g| provider.admin_groups.contains(g));
    let sign_in = ExternalSignIn {
        scope: &provider.scope,
        provider: &provider.name,
        subject: &identity.subject,
        username: identity.username.as_deref(),
        email: identity.email.as_deref(),
        groups: &identity.groups,
    };
    let id = pangolin_identity::external_principal_id(
        &provider.scope,
        &provider.name,
        &identity.subject,
    );
    let first_use = !security.hand_outs.recorded(&id, token);
    let principal = store
        .external_sign_in(sign_in, first_use)
        .await
        .map_err(|e| match e {
            ExternalSignInError::Disabled(_) => Refusal::new(unauthorized(e.to_string()), &e),
            ExternalSignInError::Store(store) => {
                Refusal::new(ApiError::internal(&store), "the identity store failed")
            }
        })?;
    let tenant = provider.scope.tenant_name().map(ToString::to_string);
    let caller = Caller {
        principal: Principal {
            id: principal.id,
            // Root-scope principals choose the tenant they act in, as root users do.
            tenant: tenant.clone(),
            kind: PrincipalKind::User,
            is_admin,
            groups,
        },
        tenant: tenant.unwrap_or_else(|| default_tenant.to_owned()),
        unrestricted: false,
        token_id: None,
    };
    if first_use {
        audit_sign_in(security, provider, identity, &caller, token).await;
    }
    Ok(caller)
}

async fn audit_sign_in(
    security: &Security,
    provider: &Provider,
    identity: &ExternalIdentity,
    caller: &Caller,
    token: &str,
) {
    let principal = caller.name();
    let mut details = BTreeMap::from([
        ("issuer".to_owned(), identity.issuer.clone()),
        ("subject".to_owned(), identity.subject.clone()),
        ("provider".to_owned(), provider.name.to_string()),
        ("groups".to_owned(), identity.groups.join(",")),
        ("admin".to_owned(), caller.principal.is_admin.to_string()),
    ]);
    if let Some(username) = &identity.username {
        details.insert("username".to_owned(), username.clone());
    }
    audit::write(
        security,
        Entry {
            tenant: provider.scope_segment(),
            principal,
            action: "auth.external",
            resource_type: "authentication",
            resource_id: principal,
            outcome: Outcome::Success,
            details,
        },
    )
    .await;
    // Tokens carry their expiry; an hour bounds what is kept for one that outlives it.
    let until = SystemTime::now() + Duration::from_secs(3600);
    security.hand_outs.record(principal, token, until);
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvidersQuery {
    tenant: Option<String>,
}

/// `GET /api/v1/auth/providers[?tenant=T]`: the identity providers people of a tenant (or,
/// without one, of the root scope) sign in through, for `pangolin login --oidc`. Public (it
/// comes before signing in); a tenant that does not exist has none, so the answer does not
/// tell which tenants exist.
pub async fn list(
    axum::extract::State(state): axum::extract::State<crate::state::AppState>,
    crate::extract::QueryParams(query): crate::extract::QueryParams<ProvidersQuery>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let scope = match query.tenant.filter(|t| !t.is_empty()) {
        Some(tenant) => Scope::tenant(tenant).map_err(|e| ApiError::bad_request(e.to_string()))?,
        None => Scope::Root,
    };
    let providers: Vec<serde_json::Value> = state
        .security
        .external
        .of_scope(scope.segment())
        .map(|p| {
            serde_json::json!({
                "name": p.name.as_str(),
                "issuer": p.issuer.settings().issuer,
                "cli": p.cli,
                "browser": p.browser.is_some(),
            })
        })
        .collect();
    Ok(axum::Json(serde_json::json!({
        "tenant": scope.tenant_name().map(|t| t.as_str()),
        "providers": providers,
    })))
}
