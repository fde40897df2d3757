//! Encryption of stored secrets under the server key.
//!
//! ChaCha20-Poly1305 with a random 96-bit nonce for every encryption and the record key as
//! associated data: a ciphertext decrypts only under the key it was made with and only in the
//! record it was written to, and any change to it is detected rather than decrypted to garbage.

use std::fmt;
use std::str::FromStr;

use chacha20poly1305::aead::{Aead, Generate, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use zeroize::{Zeroize, Zeroizing};

/// Length of a [`SecretKey`] in bytes.
pub const SECRET_KEY_BYTES: usize = 32;

/// Length of a nonce in bytes (96 bits).
const NONCE_BYTES: usize = 12;

/// The name of the one algorithm sealed values use, stored with them so a later change of
/// algorithm can tell old values apart.
const ALGORITHM: &str = "chacha20poly1305";

/// The server key that encrypts stored secrets: 32 random bytes, written as 64 hex characters
/// in configuration. `Debug` never shows it; the bytes are wiped when it is dropped.
#[derive(Clone)]
pub struct SecretKey([u8; SECRET_KEY_BYTES]);

/// Why a string is not a server key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretKeyError {
    /// The length is wrong; the text itself is never repeated, as it may be a real key.
    #[error("a server key is 64 hex characters ({SECRET_KEY_BYTES} bytes); got {0} characters")]
    Length(usize),
    #[error("a server key is 64 hex characters; found a character that is not a hex digit")]
    NotHex,
}

impl SecretKey {
    /// A new random key from the operating system's generator.
    pub fn generate() -> Self {
        let key = Key::generate();
        let mut bytes = [0u8; SECRET_KEY_BYTES];
        bytes.copy_from_slice(&key);
        Self(bytes)
    }

    /// The key from its 64 hex characters.
    pub fn from_hex(text: &str) -> Result<Self, SecretKeyError> {
        let text = text.trim();
        if text.len() != 2 * SECRET_KEY_BYTES {
            return Err(SecretKeyError::Length(text.len()));
        }
        let mut bytes = [0u8; SECRET_KEY_BYTES];
        hex::decode_to_slice(text, &mut bytes).map_err(|_| SecretKeyError::NotHex)?;
        Ok(Self(bytes))
    }

    /// The key as 64 hex characters, for an operator to store in the server's configuration.
    /// Never log it.
    pub fn reveal_hex(&self) -> Zeroizing<String> {
        Zeroizing::new(hex::encode(self.0))
    }

    fn cipher(&self) -> ChaCha20Poly1305 {
        ChaCha20Poly1305::new(&Key::from(self.0))
    }
}

impl FromStr for SecretKey {
    type Err = SecretKeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_hex(s)
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(<redacted>)")
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

/// An encrypted value as stored: the algorithm, the nonce and the ciphertext with its tag.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sealed {
    algorithm: String,
    /// Hex.
    nonce: String,
    /// Hex; the ciphertext followed by the 16-byte tag.
    ciphertext: String,
}

/// Only the sizes: a ciphertext reveals nothing, but there is no reason to print it either.
impl fmt::Debug for Sealed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealed")
            .field("algorithm", &self.algorithm)
            .field("ciphertext_hex_len", &self.ciphertext.len())
            .finish_non_exhaustive()
    }
}

impl Sealed {
    /// The nonce followed by the ciphertext, for places with little room (a browser cookie
    /// holds about 4 KB; hex would double the size). The algorithm is the current one.
    pub fn to_bytes(&self) -> Result<Vec<u8>, OpenError> {
        let mut bytes =
            hex::decode(&self.nonce).map_err(|_| OpenError::Malformed("the nonce is not hex"))?;
        bytes.extend(
            hex::decode(&self.ciphertext)
                .map_err(|_| OpenError::Malformed("the ciphertext is not hex"))?,
        );
        Ok(bytes)
    }

    /// A value from [`Sealed::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, OpenError> {
        // A nonce and at least the 16-byte tag.
        if bytes.len() < NONCE_BYTES + 16 {
            return Err(OpenError::Malformed("too short to be a sealed value"));
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        Ok(Self {
            algorithm: ALGORITHM.to_owned(),
            nonce: hex::encode(nonce),
            ciphertext: hex::encode(ciphertext),
        })
    }
}

/// Encryption failed (the cipher refused the input; in practice only for inputs past its size
/// limit).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("encrypting a secret failed")]
pub struct SealError;

/// Why a sealed value did not decrypt. Never carries any part of the plaintext.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("the stored secret uses `{0}`, which this server does not know")]
    UnknownAlgorithm(String),
    #[error("the stored secret is malformed: {0}")]
    Malformed(&'static str),
    #[error(
        "the stored secret does not decrypt: the server key is not the one it was encrypted \
         with, or the record was altered or the secret was copied from another record"
    )]
    WrongKeyOrTampered,
}

/// Encrypts `plaintext` under `key`, bound to `associated` (the record key).
pub fn seal(key: &SecretKey, associated: &[u8], plaintext: &[u8]) -> Result<Sealed, SealError> {
    let nonce = Nonce::generate();
    let ciphertext = key
        .cipher()
        .encrypt(
            &nonce,
            Payload {
                msg: plaintext,
                aad: associated,
            },
        )
        .map_err(|_| SealError)?;
    Ok(Sealed {
        algorithm: ALGORITHM.to_owned(),
        nonce: hex::encode(nonce),
        ciphertext: hex::encode(ciphertext),
    })
}

/// Decrypts a value sealed by [`seal`] with the same key and associated data.
pub fn open(
    key: &SecretKey,
    associated: &[u8],
    sealed: &Sealed,
) -> Result<Zeroizing<Vec<u8>>, OpenError> {
    if sealed.algorithm != ALGORITHM {
        return Err(OpenError::UnknownAlgorithm(sealed.algorithm.clone()));
    }
    let mut nonce = [0u8; NONCE_BYTES];
    hex::decode_to_slice(&sealed.nonce, &mut nonce)
        .map_err(|_| OpenError::Malformed("the nonce is not 12 hex-encoded bytes"))?;
    let ciphertext = hex::decode(&sealed.ciphertext)
        .map_err(|_| OpenError::Malformed("the ciphertext is not hex"))?;
    key.cipher()
        .decrypt(
            &Nonce::from(nonce),
            Payload {
                msg: &ciphertext,
                aad: associated,
            },
        )
        .map(Zeroizing::new)
        .map_err(|_| OpenError::WrongKeyOrTampered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_associated_data() {
        let key = SecretKey::generate();
        let sealed = seal(&key, b"tenancy/a", b"hidden").unwrap();
        assert_eq!(&open(&key, b"tenancy/a", &sealed).unwrap()[..], b"hidden");
        assert_eq!(
            open(&key, b"tenancy/b", &sealed).unwrap_err(),
            OpenError::WrongKeyOrTampered
        );
        assert_eq!(
            open(&SecretKey::generate(), b"tenancy/a", &sealed).unwrap_err(),
            OpenError::WrongKeyOrTampered
        );
    }

    #[test]
    fn the_byte_form_opens_as_the_value_did_and_refuses_what_is_too_short() {
        let key = SecretKey::generate();
        let sealed = seal(&key, b"k", b"refresh").unwrap();
        let bytes = sealed.to_bytes().unwrap();
        assert_eq!(bytes.len(), NONCE_BYTES + b"refresh".len() + 16);
        let back = Sealed::from_bytes(&bytes).unwrap();
        assert_eq!(back, sealed);
        assert_eq!(&open(&key, b"k", &back).unwrap()[..], b"refresh");
        let mut flipped = bytes.clone();
        flipped[NONCE_BYTES] ^= 1;
        assert_eq!(
            open(&key, b"k", &Sealed::from_bytes(&flipped).unwrap()).unwrap_err(),
            OpenError::WrongKeyOrTampered
        );
        assert!(matches!(
            Sealed::from_bytes(&bytes[..NONCE_BYTES + 15]),
            Err(OpenError::Malformed(_))
        ));
    }

    #[test]
    fn every_encryption_uses_a_new_nonce() {
        let key = SecretKey::generate();
        let a = seal(&key, b"k", b"same").unwrap();
        let b = seal(&key, b"k", b"same").unwrap();
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
    }

    #[test]
    fn keys_parse_from_hex_and_never_show() {
        let key = SecretKey::generate();
        let hex = key.reveal_hex();
        let parsed: SecretKey = hex.parse().unwrap();
        assert_eq!(parsed.0, key.0);
        assert_eq!(format!("{parsed:?}"), "SecretKey(<redacted>)");
        assert_eq!(
            SecretKey::from_hex("abc").unwrap_err(),
            SecretKeyError::Length(3)
        );
        assert_eq!(
            SecretKey::from_hex(&"zz".repeat(32)).unwrap_err(),
            SecretKeyError::NotHex
        );
    }
}
