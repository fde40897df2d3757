//! An in-memory backend: objects and refs in maps behind locks. For tests and ephemeral servers;
//! everything is lost when the process ends.

mod objects;
mod refs;

use std::collections::HashMap;
use std::fmt;

use pangolin_store::RepoId;
use parking_lot::{Mutex, RwLock};

pub use objects::ObjectMap;
pub use refs::RepoRefs;

/// Objects and refs of every repository, in memory.
#[derive(Default)]
pub struct MemoryBackend {
    objects: RwLock<HashMap<RepoId, ObjectMap>>,
    /// One lock per repository's refs: transactions on different repositories never wait for
    /// each other.
    refs: RwLock<HashMap<RepoId, std::sync::Arc<Mutex<RepoRefs>>>>,
}

impl MemoryBackend {
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBackend")
            .field("repositories", &self.objects.read().len())
            .finish_non_exhaustive()
    }
}
