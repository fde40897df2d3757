//! Branches and tags: validated names, compare-and-swap transactions over several refs at
//! once, and a ref log recording every move.

pub mod name;
pub mod prune;
pub mod store;
pub mod transaction;

pub use name::{RefKind, RefName, RefNameError, Reference};
pub use prune::{ObjectQuery, Prune, RefMoves};
pub use store::{LogQuery, Publish, RefPage, RefQuery, RefStore, RepoLogQuery};
pub use transaction::{
    Expected, InvalidTransaction, RefLogEntry, RefUpdate, Target, TransactError, Transaction,
};
