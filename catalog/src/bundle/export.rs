//! Exporting a catalog: its refs and every object they reach, as a bundle.
//!
//! An export is planned first (the refs are read, an incremental export's base checked), so
//! that what can be refused is refused before the first byte is sent; then it is written in
//! pieces to a channel. The walk reads each object once, whatever number of commits share it,
//! and an incremental export leaves out every object its base's refs reach.

use bytes::Bytes;
use pangolin_refs::Reference;
use pangolin_store::{BackendError, ObjectId, ObjectStore, RepoId, Timestamp};
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
    /// Commits whose reach is left out: the receiver holds it.
    exclude: Vec<ObjectId>,
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
        Ok(self.export_of(refs, base, exclude))
    }

    /// An export of `refs` leaving out what the commits of `exclude` reach, which must be
    /// stored.
    pub(crate) fn export_of(
        &self,
        refs: Vec<BundleRef>,
        base: Option<Base>,
        exclude: Vec<ObjectId>,
    ) -> Export {
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
            exclude,
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
        let mut walk = Reach::default();
        for id in &self.exclude {
            walk.push(*id);
        }
        while !walk.next(store, &self.repo).await?.is_empty() {}
        for r in &self.header.refs {
            walk.push(r.hash);
        }
        let (mut writer, start) = BundleWriter::start(&self.header);
        let mut bytes = start.len() as u64;
        send(&out, start).await?;
        let mut objects = 0u64;
        loop {
            let batch = walk.next(store, &self.repo).await?;
            if batch.is_empty() {
                break;
            }
            for (raw, _) in &batch {
                let piece = writer.object(raw);
                bytes += piece.len() as u64;
                objects += 1;
                send(&out, piece).await?;
            }
        }
        let (id, end) = writer.finish();
        bytes += end.len() as u64;
        send(&out, end).await?;
        tracing::info!(%id, objects, bytes, excluded = self.exclude.len(), "exported");
        Ok(Exported { id, objects, bytes })
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
