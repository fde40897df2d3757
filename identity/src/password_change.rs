//! Changing a password: by the user (who must give the old one) or a reset by an
//! administrator. Either way tokens issued before the change stop verifying.

use crate::Identity;
use crate::docs::{Change, StoreError};
use crate::layout;
use crate::names::{PrincipalName, Scope};
use crate::password::{HashError, Password, PasswordPolicyError};
use crate::principal::PrincipalId;
use crate::users::{UserDoc, user_id};

/// Changing or resetting a password failed.
#[derive(Debug, thiserror::Error)]
pub enum ChangePasswordError {
    /// The old password is wrong, or the user does not exist or is disabled (one answer, as
    /// for sign-in).
    #[error("invalid credentials")]
    InvalidCredentials,
    /// A reset named a user that does not exist.
    #[error("{0} does not exist")]
    NotFound(PrincipalId),
    /// The new password does not meet the policy.
    #[error(transparent)]
    Policy(#[from] PasswordPolicyError),
    /// bcrypt failed.
    #[error(transparent)]
    Hash(#[from] HashError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Identity {
    /// Sets a new password after checking the old one.
    pub async fn change_password(
        &self,
        scope: &Scope,
        name: &PrincipalName,
        old: &Password,
        new: &Password,
    ) -> Result<(), ChangePasswordError> {
        new.check_policy()?;
        self.authenticate(scope, name, old)
            .await
            .map_err(|e| match e {
                crate::AuthenticateError::InvalidCredentials => {
                    ChangePasswordError::InvalidCredentials
                }
                crate::AuthenticateError::Hash(e) => e.into(),
                crate::AuthenticateError::Store(e) => e.into(),
            })?;
        self.set_password(scope, name, new).await
    }

    /// Sets a new password without the old one: an administrator's reset.
    pub async fn reset_password(
        &self,
        scope: &Scope,
        name: &PrincipalName,
        new: &Password,
    ) -> Result<(), ChangePasswordError> {
        new.check_policy()?;
        self.set_password(scope, name, new).await
    }

    async fn set_password(
        &self,
        scope: &Scope,
        name: &PrincipalName,
        new: &Password,
    ) -> Result<(), ChangePasswordError> {
        let hash = self.inner.hasher.hash(new.expose()).await?;
        let now = self.now();
        let updated = self
            .docs()
            .update(&layout::user(scope, name)?, |mut doc: UserDoc| {
                doc.password_hash = hash.clone();
                doc.tokens_valid_after = doc.tokens_valid_after.max(now);
                Change::<_, ()>::Write(doc)
            })
            .await?;
        match updated {
            Some(_) => Ok(()),
            None => Err(ChangePasswordError::NotFound(user_id(scope, name))),
        }
    }
}
