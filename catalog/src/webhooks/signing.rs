//! Signing deliveries as the Standard Webhooks specification does, so receivers can verify
//! them with its libraries: `webhook-signature: v1,<base64 HMAC-SHA256>` over
//! `<webhook-id>.<webhook-timestamp>.<body>`, under a secret written `whsec_<base64>`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

/// The prefix of a secret's text.
const PREFIX: &str = "whsec_";

/// Random bytes in a generated secret.
const GENERATED_BYTES: usize = 32;

/// The shortest and longest secret accepted, in bytes: short keys make the signature weak, and
/// HMAC-SHA256 hashes keys longer than its block anyway.
const MIN_BYTES: usize = 24;
const MAX_BYTES: usize = 64;

/// A subscription's signing secret. `Debug` never shows it; the bytes are wiped on drop.
#[derive(Clone)]
pub struct SigningSecret(Zeroizing<Vec<u8>>);

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(<redacted>)")
    }
}

/// Why a text is not a signing secret. Never repeats the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("a webhook secret starts with `{PREFIX}`")]
    Prefix,
    #[error("a webhook secret is `{PREFIX}` followed by standard base64")]
    NotBase64,
    #[error("a webhook secret holds {MIN_BYTES} to {MAX_BYTES} bytes; this one holds {0}")]
    Length(usize),
}

impl SigningSecret {
    /// A new secret from the operating system's generator.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new(vec![0_u8; GENERATED_BYTES]);
        getrandom::fill(&mut bytes).expect("the operating system's random generator works");
        Self(bytes)
    }

    /// A secret from its text, `whsec_<base64>`.
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        let encoded = text
            .trim()
            .strip_prefix(PREFIX)
            .ok_or(SecretError::Prefix)?;
        let bytes = Zeroizing::new(
            STANDARD
                .decode(encoded)
                .map_err(|_| SecretError::NotBase64)?,
        );
        if !(MIN_BYTES..=MAX_BYTES).contains(&bytes.len()) {
            return Err(SecretError::Length(bytes.len()));
        }
        Ok(Self(bytes))
    }

    /// The secret's raw bytes.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Self(Zeroizing::new(bytes.to_vec()))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text a receiver configures: `whsec_<base64>`. Never log it.
    pub fn reveal(&self) -> Zeroizing<String> {
        Zeroizing::new(format!("{PREFIX}{}", STANDARD.encode(&self.0)))
    }

    fn mac(&self, id: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `webhook-signature` header of a delivery: `v1,<base64>`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = self.mac(id, timestamp, body).finalize().into_bytes();
        format!("v1,{}", STANDARD.encode(tag))
    }

    /// Whether a `webhook-signature` header (signatures separated by spaces, as the header
    /// may carry several while a secret is rotated) holds a valid `v1` signature. Compared
    /// in constant time.
    pub fn verify(&self, id: &str, timestamp: i64, body: &[u8], header: &str) -> bool {
        header.split(' ').any(|signature| {
            let Some(encoded) = signature.strip_prefix("v1,") else {
                return false;
            };
            let Ok(tag) = STANDARD.decode(encoded) else {
                return false;
            };
            self.mac(id, timestamp, body).verify_slice(&tag).is_ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification's reference libraries.
    #[test]
    fn signs_as_the_specification_example() {
        let secret = SigningSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = secret.sign(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn verifies_only_what_it_signed() {
        let secret = SigningSecret::generate();
        let header = secret.sign("1.0", 42, b"{}");
        assert!(secret.verify("1.0", 42, b"{}", &header));
        assert!(secret.verify("1.0", 42, b"{}", &format!("v1,AAAA {header}")));
        assert!(!secret.verify("1.1", 42, b"{}", &header));
        assert!(!secret.verify("1.0", 43, b"{}", &header));
        assert!(!secret.verify("1.0", 42, b"{ }", &header));
        assert!(!SigningSecret::generate().verify("1.0", 42, b"{}", &header));
        assert!(!secret.verify("1.0", 42, b"{}", "v2,abc"));
    }

    #[test]
    fn parses_and_reveals_the_same_text() {
        let secret = SigningSecret::generate();
        let text = secret.reveal();
        assert!(text.starts_with("whsec_"));
        assert_eq!(
            SigningSecret::parse(&text).unwrap().as_bytes(),
            secret.as_bytes()
        );
        assert_eq!(
            SigningSecret::parse("abc").unwrap_err(),
            SecretError::Prefix
        );
        assert_eq!(
            SigningSecret::parse("whsec_not base64").unwrap_err(),
            SecretError::NotBase64
        );
        assert_eq!(
            SigningSecret::parse("whsec_c2hvcnQ=").unwrap_err(),
            SecretError::Length(5)
        );
    }
}
