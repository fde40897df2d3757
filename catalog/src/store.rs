//! What the catalog needs from a backend.

use pangolin_refs::{Publish, RefStore};
use pangolin_store::ObjectStore;

/// Objects, refs, and publishing both together.
pub trait Store: ObjectStore + RefStore + Publish {}

impl<T: ObjectStore + RefStore + Publish> Store for T {}
