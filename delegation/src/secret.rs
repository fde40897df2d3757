//! A secret string that never shows itself by accident.

use zeroize::Zeroizing;

/// A secret value (a secret access key, a session token): `Debug` prints `***`, and the
/// memory is wiped when dropped. Read it with [`expose`](Self::expose) where it must leave.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(Zeroizing::new(value.into()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}
