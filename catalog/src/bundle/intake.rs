//! Objects arriving as a bundle's bytes, whether a bundle file being imported or a transfer
//! between servers: each checked as it is read (its id computed from its bytes, its body
//! decoded), stored in batches, and the whole checked at the end (the trailing hash, and
//! that everything pointed to is either in the bundle or, for a bundle that continues what
//! the catalog holds, already stored). No ref moves here: the caller moves refs once
//! [`Intake::finish`] passed, so a damaged, altered or cut bundle moves none. Until then, a
//! [`Hold`] keeps collections from taking what arrived.

use pangolin_store::{Object, ObjectId, RawObject, ReadError};

use super::format::{BundleError, BundleId, BundleReader, BundleRef, Closure, Header, Item};
use super::hold::Hold;
use crate::catalog::Catalog;
use crate::tenancy::records::RecordsError;

/// What reads a bundle or pack a piece at a time as it arrives: fed each piece, then either
/// finished by its own `finish` or abandoned when the rest will not come.
pub trait Receiving {
    type Error;

    /// Reads `bytes`, the next piece.
    fn feed(&mut self, bytes: &[u8]) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Gives up on what could not be read to its end, releasing what it holds.
    fn abandon(self) -> impl Future<Output = ()> + Send;
}

/// Objects stored together at most, and the bytes at which a batch is stored early.
const PUT_BATCH: usize = 512;
const PUT_BYTES: usize = 8 << 20;

#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error(transparent)]
    Malformed(#[from] BundleError),
    #[error(
        "the bundle points to {count} objects that neither it nor the catalog holds (the \
         first: {first}): it is incomplete or was altered"
    )]
    Incomplete { count: usize, first: ObjectId },
    #[error("{reference} points at {hash}, which is not a commit of the bundle or the catalog")]
    NotACommit {
        reference: pangolin_refs::Reference,
        hash: ObjectId,
    },
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Backend(#[from] pangolin_store::BackendError),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// What arrived whole.
#[derive(Debug, Clone)]
pub struct Taken {
    pub id: BundleId,
    /// Objects the bundle held (stored now, or already there).
    pub objects: u64,
    /// Their bytes, framing left out.
    pub bytes: u64,
}

/// Objects arriving, fed as bytes.
#[derive(Debug, Default)]
pub struct Intake {
    reader: BundleReader,
    closure: Closure,
    pending: Vec<RawObject>,
    pending_bytes: usize,
    bytes: u64,
    id: Option<BundleId>,
    /// The commits the header's refs point to, held from the first object stored.
    heads: Vec<ObjectId>,
    hold: Option<Hold>,
}

impl Intake {
    /// Adds the next piece of the bundle; [`Intake::advance`] reads it.
    pub fn push(&mut self, bytes: &[u8]) {
        self.reader.feed(bytes);
    }

    /// Reads what was pushed, storing objects as it goes, until the bytes run out (`None`)
    /// or the header was read, which is returned for the caller to check before any object
    /// is stored.
    pub async fn advance(&mut self, catalog: &Catalog) -> Result<Option<Header>, IntakeError> {
        while let Some(item) = self.reader.next_item()? {
            match item {
                Item::Header(header) => {
                    self.heads = header.refs.iter().map(|r| r.hash).collect();
                    return Ok(Some(*header));
                }
                Item::Object(raw, object) => self.take(catalog, raw, &object).await?,
                Item::End(id) => self.id = Some(id),
            }
        }
        Ok(None)
    }

    /// Checks that the whole bundle arrived and that every object it points to, and every
    /// ref's commit, is in it or, when `thin` (it continues what the catalog holds), stored.
    /// The hold it placed, if it stored anything, is the caller's to release once its refs
    /// moved; a bundle refused here releases its own.
    pub async fn finish(
        mut self,
        catalog: &Catalog,
        refs: &[BundleRef],
        thin: bool,
    ) -> Result<(Taken, Option<Hold>), IntakeError> {
        let checked = self.check(catalog, refs, thin).await;
        match checked {
            Ok(taken) => Ok((taken, self.hold)),
            Err(error) => {
                self.abandon(catalog).await;
                Err(error)
            }
        }
    }

    /// Gives up: releases the hold, if one was placed.
    pub async fn abandon(self, catalog: &Catalog) {
        if let Some(hold) = self.hold {
            hold.release(catalog).await;
        }
    }

    async fn check(
        &mut self,
        catalog: &Catalog,
        refs: &[BundleRef],
        thin: bool,
    ) -> Result<Taken, IntakeError> {
        self.reader.finish()?;
        let Some(id) = self.id else {
            return Err(BundleError::Truncated.into());
        };
        self.store_pending(catalog).await?;
        let odb = catalog.odb();
        let missing = self.closure.missing();
        if let Some(&first) = missing.first() {
            let mut held = thin;
            if thin {
                for ids in missing.chunks(PUT_BATCH) {
                    let found = catalog.store().get_many(odb.repo(), ids).await?;
                    held &= found.iter().all(Option::is_some);
                }
            }
            if !held {
                return Err(IntakeError::Incomplete {
                    count: missing.len(),
                    first,
                });
            }
        }
        for r in refs {
            let commit = self.closure.holds_commit(&r.hash)
                || (thin && matches!(odb.object(&r.hash).await?, Some(Object::Commit(_))));
            if !commit {
                return Err(IntakeError::NotACommit {
                    reference: r.reference(),
                    hash: r.hash,
                });
            }
        }
        Ok(Taken {
            id,
            objects: self.closure.held() as u64,
            bytes: self.bytes,
        })
    }

    async fn take(
        &mut self,
        catalog: &Catalog,
        raw: RawObject,
        object: &Object,
    ) -> Result<(), IntakeError> {
        self.closure.add(&raw, object);
        self.pending_bytes += raw.data.len();
        self.bytes += raw.data.len() as u64;
        self.pending.push(raw);
        if self.pending.len() >= PUT_BATCH || self.pending_bytes >= PUT_BYTES {
            self.store_pending(catalog).await?;
        }
        Ok(())
    }

    async fn store_pending(&mut self, catalog: &Catalog) -> Result<(), IntakeError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if self.hold.is_none() {
            self.hold = Some(Hold::place(catalog, &self.heads).await?);
        }
        let repo = catalog.odb().repo();
        catalog.store().put_many(repo, &self.pending).await?;
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }
}
