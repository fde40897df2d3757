//! Importing a bundle into a catalog: a full bundle into a new, empty catalog; an incremental
//! one into the catalog whose refs are exactly those of the bundle it continues.
//!
//! The bundle is checked as it is read (every object's id is computed from its bytes, every
//! object must decode) and its objects are stored in batches; the refs move only after the
//! whole bundle was read, its hash matched, and every object it points to is either in it or
//! (for an incremental bundle) already in the catalog. So a damaged or altered bundle moves no
//! ref: at most some objects nothing points to were stored. The refs then move in one
//! transaction whose expectations are the refs the import started from, so a catalog that
//! changed meanwhile is left as it is.

use pangolin_refs::{
    Expected, RefKind, RefName, RefUpdate, Reference, Target, TransactError, Transaction,
};
use pangolin_store::{BackendError, ObjectId, ReadError, Timestamp};

use super::export::all_refs;
use super::format::{BundleError, BundleId, BundleRef, Header};
use super::intake::{Intake, IntakeError, Receiving};
use crate::catalog::{Catalog, DEFAULT_BRANCH};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Not a bundle, or cut, altered or incomplete.
    #[error(transparent)]
    Intake(#[from] IntakeError),
    #[error(
        "catalog `{catalog}` is not empty ({reason}): a full bundle is imported only into a \
         new catalog"
    )]
    NotEmpty { catalog: String, reason: String },
    #[error(
        "this bundle continues bundle {base}, but the catalog's refs are not that bundle's \
         ({reason}): import the bundles in the order they were exported"
    )]
    BaseMismatch { base: BundleId, reason: String },
    #[error("the bundle has no `{DEFAULT_BRANCH}` branch")]
    NoDefaultBranch,
    #[error("the catalog changed while the bundle was imported, so nothing was applied: {0}")]
    Moved(TransactError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl From<BundleError> for ImportError {
    fn from(error: BundleError) -> Self {
        Self::Intake(error.into())
    }
}

/// What an import did.
#[derive(Debug, Clone)]
pub struct Imported {
    pub bundle: BundleId,
    pub base: Option<BundleId>,
    /// Objects the bundle held (stored, or already there).
    pub objects: u64,
    /// The refs the catalog has now, as the bundle set them.
    pub refs: Vec<BundleRef>,
    /// Refs that moved, were created or deleted.
    pub changed: usize,
}

/// An import in progress: fed the bundle's bytes as they arrive, then finished.
#[derive(Debug)]
pub struct Importer<'a> {
    catalog: &'a Catalog,
    intake: Intake,
    header: Option<Header>,
    /// The refs the catalog had when the header was checked: the transaction's expectations.
    before: Vec<BundleRef>,
}

impl Catalog {
    /// Starts an import into this catalog.
    pub fn importer(&self) -> Importer<'_> {
        Importer {
            catalog: self,
            intake: Intake::default(),
            header: None,
            before: Vec::new(),
        }
    }
}

impl Receiving for Importer<'_> {
    type Error = ImportError;

    async fn feed(&mut self, bytes: &[u8]) -> Result<(), ImportError> {
        self.intake.push(bytes);
        while let Some(header) = self.intake.advance(self.catalog).await? {
            self.before = self.check_target(&header).await?;
            self.header = Some(header);
        }
        Ok(())
    }

    async fn abandon(self) {
        self.intake.abandon(self.catalog).await;
    }
}

impl Importer<'_> {
    /// Checks that the whole bundle arrived and applies its refs.
    #[tracing::instrument(level = "info", skip_all, fields(catalog = %self.catalog.name()))]
    pub async fn finish(self, principal: &str) -> Result<Imported, ImportError> {
        let Some(header) = self.header else {
            return Err(BundleError::Truncated.into());
        };
        // Only an incremental bundle may point into what the catalog already holds.
        let (taken, hold) = self
            .intake
            .finish(self.catalog, &header.refs, header.base.is_some())
            .await?;
        let id = taken.id;
        let odb = self.catalog.odb();
        let updates = updates(&self.before, &header.refs);
        let changed = updates.len();
        let moved = if updates.is_empty() {
            Ok(())
        } else {
            let tx = Transaction {
                updates,
                principal: principal.to_owned(),
                message: format!("import bundle {id}"),
                time: Timestamp::now(),
            };
            self.catalog
                .store()
                .transact(odb.repo(), tx)
                .await
                .map(drop)
                .map_err(|e| match e {
                    TransactError::Backend(e) => ImportError::Backend(e),
                    other => ImportError::Moved(other),
                })
        };
        if let Some(hold) = hold {
            hold.release(self.catalog).await;
        }
        moved?;
        tracing::info!(bundle = %id, objects = taken.objects, changed, "imported");
        Ok(Imported {
            bundle: id,
            base: header.base.map(|b| b.bundle),
            objects: taken.objects,
            refs: header.refs,
            changed,
        })
    }

    /// The catalog's refs, if the bundle may be imported into it: a full bundle needs a new
    /// catalog (only its default branch, at a first commit with nothing in it); an increment
    /// needs exactly the refs of the bundle it continues.
    async fn check_target(&self, header: &Header) -> Result<Vec<BundleRef>, ImportError> {
        let catalog = self.catalog;
        let refs = all_refs(catalog.store().as_ref(), catalog.odb().repo()).await?;
        if let Some(base) = &header.base {
            if !same_refs(&refs, &base.refs) {
                return Err(ImportError::BaseMismatch {
                    base: base.bundle,
                    reason: describe_difference(&refs, &base.refs),
                });
            }
            return Ok(refs);
        }
        if !header.refs.iter().any(is_default_branch) {
            return Err(ImportError::NoDefaultBranch);
        }
        let not_empty = |reason: String| ImportError::NotEmpty {
            catalog: catalog.name().to_owned(),
            reason,
        };
        let [main] = refs.as_slice() else {
            return Err(not_empty(format!(
                "it has {} branches and tags",
                refs.len()
            )));
        };
        if !is_default_branch(main) {
            return Err(not_empty(format!("it has {}", main.reference())));
        }
        let commit = catalog.odb().commit(&main.hash).await?;
        if !commit.parents.is_empty() || !catalog.odb().node(&commit.tree).await?.is_empty() {
            return Err(not_empty(format!("{DEFAULT_BRANCH} has commits")));
        }
        Ok(refs)
    }
}

fn is_default_branch(r: &BundleRef) -> bool {
    r.kind == RefKind::Branch && r.name.as_str() == DEFAULT_BRANCH
}

fn same_refs(a: &[BundleRef], b: &[BundleRef]) -> bool {
    let sorted = |refs: &[BundleRef]| {
        let mut refs: Vec<(Reference, ObjectId)> =
            refs.iter().map(|r| (r.reference(), r.hash)).collect();
        refs.sort();
        refs
    };
    sorted(a) == sorted(b)
}

/// The first difference between the catalog's refs and those expected, in words.
fn describe_difference(actual: &[BundleRef], expected: &[BundleRef]) -> String {
    for want in expected {
        match actual
            .iter()
            .find(|r| r.kind == want.kind && r.name == want.name)
        {
            None => return format!("it has no {}", want.reference()),
            Some(have) if have.hash != want.hash => {
                return format!(
                    "{} is at {}, not {}",
                    want.reference(),
                    have.hash,
                    want.hash
                );
            }
            Some(_) => {}
        }
    }
    match actual.iter().find(|r| {
        !expected
            .iter()
            .any(|w| w.kind == r.kind && w.name == r.name)
    }) {
        Some(extra) => format!("it also has {}", extra.reference()),
        None => "they differ".to_owned(),
    }
}

/// The ref changes that take the catalog from `before` to `after`, each expecting the value
/// it had in `before`.
fn updates(before: &[BundleRef], after: &[BundleRef]) -> Vec<RefUpdate> {
    let find = |refs: &[BundleRef], kind: RefKind, name: &RefName| {
        refs.iter()
            .find(|r| r.kind == kind && &r.name == name)
            .map(|r| r.hash)
    };
    let mut updates = Vec::new();
    for r in after {
        let expected = match find(before, r.kind, &r.name) {
            Some(hash) if hash == r.hash => continue,
            Some(hash) => Expected::Equals(hash),
            None => Expected::Absent,
        };
        updates.push(RefUpdate {
            reference: r.reference(),
            expected,
            target: Target::Set(r.hash),
        });
    }
    for r in before {
        if find(after, r.kind, &r.name).is_none() {
            updates.push(RefUpdate {
                reference: r.reference(),
                expected: Expected::Equals(r.hash),
                target: Target::Delete,
            });
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use pangolin_store::ObjectKind;

    use super::*;

    fn r(kind: RefKind, name: &str, n: u8) -> BundleRef {
        BundleRef {
            kind,
            name: RefName::new(name).unwrap(),
            hash: ObjectId::compute(ObjectKind::Commit, &[n]),
        }
    }

    #[test]
    fn updates_move_create_and_delete_from_what_was_there() {
        let before = vec![
            r(RefKind::Branch, "main", 1),
            r(RefKind::Branch, "old", 2),
            r(RefKind::Tag, "v1", 3),
        ];
        let after = vec![
            r(RefKind::Branch, "main", 4),
            r(RefKind::Branch, "new", 5),
            r(RefKind::Tag, "v1", 3),
        ];
        let updates = updates(&before, &after);
        let summary: Vec<(String, Expected, Target)> = updates
            .iter()
            .map(|u| (u.reference.to_string(), u.expected, u.target))
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    before[0].reference().to_string(),
                    Expected::Equals(before[0].hash),
                    Target::Set(after[0].hash)
                ),
                (
                    after[1].reference().to_string(),
                    Expected::Absent,
                    Target::Set(after[1].hash)
                ),
                (
                    before[1].reference().to_string(),
                    Expected::Equals(before[1].hash),
                    Target::Delete
                ),
            ]
        );
        assert!(same_refs(
            &before,
            &before.iter().rev().cloned().collect::<Vec<_>>()
        ));
        assert!(!same_refs(&before, &after));
        assert_eq!(
            describe_difference(&before, &after),
            format!(
                "{} is at {}, not {}",
                before[0].reference(),
                before[0].hash,
                after[0].hash
            )
        );
    }
}
