//! What the catalog needs from a backend.

use pangolin_records::RecordStore;
use pangolin_refs::{Prune, Publish, RefStore};
use pangolin_store::ObjectStore;

/// Objects, refs, publishing both together, and versioned records (idempotency keys now;
/// tenants, users and grants later).
pub trait Store: ObjectStore + RefStore + Publish + Prune + RecordStore {}

impl<T: ObjectStore + RefStore + Publish + Prune + RecordStore> Store for T {}
