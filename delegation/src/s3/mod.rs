//! S3: prefixes, session policies, STS vending and remote signing.

mod location;
mod policy;
pub mod sign;
mod sts;

pub use location::{LocationError, S3Prefix};
pub use policy::session_policy;
pub use sts::{StsConfig, StsVendor, VendError, Vended};
