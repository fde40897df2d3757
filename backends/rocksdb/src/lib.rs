//! The RocksDB backend, behind the cargo feature `rocksdb`: the fastest single-node store.
//!
//! One database directory with a column family per kind of data. Every multi-key change is
//! one `WriteBatch` written with `sync = true` (fsync of the write-ahead log before the call
//! returns), so an acknowledged write survives a crash of the process or the machine. Ref
//! transactions read and check the refs and write the batch under a lock per repository;
//! records and audit appends under a lock of their own. Without the feature this crate is
//! empty.

#[cfg(feature = "rocksdb")]
mod backend;

#[cfg(feature = "rocksdb")]
pub use backend::RocksBackend;
