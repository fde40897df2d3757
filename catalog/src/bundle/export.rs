//! Exporting a catalog: its refs and every object they reach, as a bundle.
//!
//! An export is planned first (the refs are read, an incremental export's base checked), so
//! that what can be refused is refused before the first byte is sent; then it is written in
//! pieces to a channel. The walk reads each object once, whatever number of commits share it,
//! and an incremental export leaves out every object its base's refs reach.

use bytes::Bytes;
use pangolin_refs::Reference;
use pangolin_store::{BackendError, Object, ObjectId, ObjectStore, RepoId, Timestamp};
use tokio::sync::mpsc;

use super::format::{Base, BundleId, BundleRef, BundleWriter, Header};
use crate::address::rfc3339;
use crate::catalog::Catalog;
use crate::reach::{self, Reach, ReachError};
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(
        "the base bundle's {reference} points at {hash}, which this catalog does not hold: \
         export in full, or continue a bundle of this catalog"
    )]
    UnknownBase {
        reference: Reference,
        hash: ObjectId,
    },
    #[error(transparent)]
    History(#[from] ReachError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("the export's reader went away")]
    Cancelled,
}

/// An export whose refs were read and whose base was checked.
pub struct Export {
    store: std::sync::Arc<dyn Store>,
    repo: RepoId,
    header: Header,
    plan: Plan,
}

/// Which objects an export writes besides its header.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Everything the refs reach but what these commits reach, walked whole: exact, at the
    /// cost of reading all their history.
    Beyond(Vec<ObjectId>),
    /// These commits, each before its ancestors, and what their trees reach beyond the trees
    /// the receiver is known to hold.
    Commits {
        commits: Vec<ObjectId>,
        known_trees: Vec<ObjectId>,
    },
}

/// What an export wrote.
#[derive(Debug, Clone, Copy)]
pub struct Exported {
    pub id: BundleId,
    pub objects: u64,
    pub bytes: u64,
}

impl Catalog {
    /// Plans an export of every branch and tag; with `base`, only what its refs do not reach.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %self.tenant(), catalog = %self.name()))]
    pub async fn plan_export(&self, base: Option<Base>) -> Result<Export, ExportError> {
        let repo = self.odb().repo().clone();
        if let Some(base) = &base {
            for r in &base.refs {
                if !self.store().contains(&repo, &r.hash).await? {
                    return Err(ExportError::UnknownBase {
                        reference: r.reference(),
                        hash: r.hash,
                    });
                }
            }
        }
        let refs = all_refs(self.store().as_ref(), &repo).await?;
        let exclude = base
            .iter()
            .flat_map(|b| b.refs.iter().map(|r| r.hash))
            .collect();
        Ok(self.export_of(refs, base, Plan::Beyond(exclude)))
    }

    /// An export of `refs` writing what `plan` says, whose objects must be stored.
    pub(crate) fn export_of(&self, refs: Vec<BundleRef>, base: Option<Base>, plan: Plan) -> Export {
        Export {
            store: self.store().clone(),
            repo: self.odb().repo().clone(),
            header: Header {
                tenant: self.tenant().to_owned(),
                catalog: self.name().to_owned(),
                exported_at: rfc3339(Timestamp::now()),
                refs,
                base,
            },
            plan,
        }
    }
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export")
            .field("repo", &self.repo)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl Export {
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Writes the bundle to `out`, piece by piece.
    #[tracing::instrument(level = "info", skip_all, fields(catalog = %self.header.catalog))]
    pub async fn write(self, out: mpsc::Sender<Bytes>) -> Result<Exported, ExportError> {
        let store: &dyn ObjectStore = self.store.as_ref();
        let (mut writer, start) = BundleWriter::start(&self.header);
        let mut written = Written {
            out: &out,
            objects: 0,
            bytes: start.len() as u64,
        };
        send(&out, start).await?;
        match &self.plan {
            Plan::Beyond(exclude) => {
                let mut walk = Reach::default();
                for id in exclude {
                    walk.push(*id);
                }
                while !walk.next(store, &self.repo).await?.is_empty() {}
                for r in &self.header.refs {
                    walk.push(r.hash);
                }
                drain(
                    store,
                    &self.repo,
                    &mut walk,
                    None,
                    &mut writer,
                    &mut written,
                )
                .await?;
            }
            Plan::Commits {
                commits,
                known_trees,
            } => {
                // Only left out: a node missing there is one more to send, not an error.
                let mut known = Reach::default();
                known.set_lenient(true);
                for id in known_trees {
                    known.push(*id);
                }
                while !known.next(store, &self.repo).await?.is_empty() {}
                let mut trees = Reach::default();
                for ids in commits.chunks(WRITE_BATCH) {
                    for (id, raw) in ids.iter().zip(store.get_many(&self.repo, ids).await?) {
                        let raw = raw.ok_or(ReachError::Missing(*id))?;
                        let corrupt = |reason: String| ReachError::Corrupt { id: *id, reason };
                        let Object::Commit(commit) =
                            Object::decode(&raw).map_err(|e| corrupt(e.to_string()))?
                        else {
                            return Err(corrupt("stored as a tree node".to_owned()).into());
                        };
                        if !known.contains(&commit.tree) {
                            trees.push(commit.tree);
                        }
                        written.object(&mut writer, &raw).await?;
                    }
                }
                drain(
                    store,
                    &self.repo,
                    &mut trees,
                    Some(&known),
                    &mut writer,
                    &mut written,
                )
                .await?;
            }
        }
        let (id, end) = writer.finish();
        let (objects, bytes) = (written.objects, written.bytes + end.len() as u64);
        send(&out, end).await?;
        tracing::info!(%id, objects, bytes, "exported");
        Ok(Exported { id, objects, bytes })
    }
}

/// Objects read from the store at once when their ids are known.
const WRITE_BATCH: usize = 256;

/// What was written so far.
struct Written<'a> {
    out: &'a mpsc::Sender<Bytes>,
    objects: u64,
    bytes: u64,
}

impl Written<'_> {
    async fn object(
        &mut self,
        writer: &mut BundleWriter,
        raw: &pangolin_store::RawObject,
    ) -> Result<(), ExportError> {
        let piece = writer.object(raw);
        self.bytes += piece.len() as u64;
        self.objects += 1;
        send(self.out, piece).await
    }
}

/// Writes every object `walk` reaches beyond `known`, in walk order.
async fn drain(
    store: &dyn ObjectStore,
    repo: &RepoId,
    walk: &mut Reach,
    known: Option<&Reach>,
    writer: &mut BundleWriter,
    written: &mut Written<'_>,
) -> Result<(), ExportError> {
    loop {
        let batch = walk.next_beyond(store, repo, known).await?;
        if batch.is_empty() {
            return Ok(());
        }
        for (raw, _) in &batch {
            written.object(writer, raw).await?;
        }
    }
}

async fn send(out: &mpsc::Sender<Bytes>, bytes: Bytes) -> Result<(), ExportError> {
    out.send(bytes).await.map_err(|_| ExportError::Cancelled)
}

/// Every branch and tag, in ref order.
pub(crate) async fn all_refs(
    store: &dyn Store,
    repo: &RepoId,
) -> Result<Vec<BundleRef>, BackendError> {
    Ok(reach::all_refs(store, repo)
        .await?
        .iter()
        .map(|(r, hash)| BundleRef::new(r, *hash))
        .collect())
}
