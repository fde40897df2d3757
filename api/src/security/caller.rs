//! The principal a request acts as, and the tenant it acts in.
//!
//! The authentication layer decides the caller once per request and runs the rest of the
//! request inside [`Caller::scope`], so handlers and the catalog scope read it with
//! [`Caller::current`] instead of every handler threading it through its arguments.

use pangolin_catalog::authz::{Principal, PrincipalKind};

/// Who is calling.
#[derive(Debug, Clone)]
pub struct Caller {
    pub principal: Principal,
    /// The tenant the request acts in: the principal's own, or for root the one it chose.
    pub tenant: String,
    /// Whether authorization is off (the evaluation mode without authentication).
    pub unrestricted: bool,
    /// The access token's id, when the caller signed in with one (for logout).
    pub token_id: Option<String>,
}

tokio::task_local! {
    static CALLER: Caller;
}

impl Caller {
    /// The caller of a server that authenticates nobody: root of the default tenant.
    pub fn anonymous(tenant: &str) -> Self {
        Self {
            principal: Principal {
                // Not a signed-in principal: the name commits and audit events record.
                id: "anonymous".to_owned(),
                tenant: None,
                kind: PrincipalKind::User,
                is_admin: true,
                groups: Vec::new(),
            },
            tenant: tenant.to_owned(),
            unrestricted: true,
            token_id: None,
        }
    }

    /// Whether the caller is root: the deployment's administrator.
    pub fn is_root(&self) -> bool {
        self.principal.tenant.is_none() && self.principal.is_admin
    }

    /// The name commits and audit events record.
    pub fn name(&self) -> &str {
        &self.principal.id
    }

    /// Runs `future` as this caller.
    pub async fn scope<F: std::future::Future>(self, future: F) -> F::Output {
        CALLER.scope(self, future).await
    }

    /// The caller of the request being served, if the request went through authentication.
    pub fn current() -> Option<Self> {
        CALLER.try_with(Clone::clone).ok()
    }

    /// The tenant of the request being served, if it went through authentication.
    pub fn current_tenant() -> Option<String> {
        CALLER.try_with(|c| c.tenant.clone()).ok()
    }

    /// The name of the current caller, for commit metadata.
    pub fn current_name() -> String {
        CALLER
            .try_with(|c| c.principal.id.clone())
            .unwrap_or_else(|_| "anonymous".to_owned())
    }
}
