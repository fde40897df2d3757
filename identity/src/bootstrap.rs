//! The first root administrator, so a fresh deployment can be signed in to.

use crate::Identity;
use crate::docs::StoreError;
use crate::names::{NameError, PrincipalName, Scope};
use crate::password::Password;
use crate::random::{self, RandomError};
use crate::users::CreateUserError;

/// The name of the bootstrapped root administrator.
pub const ROOT_USER: &str = "root";

/// Bootstrapping failed.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The configured password was refused, or the store failed.
    #[error("could not create the root administrator: {0}")]
    Create(#[from] CreateUserError),
    /// No random bytes for a password.
    #[error(transparent)]
    Random(#[from] RandomError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// [`ROOT_USER`] was refused as a name (a constant that is valid; kept as an error rather
    /// than a panic).
    #[error(transparent)]
    Name(#[from] NameError),
}

impl Identity {
    /// Makes sure a root administrator exists. When none does, creates `root` with the
    /// configured password, or with a generated one that is returned so the caller can show
    /// it once. Returns `None` when there was nothing to do (also when another server created
    /// `root` at the same moment).
    pub async fn bootstrap_root(
        &self,
        configured: Option<&Password>,
    ) -> Result<Option<Password>, BootstrapError> {
        if self.root_admin_exists().await? {
            return Ok(None);
        }
        let generated = match configured {
            Some(_) => None,
            // 128 random bits, as 32 hex characters: within the policy's 12..=72.
            None => Some(Password::new(random::hex_string::<16>()?)),
        };
        let password = configured.or(generated.as_ref());
        let Some(password) = password else {
            return Ok(None);
        };
        let name = PrincipalName::new(ROOT_USER)?;
        match self.create_user(&Scope::Root, &name, password, true).await {
            Ok(_) => Ok(generated),
            Err(CreateUserError::AlreadyExists(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn root_admin_exists(&self) -> Result<bool, StoreError> {
        let mut after = None;
        loop {
            let page = self.list_users(&Scope::Root, after.as_ref(), 100).await?;
            if page.users.iter().any(|u| u.is_admin) {
                return Ok(true);
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => return Ok(false),
            }
        }
    }
}
