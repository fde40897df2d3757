//! Users (people): created with a password in a scope, listed, disabled, deleted, and
//! authenticated by scope, name and password.

use pangolin_records::RecordKey;
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use crate::Identity;
use crate::docs::{Change, StoreError};
use crate::layout;
use crate::names::{PrincipalName, Scope};
use crate::password::{HashError, Password, PasswordHash, PasswordPolicyError};
use crate::principal::{Principal, PrincipalId, PrincipalKind};
use crate::service_users::name_under;

/// A user's stored document.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct UserDoc {
    pub(crate) password_hash: PasswordHash,
    pub(crate) is_admin: bool,
    pub(crate) disabled: bool,
    pub(crate) created: Timestamp,
    /// Tokens issued before this are refused: set at creation and on every password change.
    pub(crate) tokens_valid_after: Timestamp,
}

/// A user as shown to callers (never the password hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The user's scope.
    pub scope: Scope,
    /// The user's name, unique in the scope.
    pub name: PrincipalName,
    /// Root administrator (root scope) or tenant administrator (tenant scope).
    pub is_admin: bool,
    /// A disabled user cannot sign in and its tokens are refused.
    pub disabled: bool,
    /// When the user was created.
    pub created: Timestamp,
    /// Tokens issued before this time are refused.
    pub tokens_valid_after: Timestamp,
}

impl User {
    fn from_doc(scope: Scope, name: PrincipalName, doc: &UserDoc) -> Self {
        Self {
            scope,
            name,
            is_admin: doc.is_admin,
            disabled: doc.disabled,
            created: doc.created,
            tokens_valid_after: doc.tokens_valid_after,
        }
    }

    /// The user's principal id (`user:<scope>/<name>`).
    pub fn id(&self) -> PrincipalId {
        user_id(&self.scope, &self.name)
    }
}

/// One page of users in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserPage {
    /// The users on this page.
    pub users: Vec<User>,
    /// Set when more follow: list again with `after` set to it.
    pub next_after: Option<PrincipalName>,
}

pub(crate) fn user_id(scope: &Scope, name: &PrincipalName) -> PrincipalId {
    PrincipalId {
        kind: PrincipalKind::User,
        scope: scope.clone(),
        name: name.clone(),
    }
}

/// Creating a user failed.
#[derive(Debug, thiserror::Error)]
pub enum CreateUserError {
    /// The password does not meet the policy.
    #[error(transparent)]
    Policy(#[from] PasswordPolicyError),
    /// The scope already has a user of that name.
    #[error("{0} already exists")]
    AlreadyExists(PrincipalId),
    /// bcrypt failed.
    #[error(transparent)]
    Hash(#[from] HashError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Changing a user (disable, enable, delete) failed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateUserError {
    /// No such user.
    #[error("{0} does not exist")]
    NotFound(PrincipalId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Authentication failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthenticateError {
    /// Unknown user, wrong password or disabled user: deliberately one answer, so the
    /// answer does not tell whether the user exists.
    #[error("invalid credentials")]
    InvalidCredentials,
    /// bcrypt failed (a corrupt stored hash).
    #[error(transparent)]
    Hash(#[from] HashError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Identity {
    /// Creates user `name` in `scope` with `password`; `is_admin` makes a root administrator
    /// at the root or a tenant administrator in a tenant.
    pub async fn create_user(
        &self,
        scope: &Scope,
        name: &PrincipalName,
        password: &Password,
        is_admin: bool,
    ) -> Result<User, CreateUserError> {
        password.check_policy()?;
        let now = self.now();
        let doc = UserDoc {
            password_hash: self.inner.hasher.hash(password.expose()).await?,
            is_admin,
            disabled: false,
            created: now,
            tokens_valid_after: now,
        };
        if !self
            .docs()
            .create(&layout::user(scope, name)?, &doc)
            .await?
        {
            return Err(CreateUserError::AlreadyExists(user_id(scope, name)));
        }
        Ok(User::from_doc(scope.clone(), name.clone(), &doc))
    }

    /// The user, or `None` when the scope has no user of that name.
    pub async fn user(
        &self,
        scope: &Scope,
        name: &PrincipalName,
    ) -> Result<Option<User>, StoreError> {
        let doc = self.user_doc(scope, name).await?;
        Ok(doc.map(|doc| User::from_doc(scope.clone(), name.clone(), &doc)))
    }

    pub(crate) async fn user_doc(
        &self,
        scope: &Scope,
        name: &PrincipalName,
    ) -> Result<Option<UserDoc>, StoreError> {
        let doc = self
            .docs()
            .get::<UserDoc>(&layout::user(scope, name)?)
            .await?;
        Ok(doc.map(|d| d.value))
    }

    /// Up to `limit` users of `scope` in name order, after `after`.
    pub async fn list_users(
        &self,
        scope: &Scope,
        after: Option<&PrincipalName>,
        limit: usize,
    ) -> Result<UserPage, StoreError> {
        let after = after.map(|a| layout::user(scope, a)).transpose()?;
        let prefix = layout::users(scope);
        let (docs, next) = self
            .docs()
            .list::<UserDoc>(&prefix, after.as_ref(), limit)
            .await?;
        let name_of = |key: &RecordKey| name_under(&prefix, key);
        let mut users = Vec::with_capacity(docs.len());
        for (key, doc) in &docs {
            users.push(User::from_doc(scope.clone(), name_of(key)?, &doc.value));
        }
        let next_after = next.as_ref().map(name_of).transpose()?;
        Ok(UserPage { users, next_after })
    }

    /// Deletes the user; its tokens stop verifying.
    pub async fn delete_user(
        &self,
        scope: &Scope,
        name: &PrincipalName,
    ) -> Result<(), UpdateUserError> {
        if self.docs().delete(&layout::user(scope, name)?).await? {
            Ok(())
        } else {
            Err(UpdateUserError::NotFound(user_id(scope, name)))
        }
    }

    /// Disables (`true`) or enables (`false`) the user. A disabled user cannot sign in and its
    /// tokens are refused; enabling it again makes its unexpired tokens valid again.
    pub async fn set_user_disabled(
        &self,
        scope: &Scope,
        name: &PrincipalName,
        disabled: bool,
    ) -> Result<User, UpdateUserError> {
        let updated = self
            .docs()
            .update(&layout::user(scope, name)?, |mut doc: UserDoc| {
                if doc.disabled == disabled {
                    return Change::<_, ()>::Keep(doc);
                }
                doc.disabled = disabled;
                Change::Write(doc)
            })
            .await?;
        match updated {
            Some(Ok(doc)) => Ok(User::from_doc(scope.clone(), name.clone(), &doc)),
            _ => Err(UpdateUserError::NotFound(user_id(scope, name))),
        }
    }

    /// The user if `password` is theirs and they are enabled. Every refusal is the same
    /// [`AuthenticateError::InvalidCredentials`] and costs one bcrypt verification.
    pub async fn authenticate(
        &self,
        scope: &Scope,
        name: &PrincipalName,
        password: &Password,
    ) -> Result<Principal, AuthenticateError> {
        let Some(doc) = self.user_doc(scope, name).await? else {
            self.burn_verification(password.expose()).await?;
            return Err(AuthenticateError::InvalidCredentials);
        };
        let matches = self
            .inner
            .hasher
            .verify(password.expose(), &doc.password_hash)
            .await?;
        if !matches || doc.disabled {
            return Err(AuthenticateError::InvalidCredentials);
        }
        Ok(Principal {
            id: user_id(scope, name),
            is_admin: doc.is_admin,
            key_id: None,
        })
    }
}
