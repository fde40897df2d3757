//! Receiving: a pack's objects stored and checked, then either a remote's tracking refs
//! recorded (a fetch) or one branch moved (a push).
//!
//! Both refuse before moving anything unless the whole pack arrived, hashed to what it ends
//! with, and everything it points to is in it or already stored: an interrupted or altered
//! transfer leaves at most objects nothing points to, which collections take.

use pangolin_refs::{
    Expected, RefKind, RefName, RefUpdate, Reference, Target, TransactError, Transaction,
};
use pangolin_store::history::is_ancestor;
use pangolin_store::{BackendError, ObjectId, ReadError, Timestamp};

use super::record::{Remote, RemoteError};
use crate::bundle::{
    BundleError, BundleId, BundleRef, Header, Hold, Intake, IntakeError, Receiving, Taken,
};
use crate::catalog::Catalog;
use crate::merge_requests::Protected;

#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    #[error(transparent)]
    Intake(#[from] IntakeError),
    #[error("the pack is not one this request can take: {0}")]
    Unexpected(String),
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error(transparent)]
    Read(#[from] ReadError),
}

impl From<BundleError> for ReceiveError {
    fn from(error: BundleError) -> Self {
        Self::Intake(error.into())
    }
}

/// A pack being read.
#[derive(Debug)]
struct Incoming<'a> {
    catalog: &'a Catalog,
    intake: Intake,
    header: Option<Header>,
    /// For a push, the one ref the pack must carry.
    only: Option<Reference>,
}

impl<'a> Incoming<'a> {
    fn new(catalog: &'a Catalog, only: Option<Reference>) -> Self {
        Self {
            catalog,
            intake: Intake::default(),
            header: None,
            only,
        }
    }

    async fn feed(&mut self, bytes: &[u8]) -> Result<(), ReceiveError> {
        self.intake.push(bytes);
        while let Some(header) = self.intake.advance(self.catalog).await? {
            if header.base.is_some() {
                return Err(ReceiveError::Unexpected(
                    "it is an incremental bundle, which continues a bundle rather than what \
                     this catalog holds: import it instead"
                        .to_owned(),
                ));
            }
            if let Some(only) = &self.only {
                let carries = |r: &BundleRef| r.kind == only.kind && r.name == only.name;
                if header.refs.len() != 1 || !header.refs.iter().all(carries) {
                    let names: Vec<String> = header
                        .refs
                        .iter()
                        .map(|r| r.reference().to_string())
                        .collect();
                    return Err(ReceiveError::Unexpected(format!(
                        "a push of {only} carries that ref alone, not [{}]",
                        names.join(", ")
                    )));
                }
            }
            self.header = Some(header);
        }
        Ok(())
    }

    async fn finish(self) -> Result<(Header, Taken, Option<Hold>), ReceiveError> {
        let Some(header) = self.header else {
            return Err(BundleError::Truncated.into());
        };
        let (taken, hold) = self.intake.finish(self.catalog, &header.refs, true).await?;
        Ok((header, taken, hold))
    }

    async fn abandon(self) {
        self.intake.abandon(self.catalog).await;
    }
}

/// Releases a transfer's hold once its refs moved, or will not.
async fn release(catalog: &Catalog, hold: Option<Hold>) {
    if let Some(hold) = hold {
        hold.release(catalog).await;
    }
}

/// How one tracking ref changed in a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackingChange {
    pub reference: Reference,
    pub old: Option<ObjectId>,
    pub new: Option<ObjectId>,
    /// The new commit does not descend from the old one: the remote rewrote the ref.
    pub forced: bool,
}

/// What a fetch received.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub pack: BundleId,
    pub objects: u64,
    pub bytes: u64,
    pub remote: Remote,
    /// Refs that appeared, moved or went, in the remote's ref order.
    pub changes: Vec<TrackingChange>,
}

/// Receives a pack fetched from a remote.
#[derive(Debug)]
pub struct FetchReceiver<'a> {
    incoming: Incoming<'a>,
    remote: String,
}

impl Catalog {
    /// Starts receiving what was fetched from remote `remote`, which must exist.
    pub async fn fetch_receiver(&self, remote: &str) -> Result<FetchReceiver<'_>, ReceiveError> {
        self.remote(remote).await?;
        Ok(FetchReceiver {
            incoming: Incoming::new(self, None),
            remote: remote.to_owned(),
        })
    }

    /// Starts receiving a push: checks that the branch may move at all before any byte is
    /// read.
    pub fn push_receiver(&self, request: PushRequest) -> Result<PushReceiver<'_>, PushError> {
        let reference = request.reference();
        self.check_unprotected(&reference)?;
        Ok(PushReceiver {
            incoming: Incoming::new(self, Some(reference)),
            request,
        })
    }
}

impl Receiving for FetchReceiver<'_> {
    type Error = ReceiveError;

    async fn feed(&mut self, bytes: &[u8]) -> Result<(), ReceiveError> {
        self.incoming.feed(bytes).await
    }

    async fn abandon(self) {
        self.incoming.abandon().await;
    }
}

impl FetchReceiver<'_> {
    /// Checks the whole pack, then records its refs as the remote's.
    #[tracing::instrument(level = "info", skip_all, fields(catalog = %self.incoming.catalog.name(), remote = %self.remote))]
    pub async fn finish(self, principal: &str) -> Result<Fetched, ReceiveError> {
        let catalog = self.incoming.catalog;
        let (header, taken, hold) = self.incoming.finish().await?;
        let fetched = record_fetch(catalog, &self.remote, header, taken, principal).await;
        release(catalog, hold).await;
        fetched
    }
}

/// Records what a checked pack says the remote's refs are.
async fn record_fetch(
    catalog: &Catalog,
    remote: &str,
    header: Header,
    taken: Taken,
    principal: &str,
) -> Result<Fetched, ReceiveError> {
    let before = catalog.remote(remote).await?.value.refs;
    let mut changes = Vec::new();
    for r in &header.refs {
        let old = before
            .iter()
            .find(|b| b.kind == r.kind && b.name == r.name)
            .map(|b| b.hash);
        if old == Some(r.hash) {
            continue;
        }
        let forced = match old {
            Some(old) => !descends(catalog, old, r.hash).await?,
            None => false,
        };
        changes.push(TrackingChange {
            reference: r.reference(),
            old,
            new: Some(r.hash),
            forced,
        });
    }
    for b in &before {
        if !header
            .refs
            .iter()
            .any(|r| r.kind == b.kind && r.name == b.name)
        {
            changes.push(TrackingChange {
                reference: b.reference(),
                old: Some(b.hash),
                new: None,
                forced: false,
            });
        }
    }
    let remote = catalog.set_tracking(remote, header.refs, principal).await?;
    tracing::info!(pack = %taken.id, objects = taken.objects, changed = changes.len(), "fetched");
    Ok(Fetched {
        pack: taken.id,
        objects: taken.objects,
        bytes: taken.bytes,
        remote,
        changes,
    })
}

/// Whether `new` descends from `old`. A tracking ref's old commit may have been collected
/// after the remote rewrote it, which reads as not descending.
async fn descends(catalog: &Catalog, old: ObjectId, new: ObjectId) -> Result<bool, ReadError> {
    match is_ancestor(catalog.odb(), old, new).await {
        Ok(found) => Ok(found),
        Err(ReadError::Missing { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// A push of one branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushRequest {
    pub branch: RefName,
    /// Where the pusher saw the branch: the push lands only if it is still there. `None`:
    /// the branch must not exist (the push creates it).
    pub expected: Option<ObjectId>,
    /// Move the branch even when its head is not an ancestor of the new one.
    pub force: bool,
    /// Where the push comes from, for the ref log (`server/catalog`).
    pub origin: Option<String>,
}

impl PushRequest {
    pub fn reference(&self) -> Reference {
        Reference {
            kind: RefKind::Branch,
            name: self.branch.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(transparent)]
    Receive(#[from] ReceiveError),
    #[error(transparent)]
    Protected(#[from] Protected),
    #[error(
        "{reference} is at {}, not at {} as the push expected: fetch, merge, and push again",
        describe(*actual),
        describe(*expected)
    )]
    Stale {
        reference: Reference,
        expected: Option<ObjectId>,
        actual: Option<ObjectId>,
    },
    #[error(
        "{reference} is at {head}, which {new} does not descend from: the push would drop \
         commits; fetch, merge, and push again, or force it"
    )]
    NotFastForward {
        reference: Reference,
        head: ObjectId,
        new: ObjectId,
    },
    #[error("a tag named `{0}` exists: a branch of the same name would make it ambiguous")]
    TagExists(RefName),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

fn describe(head: Option<ObjectId>) -> String {
    head.map_or_else(|| "nothing (absent)".to_owned(), |h| h.to_string())
}

/// What a push did.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub pack: BundleId,
    pub objects: u64,
    pub bytes: u64,
    pub reference: Reference,
    pub previous: Option<ObjectId>,
    pub head: ObjectId,
    /// The branch moved to a commit that does not descend from where it was.
    pub forced: bool,
}

/// Receives a push.
#[derive(Debug)]
pub struct PushReceiver<'a> {
    incoming: Incoming<'a>,
    request: PushRequest,
}

impl Receiving for PushReceiver<'_> {
    type Error = ReceiveError;

    async fn feed(&mut self, bytes: &[u8]) -> Result<(), ReceiveError> {
        self.incoming.feed(bytes).await
    }

    async fn abandon(self) {
        self.incoming.abandon().await;
    }
}

impl PushReceiver<'_> {
    /// Checks the whole pack, then moves the branch from where the pusher saw it.
    #[tracing::instrument(level = "info", skip_all, fields(catalog = %self.incoming.catalog.name(), branch = %self.request.branch))]
    pub async fn finish(self, principal: &str) -> Result<Pushed, PushError> {
        let catalog = self.incoming.catalog;
        let (header, taken, hold) = self.incoming.finish().await?;
        let pushed = land_push(catalog, self.request, header, taken, principal).await;
        release(catalog, hold).await;
        pushed
    }
}

/// Moves the pushed branch to a checked pack's head.
async fn land_push(
    catalog: &Catalog,
    request: PushRequest,
    header: Header,
    taken: Taken,
    principal: &str,
) -> Result<Pushed, PushError> {
    let reference = request.reference();
    let new = header.refs[0].hash;
    let repo = catalog.odb().repo();
    let actual = catalog.store().get_ref(repo, &reference).await?;
    if actual != request.expected {
        return Err(PushError::Stale {
            reference,
            expected: request.expected,
            actual,
        });
    }
    let pushed = |previous: Option<ObjectId>, forced: bool| Pushed {
        pack: taken.id,
        objects: taken.objects,
        bytes: taken.bytes,
        reference: reference.clone(),
        previous,
        head: new,
        forced,
    };
    let forced = match actual {
        Some(head) if head == new => return Ok(pushed(actual, false)),
        Some(head) => {
            let forward = is_ancestor(catalog.odb(), head, new).await?;
            if !forward && !request.force {
                return Err(PushError::NotFastForward {
                    reference,
                    head,
                    new,
                });
            }
            !forward
        }
        None => {
            let tag = Reference {
                kind: RefKind::Tag,
                name: request.branch.clone(),
            };
            if catalog.store().get_ref(repo, &tag).await?.is_some() {
                return Err(PushError::TagExists(request.branch));
            }
            false
        }
    };
    let from = request
        .origin
        .as_deref()
        .map_or_else(String::new, |o| format!(" from {o}"));
    let message = match actual {
        Some(head) if forced => format!("forced push{from} (was {head})"),
        _ => format!("push{from}"),
    };
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: reference.clone(),
            expected: actual.map_or(Expected::Absent, Expected::Equals),
            target: Target::Set(new),
        }],
        principal: principal.to_owned(),
        message,
        time: Timestamp::now(),
    };
    match catalog.store().transact(repo, tx).await {
        Ok(_) => {}
        Err(TransactError::Backend(e)) => return Err(e.into()),
        Err(_) => {
            let now = catalog.store().get_ref(repo, &reference).await?;
            return Err(PushError::Stale {
                reference,
                expected: request.expected,
                actual: now,
            });
        }
    }
    tracing::info!(pack = %taken.id, objects = taken.objects, %new, forced, "pushed");
    Ok(pushed(actual, forced))
}
