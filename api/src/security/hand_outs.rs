//! Which principal has already been given which delegated credential. A cached credential is
//! handed out again on every load of a busy table; the audit log records each credential once
//! per principal (before the answer that first carries it), not once per load, which would
//! put a durable write on the hot path of every engine's load for nothing an auditor needs.

use std::collections::HashMap;
use std::time::SystemTime;

use parking_lot::Mutex;

/// Entries kept at most; beyond it the expired ones go, then everything if need be.
const CAPACITY: usize = 100_000;

/// Credentials recorded per principal, until they expire. Keys are hashes: no credential is
/// kept here in the clear.
#[derive(Debug, Default)]
pub struct HandOuts {
    recorded: Mutex<HashMap<[u8; 32], SystemTime>>,
}

fn key(principal: &str, credential: &str) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(principal.as_bytes());
    hasher.update(&[0]);
    hasher.update(credential.as_bytes());
    *hasher.finalize().as_bytes()
}

impl HandOuts {
    /// Whether giving `credential` to `principal` was recorded and it has not expired.
    pub fn recorded(&self, principal: &str, credential: &str) -> bool {
        self.recorded
            .lock()
            .get(&key(principal, credential))
            .is_some_and(|expires| *expires > SystemTime::now())
    }

    /// Notes that giving `credential` to `principal` is in the audit log.
    pub fn record(&self, principal: &str, credential: &str, expires_at: SystemTime) {
        let mut recorded = self.recorded.lock();
        if recorded.len() >= CAPACITY {
            let now = SystemTime::now();
            recorded.retain(|_, expires| *expires > now);
            if recorded.len() >= CAPACITY {
                recorded.clear();
            }
        }
        recorded.insert(key(principal, credential), expires_at);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_credential_is_recorded_per_principal_until_it_expires() {
        let hand_outs = HandOuts::default();
        let later = SystemTime::now() + Duration::from_secs(60);
        assert!(!hand_outs.recorded("user:a/ana", "ASIA1"));
        hand_outs.record("user:a/ana", "ASIA1", later);
        assert!(hand_outs.recorded("user:a/ana", "ASIA1"));
        assert!(!hand_outs.recorded("user:a/bob", "ASIA1"));
        assert!(!hand_outs.recorded("user:a/ana", "ASIA2"));
        hand_outs.record(
            "user:a/bob",
            "ASIA1",
            SystemTime::now() - Duration::from_secs(1),
        );
        assert!(!hand_outs.recorded("user:a/bob", "ASIA1"));
    }
}
