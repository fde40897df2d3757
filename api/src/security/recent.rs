//! Answers of the last moments, so the hot path does not repeat record reads on every
//! request: which caller a bearer credential stands for, and which roles a principal has.
//!
//! Entries live for the TTL ([`crate::SHARED_STATE_TTL`] unless configured). Any change this
//! server makes to users, service users, keys, tokens or roles drops them all at once, so here
//! a logout or a revoked grant takes effect on the next request; other replicas see such a
//! change within the TTL.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pangolin_catalog::authz::Role;
use parking_lot::Mutex;

use super::Caller;

/// Entries kept at most (per kind); beyond it everything is dropped and rebuilt on demand.
const CAPACITY: usize = 10_000;

/// Remembered callers and roles.
#[derive(Debug)]
pub struct Recent {
    ttl: Duration,
    /// By blake3 of the credential: the raw token is never kept.
    callers: Mutex<HashMap<[u8; 32], (Instant, Caller)>>,
    roles: Mutex<HashMap<String, (Instant, Vec<Role>)>>,
}

fn fresh<T: Clone>(entry: Option<&(Instant, T)>, ttl: Duration) -> Option<T> {
    entry.and_then(|(at, value)| (at.elapsed() < ttl).then(|| value.clone()))
}

fn remember<K: std::hash::Hash + Eq, T>(map: &mut HashMap<K, (Instant, T)>, key: K, value: T) {
    if map.len() >= CAPACITY {
        map.clear();
    }
    map.insert(key, (Instant::now(), value));
}

impl Default for Recent {
    fn default() -> Self {
        Self::new(crate::SHARED_STATE_TTL)
    }
}

impl Recent {
    /// Answers trusted for `ttl` (zero: nothing is remembered).
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            callers: Mutex::default(),
            roles: Mutex::default(),
        }
    }

    pub fn caller(&self, credential: &str) -> Option<Caller> {
        fresh(
            self.callers
                .lock()
                .get(blake3::hash(credential.as_bytes()).as_bytes()),
            self.ttl,
        )
    }

    pub fn remember_caller(&self, credential: &str, caller: Caller) {
        let key = *blake3::hash(credential.as_bytes()).as_bytes();
        remember(&mut self.callers.lock(), key, caller);
    }

    pub fn roles(&self, principal: &str) -> Option<Vec<Role>> {
        fresh(self.roles.lock().get(principal), self.ttl)
    }

    pub fn remember_roles(&self, principal: &str, roles: Vec<Role>) {
        remember(&mut self.roles.lock(), principal.to_owned(), roles);
    }

    /// Forgets everything: after a change to who may sign in or what they may do.
    pub fn forget(&self) {
        self.callers.lock().clear();
        self.roles.lock().clear();
    }

    /// Whether an audited action changes who may sign in or what they may do.
    pub fn invalidated_by(action: &str) -> bool {
        [
            "auth.logout",
            "ui.logout",
            "ui.user-",
            "ui.service-user-",
            "ui.key-",
            "ui.role-",
            "user.",
            "external-principal.",
            "service-user.",
            "api-key.",
            "role.",
            "token.",
            "tenant.",
        ]
        .iter()
        .any(|prefix| action.starts_with(prefix) || action == *prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_to_people_keys_tokens_and_roles_drop_everything() {
        for action in [
            "auth.logout",
            "ui.logout",
            "user.reset-password",
            "api-key.revoke",
            "role.bind",
            "token.revoke",
            "tenant.delete",
        ] {
            assert!(Recent::invalidated_by(action), "{action}");
        }
        for action in [
            "table.commit",
            "namespace.create",
            "auth.login",
            "branch.merge",
        ] {
            assert!(!Recent::invalidated_by(action), "{action}");
        }
    }

    #[test]
    fn credentials_are_remembered_by_hash_and_forgotten_together() {
        let recent = Recent::default();
        let caller = Caller::anonymous("default");
        recent.remember_caller("secret-token", caller);
        recent.remember_roles("user:acme/ana", Vec::new());
        assert!(recent.caller("secret-token").is_some());
        assert!(recent.caller("other-token").is_none());
        assert!(!format!("{recent:?}").contains("secret-token"));
        recent.forget();
        assert!(recent.caller("secret-token").is_none());
        assert!(recent.roles("user:acme/ana").is_none());
    }
}
