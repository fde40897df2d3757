//! Sending: the refs a receiver wants and the objects they reach that it does not hold.

use std::collections::HashSet;

use pangolin_refs::RefName;
use pangolin_store::{BackendError, Object, ObjectId, ReadError};

use super::negotiate::boundary;
use crate::bundle::Export;
use crate::bundle::export::{Plan, all_refs};
use crate::catalog::Catalog;

/// The most commits a receiver may say it holds in one request.
pub const MAX_HAVES: usize = 10_000;
/// Objects looked up at once.
const LOOKUP: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("this catalog has no branch or tag named `{0}`")]
    UnknownRef(String),
    #[error("at most {MAX_HAVES} commits may be named as held, not {0}")]
    TooManyHaves(usize),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Read(#[from] ReadError),
}

impl Catalog {
    /// Plans a pack of the branches and tags named in `want` (every one when `None`) holding
    /// what they reach beyond what the commits of `have` reach (see [`super::negotiate`]).
    /// Commits of `have` this catalog does not hold are ignored: the receiver made them, and
    /// what they reach is sent unless something held reaches it too.
    #[tracing::instrument(level = "debug", skip_all, fields(catalog = %self.name(), haves = have.len()))]
    pub async fn plan_pack(
        &self,
        want: Option<&[RefName]>,
        have: &[ObjectId],
    ) -> Result<Export, PackError> {
        if have.len() > MAX_HAVES {
            return Err(PackError::TooManyHaves(have.len()));
        }
        let repo = self.odb().repo();
        let mut refs = all_refs(self.store().as_ref(), repo).await?;
        if let Some(want) = want {
            if let Some(unknown) = want
                .iter()
                .find(|name| !refs.iter().any(|r| &r.name == *name))
            {
                return Err(PackError::UnknownRef(unknown.as_str().to_owned()));
            }
            refs.retain(|r| want.contains(&r.name));
        }
        let unique: Vec<ObjectId> = have
            .iter()
            .copied()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let mut held = Vec::new();
        for ids in unique.chunks(LOOKUP) {
            let found = self.store().get_many(repo, ids).await?;
            held.extend(
                ids.iter()
                    .zip(found)
                    .filter(|(_, raw)| {
                        raw.as_ref()
                            .is_some_and(|raw| matches!(Object::decode(raw), Ok(Object::Commit(_))))
                    })
                    .map(|(id, _)| *id),
            );
        }
        // With nothing in common, everything the refs reach goes, as for a bundle.
        let plan = if held.is_empty() {
            Plan::Beyond(Vec::new())
        } else {
            let wants: Vec<ObjectId> = refs.iter().map(|r| r.hash).collect();
            let found = boundary(self.odb(), &wants, &held).await?;
            Plan::Commits {
                commits: found.commits,
                known_trees: found.known_trees,
            }
        };
        Ok(self.export_of(refs, None, plan))
    }
}
