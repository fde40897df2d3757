//! Sign-in with tokens of an organisation's identity provider (OpenID Connect): engines and
//! people pass the provider's token as a bearer token, and it stands for the principal
//! `oidc:<tenant>/<provider>/<subject>`, a member of `group:<tenant>/<provider>/<group>` for
//! each group the token names, so roles bound to a group apply without setting up each person.
//! A provider is configured for one tenant; its principals act in that tenant only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use pangolin_catalog::authz::{Principal, PrincipalKind};
use pangolin_identity::{
    ExternalSignIn, ExternalSignInError, PrincipalName, TenantName, external_group_id,
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
    /// The tenant whose principals its tokens stand for.
    pub tenant: String,
    /// Its name in principal ids (`okta`).
    pub name: String,
    pub settings: IssuerSettings,
}

/// A configured provider, ready to verify.
#[derive(Debug)]
pub struct Provider {
    pub tenant: TenantName,
    pub name: PrincipalName,
    pub issuer: Issuer,
}

/// The configured providers, by issuer.
#[derive(Debug, Default)]
pub struct Providers {
    by_issuer: HashMap<String, Vec<Arc<Provider>>>,
}

impl Providers {
    /// The providers of `configs`, refusing invalid settings, bad names, a name used twice in
    /// a tenant, and an issuer and audience configured for two tenants (its tokens would stand
    /// for principals of both).
    pub fn new(configs: Vec<ProviderConfig>) -> Result<Self, String> {
        let mut by_issuer: HashMap<String, Vec<Arc<Provider>>> = HashMap::new();
        let mut names = HashSet::new();
        let mut audiences = HashMap::new();
        for config in configs {
            let tenant = TenantName::new(&config.tenant).map_err(|e| e.to_string())?;
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
            by_issuer
                .entry(config.settings.issuer.clone())
                .or_default()
                .push(Arc::new(Provider {
                    tenant,
                    name,
                    issuer,
                }));
        }
        Ok(Self { by_issuer })
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
/// it.
pub async fn sign_in(
    security: &Security,
    providers: &[Arc<Provider>],
    token: &str,
) -> Result<Caller, Refusal> {
    let mut refusal = None;
    for provider in providers {
        match provider.issuer.verify(token).await {
            Ok(identity) => return signed_in(security, provider, &identity, token).await,
            Err(VerifyError::Invalid(reason)) => refusal = Some(reason),
            Err(error @ VerifyError::Unavailable(_)) => {
                return Err(Refusal {
                    error: ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "ServiceUnavailableException",
                        error.to_string(),
                    ),
                    reason: format!("{}: {error}", provider.issuer.settings().issuer),
                });
            }
        }
    }
    let reason = refusal.unwrap_or_else(|| "no provider takes it".to_owned());
    Err(Refusal {
        error: unauthorized(format!(
            "the identity provider's token is refused: {reason}"
        )),
        reason: format!("external token: {reason}"),
    })
}

/// Records the sign-in of a verified token (refused when its principal is disabled) and
/// audits each token's first use with the issuer, subject and groups, never the token.
async fn signed_in(
    security: &Security,
    provider: &Provider,
    identity: &ExternalIdentity,
    token: &str,
) -> Result<Caller, Refusal> {
    let Some(store) = &security.identity else {
        return Err(Refusal {
            error: unauthorized("sign-in is off on this server"),
            reason: "no identity store".to_owned(),
        });
    };
    let groups: Vec<String> = identity
        .groups
        .iter()
        .map(|g| external_group_id(&provider.tenant, &provider.name, g))
        .collect();
    let sign_in = ExternalSignIn {
        tenant: &provider.tenant,
        provider: &provider.name,
        subject: &identity.subject,
        username: identity.username.as_deref(),
        email: identity.email.as_deref(),
        groups: &identity.groups,
    };
    let id = pangolin_identity::external_principal_id(
        &provider.tenant,
        &provider.name,
        &identity.subject,
    );
    let first_use = !security.hand_outs.recorded(&id, token);
    let principal = store
        .external_sign_in(sign_in, first_use)
        .await
        .map_err(|e| match e {
            ExternalSignInError::Disabled(_) => Refusal {
                error: unauthorized(e.to_string()),
                reason: e.to_string(),
            },
            ExternalSignInError::Store(store) => Refusal {
                error: ApiError::internal(&store),
                reason: "the identity store failed".to_owned(),
            },
        })?;
    let caller = Caller {
        principal: Principal {
            id: principal.id,
            tenant: Some(provider.tenant.to_string()),
            kind: PrincipalKind::User,
            is_admin: false,
            groups,
        },
        tenant: provider.tenant.to_string(),
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
    ]);
    if let Some(username) = &identity.username {
        details.insert("username".to_owned(), username.clone());
    }
    audit::write(
        security,
        Entry {
            tenant: provider.tenant.as_str(),
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
