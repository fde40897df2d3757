//! How a request names a table or a view, and the reference it works at.
//!
//! A name may carry a reference: `sales@dev`, `sales@v1` (a tag), `sales@main#3fa9c1e2` (a
//! commit of `main`), `sales@main#2026-11-30T12:00:00Z` (what `main` was then), `sales@main~2`.
//! It overrides the reference of the URL prefix for that call. Tables and views are addressed
//! alike.

use pangolin_catalog::RefSpec;
use pangolin_refs::Reference;
use pangolin_store::ContentKey;
use serde::Deserialize;

use crate::error::ApiError;
use crate::namespaces::namespace_key;
use crate::state::Scope;

/// A table or view name as a client sent it: the name, and the reference it may carry.
#[derive(Debug)]
pub struct Name {
    pub name: String,
    pub at: Option<RefSpec>,
}

pub fn parse_name(raw: &str) -> Result<Name, ApiError> {
    match raw.split_once('@') {
        None => Ok(Name {
            name: raw.to_owned(),
            at: None,
        }),
        Some((name, reference)) => Ok(Name {
            name: name.to_owned(),
            at: Some(RefSpec::parse(reference).map_err(|e| {
                ApiError::bad_request(format!("invalid reference in `{raw}`: {e}"))
            })?),
        }),
    }
}

/// The key of `name` in the path's `namespace`, and the reference the call works at.
pub fn address(
    scope: &Scope,
    namespace: &str,
    name: &str,
) -> Result<(ContentKey, RefSpec), ApiError> {
    let parsed = parse_name(name)?;
    let key = namespace_key(namespace)?.child(&parsed.name)?;
    Ok((key, parsed.at.unwrap_or_else(|| scope.at.clone())))
}

/// The branch a write at `at` goes to, or why it cannot: not a branch, or a protected one,
/// which changes only through merge requests.
pub async fn writable(scope: &Scope, at: &RefSpec) -> Result<Reference, ApiError> {
    let resolved = scope.catalog.resolve(at).await?;
    let branch = resolved.writable_branch.ok_or_else(|| {
        ApiError::bad_request(format!(
            "`{at}` is read-only (a tag, a commit or a point in time); write to a branch"
        ))
    })?;
    scope.catalog.check_unprotected(&branch)?;
    Ok(branch)
}

/// A table or view identifier in a request body: `{"namespace": [...], "name": "..."}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identifier {
    pub namespace: Vec<String>,
    pub name: String,
}

impl Identifier {
    /// The key, and the reference the name carries, if any.
    pub fn key_and_ref(&self) -> Result<(ContentKey, Option<RefSpec>), ApiError> {
        let parsed = parse_name(&self.name)?;
        let key =
            ContentKey::new(self.namespace.iter().map(String::as_str))?.child(&parsed.name)?;
        Ok((key, parsed.at))
    }
}

/// The body of a table or view rename.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenameRequest {
    source: Identifier,
    destination: Identifier,
}

impl RenameRequest {
    /// The key renamed, its new key, and the branch the rename commits to.
    pub async fn resolve(
        &self,
        scope: &Scope,
    ) -> Result<(ContentKey, ContentKey, Reference), ApiError> {
        let (from, from_at) = self.source.key_and_ref()?;
        let (to, to_at) = self.destination.key_and_ref()?;
        let at = rename_at(scope, from_at, to_at)?;
        Ok((from, to, writable(scope, &at).await?))
    }
}

/// The one reference a rename works at: the source's and the destination's must agree, and
/// either wins over the prefix's.
fn rename_at(
    scope: &Scope,
    source: Option<RefSpec>,
    destination: Option<RefSpec>,
) -> Result<RefSpec, ApiError> {
    match (source, destination) {
        (None, None) => Ok(scope.at.clone()),
        (Some(a), None) | (None, Some(a)) => Ok(a),
        (Some(a), Some(b)) if a == b => Ok(a),
        (Some(a), Some(b)) => Err(ApiError::bad_request(format!(
            "a rename happens on one branch, but the source names `{a}` and the destination `{b}`"
        ))),
    }
}

/// Checks that a commit body's `identifier`, when given, names what its path names: the same
/// key at the same reference. `kind` and `raw` (the path's name) word the error.
pub fn ensure_body_matches_path(
    identifier: Option<&Identifier>,
    key: &ContentKey,
    at: &RefSpec,
    kind: &str,
    raw: &str,
) -> Result<(), ApiError> {
    let Some(identifier) = identifier else {
        return Ok(());
    };
    let (named, named_at) = identifier.key_and_ref()?;
    if named != *key || named_at.as_ref().is_some_and(|named_at| named_at != at) {
        return Err(ApiError::bad_request(format!(
            "the body names {kind} `{}` but the path names `{raw}` in `{}`",
            identifier.name,
            crate::namespaces::levels(key).join(".")
        )));
    }
    Ok(())
}
