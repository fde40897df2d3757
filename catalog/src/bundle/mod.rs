//! Export and import of a whole catalog as a bundle: its branches and tags and every commit
//! and tree node they reach, content-addressed and verifiable (see [`format`]), to back a
//! catalog up, move it to another server or backend, or restore it. Table files are not in a
//! bundle: metadata locations stay as they were, valid wherever the warehouse is the same.

pub mod export;
pub mod format;
pub mod hold;
pub mod import;
pub mod intake;
pub mod verify;

pub use export::{Export, ExportError, Exported};
pub use format::{
    Base, BundleError, BundleId, BundleReader, BundleRef, BundleWriter, Header, Item,
};
pub use hold::Hold;
pub use import::{ImportError, Imported, Importer};
pub use intake::{Intake, IntakeError, Receiving, Taken};
pub use verify::{Verified, VerifyError, verify};
