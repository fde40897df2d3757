//! Authentication, authorization and audit for every route.
//!
//! One layer ([`authn::layer`]) runs before every handler: it looks the route up in
//! [`routes::ROUTES`] (a route that is not listed is refused), works out who is calling
//! (a bearer JWT, an API key, or nobody), refuses what the caller may not do, runs the
//! handler as that caller, and writes the audit event. Handlers of routes whose target is in
//! the body authorize through [`Security::authorize`], the same single check.

pub mod audit;
pub mod authn;
pub mod caller;
pub mod external;
pub mod hand_outs;
pub mod limiter;
pub mod login;
pub mod recent;
pub mod routes;

use std::sync::Arc;

use axum::http::StatusCode;
use pangolin_catalog::authz::{self, AuthzStore, Decision, Privilege, Request, Resource};
use pangolin_identity::Identity;
use pangolin_records::{AuditLog, RecordStore};

pub use caller::Caller;
pub use limiter::LoginLimiter;

use crate::error::ApiError;

/// Whether the server authenticates its callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Every caller must sign in; authorization decides what each may do.
    Required,
    /// Nobody signs in and every request acts as root of the default tenant: for local
    /// evaluation only (the server refuses to listen beyond loopback in this mode).
    Disabled,
}

/// The server's identity, authorization and audit services.
pub struct Security {
    pub mode: AuthMode,
    /// Users, service users, API keys and tokens; absent when authentication is disabled.
    pub identity: Option<Identity>,
    pub authz: AuthzStore,
    /// The audit log, for queries; events are written through `audit_writer`.
    pub audit: Arc<dyn AuditLog>,
    pub audit_writer: audit::AuditWriter,
    pub limiter: LoginLimiter,
    /// Callers and roles of the last moments (see [`recent`]).
    pub recent: recent::Recent,
    /// Delegated credentials already recorded per principal (see [`hand_outs`]), and
    /// external tokens whose first use was audited.
    pub hand_outs: hand_outs::HandOuts,
    /// Identity providers whose tokens stand for principals of their tenant (see
    /// [`external`]); none unless configured.
    pub external: external::Providers,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Security")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Security {
    /// Security of a server that authenticates nobody.
    pub fn disabled(records: Arc<dyn RecordStore>, audit: Arc<dyn AuditLog>) -> Self {
        Self {
            mode: AuthMode::Disabled,
            identity: None,
            authz: AuthzStore::new(records),
            audit_writer: audit::AuditWriter::new(audit.clone()),
            audit,
            limiter: LoginLimiter::default(),
            recent: recent::Recent::default(),
            hand_outs: hand_outs::HandOuts::default(),
            external: external::Providers::default(),
        }
    }

    /// Security of a server whose callers sign in through `identity`.
    pub fn required(
        identity: Identity,
        records: Arc<dyn RecordStore>,
        audit: Arc<dyn AuditLog>,
    ) -> Self {
        Self {
            mode: AuthMode::Required,
            identity: Some(identity),
            authz: AuthzStore::new(records),
            audit_writer: audit::AuditWriter::new(audit.clone()),
            audit,
            limiter: LoginLimiter::default(),
            recent: recent::Recent::default(),
            hand_outs: hand_outs::HandOuts::default(),
            external: external::Providers::default(),
        }
    }

    /// This security, trusting callers and roles it read for `ttl`: how long a change made by
    /// another server sharing the database may take to be seen here.
    pub fn with_cache_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.recent = recent::Recent::new(ttl);
        self
    }

    /// This security, taking the tokens of `providers` too.
    pub fn with_external(mut self, providers: external::Providers) -> Self {
        self.external = providers;
        self
    }

    /// Whether `caller` holds `privilege` on `resource` at `branch`: the same decision as
    /// [`authorize`](Self::authorize), for choosing what to grant (read or read-write storage
    /// access), so a "no" is an answer, not a refusal, and is not audited.
    pub async fn allows(
        &self,
        caller: &Caller,
        privilege: Privilege,
        resource: Resource,
        branch: Option<&str>,
    ) -> Result<bool, ApiError> {
        if caller.unrestricted {
            return Ok(true);
        }
        let roles = self.roles(caller).await?;
        let request = Request {
            privilege,
            resource,
            branch: branch.map(str::to_owned),
        };
        Ok(matches!(
            authz::decide(&caller.principal, &roles, &request),
            Decision::Allow
        ))
    }

    /// The one authorization check: may `caller` do `privilege` on `resource` at `branch`?
    /// With `or_below`, holding it on anything beneath `resource` is enough (listings).
    /// A refusal is audited and answered with 403.
    pub async fn authorize(
        &self,
        caller: &Caller,
        privilege: Privilege,
        resource: Resource,
        branch: Option<&str>,
        or_below: bool,
    ) -> Result<(), ApiError> {
        if caller.unrestricted {
            return Ok(());
        }
        let roles = self.roles(caller).await?;
        let request = Request {
            privilege,
            resource,
            branch: branch.map(str::to_owned),
        };
        let decision = if or_below {
            authz::decide_any(&caller.principal, &roles, &request)
        } else {
            authz::decide(&caller.principal, &roles, &request)
        };
        match decision {
            Decision::Allow => Ok(()),
            Decision::Deny(reason) => {
                let target = match &request.branch {
                    Some(branch) => format!("{} at `{branch}`", request.resource),
                    None => request.resource.to_string(),
                };
                audit::denied(
                    self,
                    caller,
                    &format!("{privilege:?}"),
                    &target,
                    &reason.to_string(),
                )
                .await;
                Err(forbidden(format!(
                    "{} may not {} {target}",
                    caller.name(),
                    privilege_verb(privilege)
                )))
            }
        }
    }

    /// The roles that decide what `caller` may do. An admin's roles cannot add to what it
    /// may do, so none are read for it; everyone else's are read at most once per moment
    /// (see [`recent`]).
    pub async fn roles(&self, caller: &Caller) -> Result<Vec<authz::Role>, ApiError> {
        if caller.unrestricted || caller.principal.is_admin {
            return Ok(Vec::new());
        }
        // The same person may come with other groups in another token.
        let key = if caller.principal.groups.is_empty() {
            caller.principal.id.clone()
        } else {
            format!(
                "{}\n{}",
                caller.principal.id,
                caller.principal.groups.join("\n")
            )
        };
        if let Some(roles) = self.recent.roles(&key) {
            return Ok(roles);
        }
        let roles = self.stored_roles(caller).await?;
        self.recent.remember_roles(&key, roles.clone());
        Ok(roles)
    }

    /// The roles bound to `caller` as stored now, never remembered: what granting and binding
    /// check against, so that a change to grants never rests on a view a moment old.
    pub async fn stored_roles(&self, caller: &Caller) -> Result<Vec<authz::Role>, ApiError> {
        if caller.unrestricted {
            return Ok(Vec::new());
        }
        self.authz
            .roles_of(&caller.principal)
            .await
            .map_err(ApiError::from)
    }

    /// Refuses anyone but root.
    pub async fn require_root(&self, caller: &Caller, action: &str) -> Result<(), ApiError> {
        if caller.unrestricted || caller.is_root() {
            return Ok(());
        }
        audit::denied(self, caller, action, "deployment", "root only").await;
        Err(forbidden(format!(
            "{} may not {action}: root only",
            caller.name()
        )))
    }
}

fn privilege_verb(privilege: Privilege) -> &'static str {
    match privilege {
        Privilege::Read => "read",
        Privilege::Write => "write to",
        Privilege::Create => "create in",
        Privilege::Drop => "drop",
        Privilege::ManageRefs => "manage the refs of",
        Privilege::ManageGrants => "manage the grants of",
        Privilege::ManageCatalogs => "manage the catalogs of",
        Privilege::ManageUsers => "manage the users of",
        Privilege::ReadAudit => "read the audit log of",
    }
}

pub(crate) fn forbidden(message: String) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "ForbiddenException", message)
}

pub(crate) fn unauthorized(message: impl Into<String>) -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "NotAuthorizedException",
        message.into(),
    )
}

/// What a catalog, a namespace or a table of `catalog` is to authorization.
pub mod resource {
    use pangolin_catalog::Catalog;
    use pangolin_catalog::authz::Resource;
    use pangolin_store::ContentKey;

    pub fn catalog(catalog: &Catalog) -> Resource {
        Resource::Catalog {
            tenant: catalog.tenant().to_owned(),
            catalog: catalog.name().to_owned(),
        }
    }

    /// The namespace `key`, or the whole catalog for the root (no levels).
    pub fn namespace(catalog: &Catalog, key: Option<&ContentKey>) -> Resource {
        match key {
            Some(key) => Resource::Namespace {
                tenant: catalog.tenant().to_owned(),
                catalog: catalog.name().to_owned(),
                namespace: key.elements().map(str::to_owned).collect(),
            },
            None => self::catalog(catalog),
        }
    }

    /// The table or view `key` (its last element is the name).
    pub fn table(catalog: &Catalog, key: &ContentKey) -> Resource {
        let mut levels: Vec<String> = key.elements().map(str::to_owned).collect();
        let name = levels.pop().unwrap_or_default();
        Resource::Table {
            tenant: catalog.tenant().to_owned(),
            catalog: catalog.name().to_owned(),
            namespace: levels,
            name,
        }
    }
}

/// The listed `items` the current caller may see: those it may read, or read something
/// beneath (a namespace holding a table it may read is shown, its siblings are not). Every
/// item when authorization is off, for admins, and outside an authenticated request nothing.
pub async fn visible<T>(
    state: &crate::state::AppState,
    branch: &str,
    items: Vec<T>,
    resource_of: impl Fn(&T) -> Resource,
) -> Result<Vec<T>, ApiError> {
    let Some(caller) = Caller::current() else {
        return Ok(Vec::new());
    };
    if caller.unrestricted || caller.principal.is_admin {
        return Ok(items);
    }
    let roles = state.security.roles(&caller).await?;
    Ok(authz::filter_visible(
        &caller.principal,
        &roles,
        Privilege::Read,
        Some(branch),
        items,
        resource_of,
    ))
}

/// Authorizes the current caller: for handlers of routes whose target is in the body
/// ([`routes::Need::Handler`]). Outside an authenticated request it refuses.
pub async fn check(
    state: &crate::state::AppState,
    privilege: Privilege,
    resource: Resource,
    branch: &str,
) -> Result<(), ApiError> {
    let caller = Caller::current().ok_or_else(|| unauthorized("not signed in"))?;
    state
        .security
        .authorize(&caller, privilege, resource, Some(branch), false)
        .await
}
