//! Pangolin's content-addressed store.
//!
//! Everything a catalog ever was is kept as immutable objects named by their blake3 hash:
//! commits, and the nodes of a Merkle tree mapping [`ContentKey`]s to [`Entry`]s. Objects live in
//! a backend behind the [`ObjectStore`] trait, scoped per repository, and are read through a
//! shared cache of decoded objects ([`Odb`]).

pub mod backend;
pub mod cache;
pub mod codec;
pub mod commit;
pub mod entry;
pub mod history;
pub mod id;
pub mod key;
pub mod object;
pub mod odb;
pub mod staging;
pub mod time;
pub mod tree;

pub use backend::{BackendError, BackendErrorKind, ObjectStore, RepoId};
pub use cache::ObjectCache;
pub use commit::{Commit, CommitDraft};
pub use entry::{Content, ContentId, ContentKind, Entry};
pub use id::{HashPrefix, ObjectId, ObjectKind};
pub use key::{ContentKey, KeyError};
pub use object::{Object, RawObject};
pub use odb::{Odb, ReadError};
pub use staging::Staging;
pub use time::Timestamp;
