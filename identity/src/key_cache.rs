//! Recently verified API keys, so a busy client costs one bcrypt verification per key per
//! TTL instead of one per request.
//!
//! An entry holds the blake3 digest of the secret that verified (never the secret), when it
//! was checked, and what the key's record said when it was last read. Revoking or rotating a
//! key in this process drops its entry at once; another server reads the record again once
//! its copy is older than the record TTL (`IdentityConfig::api_key_record_ttl`), without
//! verifying the secret again, and refuses the key from then on.

use std::collections::HashMap;
use std::time::Duration;

use pangolin_store::Timestamp;
use parking_lot::Mutex;

use crate::api_key::KeyId;
use crate::clock::plus;
use crate::names::{PrincipalName, TenantName};

/// What a successful verification established.
#[derive(Clone)]
pub(crate) struct CachedKey {
    pub(crate) digest: blake3::Hash,
    pub(crate) checked_at: Timestamp,
    /// When the key's record (and its owner's) was last read.
    pub(crate) read_at: Timestamp,
    pub(crate) tenant: TenantName,
    pub(crate) service: PrincipalName,
    pub(crate) expires: Option<Timestamp>,
    pub(crate) revoked_at: Option<Timestamp>,
    pub(crate) last_used: Option<Timestamp>,
}

pub(crate) struct KeyCache {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<KeyId, CachedKey>>,
}

pub(crate) fn digest(secret: &str) -> blake3::Hash {
    blake3::hash(secret.as_bytes())
}

impl KeyCache {
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The entry for `id` if `secret` is the one that verified and the check is recent.
    pub(crate) fn lookup(&self, id: &KeyId, secret: &str, now: Timestamp) -> Option<CachedKey> {
        let entries = self.entries.lock();
        let entry = entries.get(id)?;
        // blake3's `Hash` compares in constant time.
        let fresh = plus(entry.checked_at, self.ttl) > now;
        (fresh && entry.digest == digest(secret)).then(|| entry.clone())
    }

    pub(crate) fn insert(&self, id: KeyId, entry: CachedKey, now: Timestamp) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.entries.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&id) {
            let ttl = self.ttl;
            entries.retain(|_, e| plus(e.checked_at, ttl) > now);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(id, entry);
    }

    /// Replaces what the entry of `id` says of its record, keeping the verification.
    pub(crate) fn refresh(
        &self,
        id: &KeyId,
        expires: Option<Timestamp>,
        revoked_at: Option<Timestamp>,
        now: Timestamp,
    ) {
        if let Some(entry) = self.entries.lock().get_mut(id) {
            entry.expires = expires;
            entry.revoked_at = revoked_at;
            entry.read_at = now;
        }
    }

    pub(crate) fn note_used(&self, id: &KeyId, at: Timestamp) {
        if let Some(entry) = self.entries.lock().get_mut(id) {
            entry.last_used = Some(at);
        }
    }

    pub(crate) fn forget(&self, id: &KeyId) {
        self.entries.lock().remove(id);
    }

    pub(crate) fn forget_owner(&self, tenant: &TenantName, service: &PrincipalName) {
        self.entries
            .lock()
            .retain(|_, e| !(&e.tenant == tenant && &e.service == service));
    }
}
