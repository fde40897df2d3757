//! Principals of identity providers: the person or program behind a provider's token, recorded
//! on first sign-in (just in time) so an administrator can see who signed in and disable
//! them, which refuses their tokens however valid the provider says they are.
//!
//! Ids are `oidc:<scope>/<provider>/<subject>` and, for their groups,
//! `group:<scope>/<provider>/<group>`, with `%`, `/`, spaces and control characters of the
//! subject or group percent-encoded; the scope is a tenant's name or `~` for a provider of the
//! root scope, whose principals belong to no tenant. Records are keyed by a hash of the subject
//! (`layout.rs`).

use pangolin_store::Timestamp;
use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use serde::{Deserialize, Serialize};

use crate::docs::{Change, StoreError, key};
use crate::identity::Identity;
use crate::layout;
use crate::names::{PrincipalName, Scope};

/// What a subject or group name may not carry as is inside a principal id.
const ID_PART: &AsciiSet = &CONTROLS.add(b'%').add(b'/').add(b' ');

/// The id of the person `subject` of `provider` in `scope`.
pub fn external_principal_id(scope: &Scope, provider: &PrincipalName, subject: &str) -> String {
    format!(
        "oidc:{scope}/{provider}/{}",
        utf8_percent_encode(subject, ID_PART)
    )
}

/// The id of the group `group` of `provider` in `scope`.
pub fn external_group_id(scope: &Scope, provider: &PrincipalName, group: &str) -> String {
    format!(
        "group:{scope}/{provider}/{}",
        utf8_percent_encode(group, ID_PART)
    )
}

/// A provider's principal as last seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ExternalPrincipal {
    /// `oidc:<scope>/<provider>/<subject>`.
    pub id: String,
    /// The tenant of its provider, or the root scope.
    pub scope: Scope,
    pub provider: PrincipalName,
    pub subject: String,
    pub username: Option<String>,
    pub email: Option<String>,
    /// The groups of the last token seen.
    pub groups: Vec<String>,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    /// A disabled principal's tokens are refused.
    pub disabled: bool,
}

/// What a verified token says about its bearer.
#[derive(Debug, Clone, Copy)]
pub struct ExternalSignIn<'a> {
    pub scope: &'a Scope,
    pub provider: &'a PrincipalName,
    pub subject: &'a str,
    pub username: Option<&'a str>,
    pub email: Option<&'a str>,
    pub groups: &'a [String],
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ExternalDoc {
    subject: String,
    username: Option<String>,
    email: Option<String>,
    groups: Vec<String>,
    first_seen: Timestamp,
    last_seen: Timestamp,
    disabled: bool,
}

/// Why an external sign-in was refused.
#[derive(Debug, thiserror::Error)]
pub enum ExternalSignInError {
    #[error("principal `{0}` is disabled")]
    Disabled(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a change to an external principal failed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateExternalError {
    #[error("`{0}` is not the id of a principal of an identity provider")]
    BadId(String),
    #[error("no principal `{0}` has signed in")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A page of a scope's external principals, in key order.
#[derive(Debug, Clone)]
pub struct ExternalPage {
    pub principals: Vec<ExternalPrincipal>,
    /// Pass back as `after` for the next page.
    pub next_after: Option<String>,
}

/// The scope, provider and subject of an `oidc:` id.
fn parse_id(id: &str) -> Option<(Scope, PrincipalName, String)> {
    let mut parts = id.strip_prefix("oidc:")?.splitn(3, '/');
    let scope = Scope::from_segment(parts.next()?).ok()?;
    let provider = PrincipalName::new(parts.next()?).ok()?;
    let subject = percent_decode_str(parts.next()?).decode_utf8().ok()?;
    (!subject.is_empty()).then(|| (scope, provider, subject.into_owned()))
}

impl ExternalDoc {
    fn principal(self, scope: &Scope, provider: &PrincipalName) -> ExternalPrincipal {
        ExternalPrincipal {
            id: external_principal_id(scope, provider, &self.subject),
            scope: scope.clone(),
            provider: provider.clone(),
            subject: self.subject,
            username: self.username,
            email: self.email,
            groups: self.groups,
            first_seen: self.first_seen,
            last_seen: self.last_seen,
            disabled: self.disabled,
        }
    }
}

impl Identity {
    /// Records a sign-in with a provider's verified token: the principal is created on its
    /// first sign-in, its username, email and groups follow the token, and `last_seen` moves
    /// when `touch` is set (the first use of a token). Refused when the principal is disabled.
    pub async fn external_sign_in(
        &self,
        sign_in: ExternalSignIn<'_>,
        touch: bool,
    ) -> Result<ExternalPrincipal, ExternalSignInError> {
        let key = layout::external(sign_in.scope, sign_in.provider, sign_in.subject)?;
        let now = self.now();
        let fresh = || ExternalDoc {
            subject: sign_in.subject.to_owned(),
            username: sign_in.username.map(str::to_owned),
            email: sign_in.email.map(str::to_owned),
            groups: sign_in.groups.to_vec(),
            first_seen: now,
            last_seen: now,
            disabled: false,
        };
        let doc = loop {
            let updated = self
                .docs()
                .update(&key, |mut doc: ExternalDoc| {
                    if doc.disabled {
                        return Change::Fail(());
                    }
                    let same = doc.username.as_deref() == sign_in.username
                        && doc.email.as_deref() == sign_in.email
                        && doc.groups == sign_in.groups;
                    if same && !touch {
                        return Change::Keep(doc);
                    }
                    doc.username = sign_in.username.map(str::to_owned);
                    doc.email = sign_in.email.map(str::to_owned);
                    doc.groups = sign_in.groups.to_vec();
                    doc.last_seen = now;
                    Change::Write(doc)
                })
                .await?;
            match updated {
                Some(Ok(doc)) => break doc,
                Some(Err(())) => {
                    let id =
                        external_principal_id(sign_in.scope, sign_in.provider, sign_in.subject);
                    return Err(ExternalSignInError::Disabled(id));
                }
                // First sign-in; a concurrent first sign-in may win the create, then update.
                None => {
                    let doc = fresh();
                    if self.docs().create(&key, &doc).await? {
                        break doc;
                    }
                }
            }
        };
        Ok(doc.principal(sign_in.scope, sign_in.provider))
    }

    /// The external principal `id`, if it ever signed in.
    pub async fn external_principal(
        &self,
        id: &str,
    ) -> Result<ExternalPrincipal, UpdateExternalError> {
        let (scope, provider, subject) =
            parse_id(id).ok_or_else(|| UpdateExternalError::BadId(id.to_owned()))?;
        let key = layout::external(&scope, &provider, &subject)?;
        match self.docs().get::<ExternalDoc>(&key).await? {
            Some(doc) => Ok(doc.value.principal(&scope, &provider)),
            None => Err(UpdateExternalError::NotFound(id.to_owned())),
        }
    }

    /// Disables or enables the external principal `id`.
    pub async fn set_external_disabled(
        &self,
        id: &str,
        disabled: bool,
    ) -> Result<ExternalPrincipal, UpdateExternalError> {
        let (scope, provider, subject) =
            parse_id(id).ok_or_else(|| UpdateExternalError::BadId(id.to_owned()))?;
        let key = layout::external(&scope, &provider, &subject)?;
        let updated = self
            .docs()
            .update(&key, |mut doc: ExternalDoc| {
                if doc.disabled == disabled {
                    return Change::<_, ()>::Keep(doc);
                }
                doc.disabled = disabled;
                Change::Write(doc)
            })
            .await?;
        match updated {
            Some(Ok(doc)) => Ok(doc.principal(&scope, &provider)),
            _ => Err(UpdateExternalError::NotFound(id.to_owned())),
        }
    }

    /// Up to `limit` external principals of `scope` after the page token `after`.
    pub async fn list_external_principals(
        &self,
        scope: &Scope,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ExternalPage, StoreError> {
        let prefix = layout::externals(scope);
        let after = after.map(|a| key(format!("{prefix}{a}"))).transpose()?;
        let (docs, next) = self
            .docs()
            .list::<ExternalDoc>(&prefix, after.as_ref(), limit)
            .await?;
        let mut principals = Vec::with_capacity(docs.len());
        for (key, doc) in docs {
            let provider = key
                .as_str()
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split_once('/'))
                .and_then(|(provider, _)| PrincipalName::new(provider).ok());
            let Some(provider) = provider else {
                continue;
            };
            principals.push(doc.value.principal(scope, &provider));
        }
        let next_after = next.and_then(|k| k.as_str().strip_prefix(&prefix).map(str::to_owned));
        Ok(ExternalPage {
            principals,
            next_after,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_encode_what_would_break_them_and_parse_back() {
        let tenant = Scope::tenant("acme").unwrap();
        let provider = PrincipalName::new("okta").unwrap();
        let id = external_principal_id(&tenant, &provider, "auth0|a/b c%");
        assert_eq!(id, "oidc:acme/okta/auth0|a%2Fb%20c%25");
        let (t, p, s) = parse_id(&id).unwrap();
        assert_eq!(
            (t.segment(), p.as_str(), s.as_str()),
            ("acme", "okta", "auth0|a/b c%")
        );
        assert_eq!(
            external_group_id(&tenant, &provider, "data engineers"),
            "group:acme/okta/data%20engineers"
        );
        let root = external_principal_id(&Scope::Root, &provider, "ops");
        assert_eq!(root, "oidc:~/okta/ops");
        assert_eq!(parse_id(&root).unwrap().0, Scope::Root);
        assert!(parse_id("oidc:a~b/okta/ops").is_none());
        assert!(parse_id("user:acme/ana").is_none());
        assert!(parse_id("oidc:acme/okta/").is_none());
        assert!(parse_id("oidc:acme").is_none());
    }
}
