//! Exporting a catalog: its refs and every object they reach, as a bundle.
//!
//! An export is planned first (the refs are read, an incremental export's base checked), so
//! that what can be refused is refused before the first byte is sent; then it is written in
//! pieces to a channel. The walk reads each object once, whatever number of commits share it,
//! and an incremental export leaves out every object its base's refs reach.

use std::collections::HashSet;

use bytes::Bytes;
use pangolin_refs::{RefQuery, Reference};
use pangolin_store::{BackendError, Object, ObjectId, ObjectStore, RepoId, Timestamp};
use tokio::sync::mpsc;

use super::format::{Base, BundleId, BundleRef, BundleWriter, Header, references};
use crate::address::rfc3339;
use crate::catalog::Catalog;
use crate::store::Store;

/// Objects read from the store at once.
const BATCH: usize = 256;

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
    #[error("object {0} is reachable from a ref but not stored: the catalog is damaged")]
    Missing(ObjectId),
    #[error("object {id} is damaged: {reason}")]
    Corrupt { id: ObjectId, reason: String },
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
        Ok(Export {
            store: self.store().clone(),
            repo,
            header: Header {
                tenant: self.tenant().to_owned(),
                catalog: self.name().to_owned(),
                exported_at: rfc3339(Timestamp::now()),
                refs,
                base,
            },
        })
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
        let mut walk = Walk::default();
        if let Some(base) = &self.header.base {
            for r in &base.refs {
                walk.push(r.hash);
            }
            while !walk.next(store, &self.repo).await?.is_empty() {}
        }
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
            for raw in &batch {
                let piece = writer.object(raw);
                bytes += piece.len() as u64;
                objects += 1;
                send(&out, piece).await?;
            }
        }
        let (id, end) = writer.finish();
        bytes += end.len() as u64;
        send(&out, end).await?;
        tracing::info!(%id, objects, bytes, "exported");
        Ok(Exported { id, objects, bytes })
    }
}

async fn send(out: &mpsc::Sender<Bytes>, bytes: Bytes) -> Result<(), ExportError> {
    out.send(bytes).await.map_err(|_| ExportError::Cancelled)
}

/// Every branch and tag, in ref order.
pub(super) async fn all_refs(
    store: &dyn Store,
    repo: &RepoId,
) -> Result<Vec<BundleRef>, BackendError> {
    let mut refs = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_refs(
                repo,
                &RefQuery {
                    kind: None,
                    prefix: String::new(),
                    after,
                    limit: 1000,
                },
            )
            .await?;
        refs.extend(page.refs.iter().map(|(r, hash)| BundleRef::new(r, *hash)));
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(refs),
        }
    }
}

/// A walk over the objects reachable from the ids pushed, each read once.
#[derive(Default)]
struct Walk {
    seen: HashSet<ObjectId>,
    frontier: Vec<ObjectId>,
}

impl Walk {
    fn push(&mut self, id: ObjectId) {
        if self.seen.insert(id) {
            self.frontier.push(id);
        }
    }

    /// The next objects of the walk (none once it is over), their references pushed.
    async fn next(
        &mut self,
        store: &dyn ObjectStore,
        repo: &RepoId,
    ) -> Result<Vec<pangolin_store::RawObject>, ExportError> {
        let at = self.frontier.len().saturating_sub(BATCH);
        let ids = self.frontier.split_off(at);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let found = store.get_many(repo, &ids).await?;
        let mut batch = Vec::with_capacity(ids.len());
        for (id, raw) in ids.into_iter().zip(found) {
            let raw = raw.ok_or(ExportError::Missing(id))?;
            let object = Object::decode(&raw).map_err(|e| ExportError::Corrupt {
                id,
                reason: e.to_string(),
            })?;
            for next in references(&object) {
                self.push(next);
            }
            batch.push(raw);
        }
        Ok(batch)
    }
}
