//! Fixtures the catalog's integration tests share; each test file uses the parts it needs.
#![allow(
    dead_code,
    unreachable_pub,
    unused_imports,
    unused_macros,
    clippy::unwrap_used
)]

pub mod files;
pub mod gated;
pub mod lake;
pub mod metadata;
pub mod tenancy;
pub mod transfer;
pub mod views;
