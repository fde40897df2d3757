//! The memory backend passes the shared conformance suite.

use pangolin_backend_memory::MemoryBackend;

pangolin_testkit::conformance_tests!(MemoryBackend::new());
