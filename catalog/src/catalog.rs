//! A catalog: one repository of the versioned store, addressed by tenant and name.

use std::fmt;
use std::sync::Arc;

use pangolin_refs::{
    Expected, RefKind, RefName, RefUpdate, Reference, Target, TransactError, Transaction,
};
use pangolin_store::history::{self, AncestorError};
use pangolin_store::odb::ResolveError as PrefixError;
use pangolin_store::{
    BackendError, CommitDraft, HashPrefix, ObjectCache, ObjectId, Odb, ReadError, RepoId,
    Timestamp, tree,
};

use crate::address::{RefSpec, Resolved};
use crate::commit_queue::CommitQueues;
use crate::events::EventCache;
use crate::merge_requests::{BranchProtection, Protected};
use crate::retention::RetentionPolicy;
use crate::store::Store;
use crate::versioning::TableMergeMode;
use crate::warehouse::Warehouse;

/// The branch every catalog starts with.
pub const DEFAULT_BRANCH: &str = "main";

/// One catalog of one tenant.
#[derive(Clone)]
pub struct Catalog {
    tenant: String,
    name: String,
    store: Arc<dyn Store>,
    cache: Arc<ObjectCache>,
    odb: Odb,
    warehouse: Option<Warehouse>,
    commits: Arc<CommitQueues>,
    /// `None`: every commit stays readable.
    retention: Option<Arc<RetentionPolicy>>,
    /// `None`: no branch is protected.
    protection: Option<Arc<BranchProtection>>,
    /// How merges treat a table changed on both sides, unless a merge says.
    table_merge: TableMergeMode,
    /// `None`: events are derived afresh for every read.
    events: Option<Arc<EventCache>>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog")
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("`{0}` is not a valid tenant or catalog name: use letters, digits, `-` and `_`")]
    InvalidName(String),
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("catalog `{0}` already exists")]
    Exists(String),
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("writing the first commit: {0}")]
    Commit(#[from] history::CreateCommitError),
}

/// Why a reference expression did not resolve.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no branch or tag named `{0}`")]
    UnknownRef(RefName),
    #[error("commit {commit} is not in the history of {reference}")]
    NotReachable { commit: ObjectId, reference: String },
    #[error("{0} is not a commit of this catalog")]
    NotACommit(ObjectId),
    #[error("{reference} did not exist at {time}")]
    NotYetThere { reference: String, time: Timestamp },
    #[error(
        "{what} is older than this catalog keeps its history ({reference}: commits since {}); \
         read a newer commit, or a branch or tag that points at it",
        crate::address::rfc3339(*.since)
    )]
    BeyondRetention {
        what: String,
        reference: String,
        since: Timestamp,
    },
    #[error(transparent)]
    Prefix(#[from] PrefixError),
    #[error(transparent)]
    TooShallow(AncestorError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl From<AncestorError> for ResolveError {
    fn from(error: AncestorError) -> Self {
        match error {
            AncestorError::Read(e) => Self::Read(e),
            other => Self::TooShallow(other),
        }
    }
}

/// The rule for tenant and catalog names (also warehouse names, in `tenancy`): 1 to 63 ASCII
/// letters, digits, `-` and `_`, so a name is safe in record keys, repository ids and URLs.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl Catalog {
    /// The catalog `name` of `tenant` in `store`. Does not check that it exists.
    pub fn open(
        store: Arc<dyn Store>,
        cache: Arc<ObjectCache>,
        tenant: &str,
        name: &str,
    ) -> Result<Self, OpenError> {
        for part in [tenant, name] {
            if !valid_name(part) {
                return Err(OpenError::InvalidName(part.to_owned()));
            }
        }
        // Tenant and catalog names cannot contain `.`, so this is unambiguous.
        let repo = RepoId::new(format!("{tenant}.{name}"))
            .map_err(|_| OpenError::InvalidName(name.to_owned()))?;
        let odb = Odb::new(repo, store.clone(), cache.clone());
        Ok(Self {
            tenant: tenant.to_owned(),
            name: name.to_owned(),
            store,
            cache,
            odb,
            warehouse: None,
            // A catalog opened alone chains only its own commits; a server shares one set of
            // queues between all the catalogs it opens (`with_commit_queues`).
            commits: Arc::new(CommitQueues::new()),
            events: None,
            retention: None,
            protection: None,
            table_merge: TableMergeMode::Off,
        })
    }

    /// Creates the catalog: an empty first commit on `main`.
    pub async fn create(
        store: Arc<dyn Store>,
        cache: Arc<ObjectCache>,
        tenant: &str,
        name: &str,
        principal: &str,
    ) -> Result<Self, CreateError> {
        let catalog = Self::open(store, cache, tenant, name)?;
        let tree = tree::empty(&catalog.odb).await?;
        let draft = CommitDraft {
            parents: Vec::new(),
            tree,
            author: principal.to_owned(),
            committer: principal.to_owned(),
            message: format!("create catalog {name}"),
            properties: [("operation".to_owned(), "create-catalog".to_owned())].into(),
        };
        let now = Timestamp::now();
        let (root, _) = history::create(&catalog.odb, draft, now).await?;
        let tx = Transaction {
            updates: vec![RefUpdate {
                reference: catalog.default_branch(),
                expected: Expected::Absent,
                target: Target::Set(root),
            }],
            principal: principal.to_owned(),
            message: "create catalog".to_owned(),
            time: now,
        };
        match catalog.store.transact(catalog.odb.repo(), tx).await {
            Ok(_) => Ok(catalog),
            Err(TransactError::OutOfDate { .. }) => Err(CreateError::Exists(name.to_owned())),
            Err(TransactError::Backend(e)) => Err(e.into()),
            Err(other) => Err(CreateError::Backend(BackendError::new(
                pangolin_store::BackendErrorKind::Other,
                "catalog.create",
                other.to_string(),
            ))),
        }
    }

    /// The same catalog, writing table files to `warehouse`.
    pub fn with_warehouse(mut self, warehouse: Warehouse) -> Self {
        self.warehouse = Some(warehouse);
        self
    }

    /// The same catalog, keeping its history readable only as `policy` says.
    pub fn with_retention(mut self, policy: Option<Arc<RetentionPolicy>>) -> Self {
        self.retention = policy;
        self
    }

    /// How long the catalog keeps its history readable; `None`: for ever.
    pub fn retention(&self) -> Option<&RetentionPolicy> {
        self.retention.as_deref()
    }

    /// The same catalog, its branches protected as `protection` says.
    pub fn with_protection(mut self, protection: Option<Arc<BranchProtection>>) -> Self {
        self.protection = protection;
        self
    }

    /// The same catalog, merging tables changed on both sides as `mode` says unless a merge
    /// says otherwise.
    pub fn with_table_merge(mut self, mode: TableMergeMode) -> Self {
        self.table_merge = mode;
        self
    }

    /// How merges treat a table changed on both sides when they do not say.
    pub fn table_merge_mode(&self) -> TableMergeMode {
        self.table_merge
    }

    /// Which branches change only through merge requests; `None`: none.
    pub fn protection(&self) -> Option<&BranchProtection> {
        self.protection.as_deref()
    }

    /// `Err` when `reference` is a protected branch, which changes only through merge
    /// requests.
    pub fn check_unprotected(&self, reference: &Reference) -> Result<(), Protected> {
        self.protection
            .as_ref()
            .map_or(Ok(()), |p| p.check(reference))
    }

    /// The same catalog, grouping its commits with those of every catalog sharing `queues`.
    pub fn with_commit_queues(mut self, queues: Arc<CommitQueues>) -> Self {
        self.commits = queues;
        self
    }

    /// The same catalog, keeping the events it derives in `cache` (shared by a server's readers).
    pub fn with_event_cache(mut self, cache: Arc<EventCache>) -> Self {
        self.events = Some(cache);
        self
    }

    pub(crate) fn event_cache(&self) -> Option<&EventCache> {
        self.events.as_deref()
    }

    pub(crate) fn commit_queues(&self) -> &CommitQueues {
        &self.commits
    }

    pub(crate) fn warehouse_ref(&self) -> Option<&Warehouse> {
        self.warehouse.as_ref()
    }

    /// Where the catalog keeps its files, when it has a warehouse.
    pub fn warehouse_root(&self) -> Option<&str> {
        self.warehouse.as_ref().map(|w| w.root())
    }

    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn odb(&self) -> &Odb {
        &self.odb
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub(crate) fn cache(&self) -> Arc<ObjectCache> {
        self.cache.clone()
    }

    /// Whether the catalog was created (its default branch exists).
    pub async fn exists(&self) -> Result<bool, BackendError> {
        Ok(self
            .store
            .get_ref(self.odb.repo(), &self.default_branch())
            .await?
            .is_some())
    }

    pub fn default_branch(&self) -> Reference {
        Reference::branch(RefName::new(DEFAULT_BRANCH).expect("`main` is a valid ref name"))
    }

    /// The commit a reference expression names, and the branch a write may go to (only for a
    /// plain branch name: hashes, times, ancestors and tags are read-only).
    #[tracing::instrument(level = "debug", skip(self), fields(tenant = %self.tenant, catalog = %self.name))]
    pub async fn resolve(&self, spec: &RefSpec) -> Result<Resolved, ResolveError> {
        let name = spec.ref_name();
        let (reference, head) = match self.lookup(name).await? {
            Some(found) => found,
            None => {
                // A bare name with no ref of that name may be a hash.
                if let (RefSpec::Named(_), Ok(prefix)) = (spec, HashPrefix::parse(name.as_str())) {
                    let commit = self.odb.resolve_prefix(&prefix).await?;
                    self.ensure_commit(commit).await?;
                    self.check_retained_hash(commit).await?;
                    return Ok(Resolved {
                        commit,
                        writable_branch: None,
                    });
                }
                return Err(ResolveError::UnknownRef(name.clone()));
            }
        };
        let repo = self.odb.repo();
        Ok(match spec {
            RefSpec::Named(_) => Resolved {
                commit: head,
                writable_branch: (reference.kind == RefKind::Branch).then(|| reference.clone()),
            },
            RefSpec::AtHash(_, prefix) => {
                let commit = self.odb.resolve_prefix(prefix).await?;
                self.ensure_commit(commit).await?;
                // A hash read through a ref must be in that ref's history, so knowing a hash
                // of another branch reveals nothing through this one.
                if !history::is_ancestor(&self.odb, commit, head).await? {
                    return Err(ResolveError::NotReachable {
                        commit,
                        reference: spec.to_string(),
                    });
                }
                self.check_retained(spec, &reference, head, commit).await?;
                Resolved {
                    commit,
                    writable_branch: None,
                }
            }
            RefSpec::AtTime(_, time) => {
                if let Some(policy) = &self.retention {
                    let since = policy.cutoff(&reference, Timestamp::now());
                    if *time < since {
                        return Err(ResolveError::BeyondRetention {
                            what: spec.to_string(),
                            reference: reference.to_string(),
                            since,
                        });
                    }
                }
                // Every move of a ref is in its log from its creation on, so no entry at or
                // before the time means the ref did not exist then.
                let entry = self.store.ref_log_at(repo, &reference, *time).await?;
                let commit =
                    entry
                        .and_then(|e| e.new)
                        .ok_or_else(|| ResolveError::NotYetThere {
                            reference: name.to_string(),
                            time: *time,
                        })?;
                Resolved {
                    commit,
                    writable_branch: None,
                }
            }
            RefSpec::Back(_, n) => {
                let commit = history::nth_ancestor(&self.odb, head, *n).await?;
                self.check_retained(spec, &reference, head, commit).await?;
                Resolved {
                    commit,
                    writable_branch: None,
                }
            }
        })
    }

    /// Fails when `commit`, read through `reference` (at `head`), is older than the
    /// reference's retention window. Heads are always retained.
    async fn check_retained(
        &self,
        spec: &RefSpec,
        reference: &Reference,
        head: ObjectId,
        commit: ObjectId,
    ) -> Result<(), ResolveError> {
        let Some(policy) = &self.retention else {
            return Ok(());
        };
        if commit == head {
            return Ok(());
        }
        let since = policy.cutoff(reference, Timestamp::now());
        if self.odb.commit(&commit).await?.time < since {
            return Err(ResolveError::BeyondRetention {
                what: spec.to_string(),
                reference: reference.to_string(),
                since,
            });
        }
        Ok(())
    }

    /// As [`check_retained`](Self::check_retained) for a bare hash: the catalog's own window,
    /// unless some branch or tag points at the commit.
    async fn check_retained_hash(&self, commit: ObjectId) -> Result<(), ResolveError> {
        let Some(policy) = &self.retention else {
            return Ok(());
        };
        let since = policy.catalog_cutoff(Timestamp::now());
        if self.odb.commit(&commit).await?.time >= since {
            return Ok(());
        }
        // Rare: only reads of old commits get here.
        let heads = crate::reach::all_refs(self.store.as_ref(), self.odb.repo()).await?;
        if heads.iter().any(|(_, head)| *head == commit) {
            return Ok(());
        }
        Err(ResolveError::BeyondRetention {
            what: commit.to_hex(),
            reference: "the catalog".to_owned(),
            since,
        })
    }

    /// Fails unless `id` names a commit here (a prefix may name a tree, or nothing at all).
    async fn ensure_commit(&self, id: ObjectId) -> Result<(), ResolveError> {
        match self.odb.commit(&id).await {
            Ok(_) => Ok(()),
            Err(ReadError::Missing { .. } | ReadError::WrongKind { .. }) => {
                Err(ResolveError::NotACommit(id))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The branch named `name`, else the tag, with its head.
    async fn lookup(&self, name: &RefName) -> Result<Option<(Reference, ObjectId)>, BackendError> {
        for kind in [RefKind::Branch, RefKind::Tag] {
            let reference = Reference {
                kind,
                name: name.clone(),
            };
            if let Some(head) = self.store.get_ref(self.odb.repo(), &reference).await? {
                return Ok(Some((reference, head)));
            }
        }
        Ok(None)
    }
}
