//! The one canonical encoding of objects.
//!
//! bincode 2 with a fixed configuration over types whose serialization is deterministic
//! (ordered maps, no floats). Golden vectors in the tests pin the bytes: a change that alters
//! them is a format-version change, never an accident.

use bincode::config::{Configuration, Limit, LittleEndian, Varint};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Largest object body the decoder accepts; guards allocations against corrupt length prefixes.
pub const MAX_OBJECT_BYTES: usize = 64 << 20;

type Config = Configuration<LittleEndian, Varint, Limit<MAX_OBJECT_BYTES>>;

const fn config() -> Config {
    bincode::config::standard()
        .with_little_endian()
        .with_variable_int_encoding()
        .with_limit::<MAX_OBJECT_BYTES>()
}

/// Why stored bytes could not be read back as an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("malformed object body: {0}")]
    Malformed(String),
    #[error("{trailing} unexpected bytes after the object body")]
    TrailingBytes { trailing: usize },
}

/// The canonical bytes of `value`. Also used for hashing audit events.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Tree nodes are a few KiB: start there rather than growing from nothing.
    let mut out = Vec::with_capacity(4096);
    bincode::serde::encode_into_std_write(value, &mut out, config())
        .expect("object types hold only sized sequences, ordered maps and integers");
    out
}

/// Reads canonical bytes back; refuses trailing bytes.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (value, read) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    if read != bytes.len() {
        return Err(DecodeError::TrailingBytes {
            trailing: bytes.len() - read,
        });
    }
    Ok(value)
}
