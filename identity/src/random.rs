//! Random bytes from the operating system, as lowercase hex.

use std::fmt::Write;

/// The operating system's random source failed.
#[derive(Debug, thiserror::Error)]
#[error("the operating system's random source failed: {0}")]
pub struct RandomError(getrandom::Error);

/// `N` random bytes.
pub(crate) fn bytes<const N: usize>() -> Result<[u8; N], RandomError> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(RandomError)?;
    Ok(buf)
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// `N` random bytes as `2 * N` lowercase hex characters.
pub(crate) fn hex_string<const N: usize>() -> Result<String, RandomError> {
    Ok(hex(&bytes::<N>()?))
}
