//! The password policy and bcrypt hashing, without a store.
#![allow(clippy::unwrap_used)]

use pangolin_identity::{Hasher, MAX_PASSWORD_BYTES, Password, PasswordPolicyError};

#[test]
fn passwords_shorter_than_twelve_characters_are_refused() {
    let err = Password::new("short-pass1").check_policy().unwrap_err();
    assert_eq!(err, PasswordPolicyError::TooShort { chars: 11 });
    Password::new("long-enough1").check_policy().unwrap();
}

#[test]
fn length_counts_characters_not_bytes_for_the_minimum() {
    // Eleven two-byte characters: 22 bytes but only 11 characters.
    let err = Password::new("é".repeat(11)).check_policy().unwrap_err();
    assert_eq!(err, PasswordPolicyError::TooShort { chars: 11 });
}

#[test]
fn passwords_longer_than_bcrypt_reads_are_refused_not_truncated() {
    Password::new("a".repeat(MAX_PASSWORD_BYTES))
        .check_policy()
        .unwrap();
    let err = Password::new("a".repeat(MAX_PASSWORD_BYTES + 1))
        .check_policy()
        .unwrap_err();
    assert_eq!(err, PasswordPolicyError::TooLong { bytes: 73 });
}

#[tokio::test]
async fn hashes_verify_the_right_password_only() {
    let hasher = Hasher::new(4);
    let hash = hasher.hash("correct horse battery").await.unwrap();
    assert!(hasher.verify("correct horse battery", &hash).await.unwrap());
    assert!(!hasher.verify("correct horse batterY", &hash).await.unwrap());
}

#[tokio::test]
async fn a_password_sharing_the_first_72_bytes_does_not_match() {
    let hasher = Hasher::new(4);
    let base = "b".repeat(MAX_PASSWORD_BYTES);
    let hash = hasher.hash(&base).await.unwrap();
    assert!(hasher.verify(&base, &hash).await.unwrap());
    assert!(!hasher.verify(&format!("{base}x"), &hash).await.unwrap());
    assert!(hasher.hash(&format!("{base}x")).await.is_err());
}

#[tokio::test]
async fn debug_output_of_passwords_and_hashes_shows_no_secret() {
    let hasher = Hasher::new(4);
    let password = Password::new("super-secret-password");
    let hash = hasher.hash(password.expose()).await.unwrap();
    let debug = format!("{password:?} {hash:?}");
    assert!(!debug.contains("super-secret-password"), "{debug}");
    assert!(!debug.contains("$2"), "no bcrypt hash in {debug}");
}
