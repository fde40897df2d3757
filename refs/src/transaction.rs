//! Ref transactions: what callers ask for and what can go wrong.

use std::collections::HashSet;

use pangolin_store::{BackendError, ObjectId, Timestamp};

use crate::name::Reference;

/// What a ref must hold for an update to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// The ref must not exist (creating it).
    Absent,
    /// The ref must point at exactly this commit (compare-and-swap).
    Equals(ObjectId),
    /// Whatever it holds, including nothing.
    Any,
}

impl Expected {
    pub fn matches(&self, actual: Option<ObjectId>) -> bool {
        match self {
            Self::Absent => actual.is_none(),
            Self::Equals(id) => actual == Some(*id),
            Self::Any => true,
        }
    }
}

/// What an update does to its ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Set(ObjectId),
    Delete,
}

impl Target {
    pub fn new_value(&self) -> Option<ObjectId> {
        match self {
            Self::Set(id) => Some(*id),
            Self::Delete => None,
        }
    }
}

/// One ref's change inside a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    pub reference: Reference,
    pub expected: Expected,
    pub target: Target,
}

/// Changes to several refs of one repository, applied all together or not at all, each with a
/// ref-log entry written in the same atomic step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    pub updates: Vec<RefUpdate>,
    /// Who asked for the change; recorded in the ref log.
    pub principal: String,
    /// Why; recorded in the ref log.
    pub message: String,
    /// When; the ref log never goes back in time for one ref, so a store records
    /// `max(time, that ref's previous entry time)`.
    pub time: Timestamp,
}

/// One move of a ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefLogEntry {
    /// Increases with every entry of a repository: the order in which changes happened.
    pub sequence: u64,
    pub reference: Reference,
    /// `None`: the ref was created.
    pub old: Option<ObjectId>,
    /// `None`: the ref was deleted.
    pub new: Option<ObjectId>,
    pub principal: String,
    pub message: String,
    pub time: Timestamp,
}

/// Why a transaction was not applied. Nothing of it was applied in any case.
#[derive(Debug, thiserror::Error)]
pub enum TransactError {
    #[error(
        "{reference} is out of date: expected {expected:?}, found {}",
        show(actual)
    )]
    OutOfDate {
        reference: Reference,
        expected: Expected,
        actual: Option<ObjectId>,
    },
    #[error("{reference} does not exist, so it cannot be deleted")]
    DeleteMissing { reference: Reference },
    #[error(transparent)]
    Invalid(#[from] InvalidTransaction),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

fn show(id: &Option<ObjectId>) -> String {
    id.map_or_else(|| "no ref".to_owned(), |id| id.to_hex())
}

/// A transaction that no store would apply, whatever the refs hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTransaction {
    #[error("a transaction needs at least one update")]
    Empty,
    #[error("{0} appears twice in one transaction")]
    DuplicateRef(Reference),
}

impl Transaction {
    /// Checks what does not depend on the stored refs. Stores call this first.
    pub fn validate(&self) -> Result<(), InvalidTransaction> {
        if self.updates.is_empty() {
            return Err(InvalidTransaction::Empty);
        }
        let mut seen = HashSet::new();
        for update in &self.updates {
            if !seen.insert(&update.reference) {
                return Err(InvalidTransaction::DuplicateRef(update.reference.clone()));
            }
        }
        Ok(())
    }

    /// Checks one update against the value its ref holds now; stores call this for every
    /// update, under their lock or in their database transaction, before changing anything.
    pub fn check(update: &RefUpdate, actual: Option<ObjectId>) -> Result<(), TransactError> {
        if !update.expected.matches(actual) {
            return Err(TransactError::OutOfDate {
                reference: update.reference.clone(),
                expected: update.expected,
                actual,
            });
        }
        if update.target == Target::Delete && actual.is_none() {
            return Err(TransactError::DeleteMissing {
                reference: update.reference.clone(),
            });
        }
        Ok(())
    }
}
