//! Sign-in rate limiting: after too many failed sign-ins from one client address or for one
//! account within a window, further attempts are refused with 429 and `Retry-After` until the
//! window has passed, so passwords and API keys cannot be guessed at speed.
//!
//! Counts live in this server's memory: several replicas each allow the limit (acceptable
//! for slowing guessing; a shared limit would cost a database write per attempt).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Failures allowed per account within the window.
pub const ACCOUNT_FAILURES: u32 = 5;
/// Failures allowed per client address within the window (one address may serve many users).
pub const ADDRESS_FAILURES: u32 = 20;
/// How long failures count.
pub const WINDOW: Duration = Duration::from_secs(300);
/// Keys tracked at most; the oldest windows are dropped first beyond this.
const MAX_TRACKED: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

/// Failed sign-ins per account and per client address.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    windows: Mutex<HashMap<String, Window>>,
}

/// A refused attempt: how long until the caller may try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    pub retry_after: Duration,
}

impl LoginLimiter {
    /// Refuses an attempt for `account` from `address` when either is over its limit.
    pub fn check(&self, account: &str, address: &str) -> Result<(), Limited> {
        self.check_at(account, address, Instant::now())
    }

    /// Counts a failed attempt.
    pub fn failed(&self, account: &str, address: &str) {
        self.failed_at(account, address, Instant::now());
    }

    /// Forgets the account's failures after it signed in.
    pub fn succeeded(&self, account: &str) {
        self.windows.lock().remove(&account_key(account));
    }

    fn check_at(&self, account: &str, address: &str, now: Instant) -> Result<(), Limited> {
        let windows = self.windows.lock();
        let over = |key: String, limit: u32| {
            windows.get(&key).and_then(|w| {
                let elapsed = now.saturating_duration_since(w.started);
                (elapsed < WINDOW && w.failures >= limit).then(|| WINDOW - elapsed)
            })
        };
        let wait = [
            over(account_key(account), ACCOUNT_FAILURES),
            over(address_key(address), ADDRESS_FAILURES),
        ]
        .into_iter()
        .flatten()
        .max();
        match wait {
            Some(retry_after) => Err(Limited { retry_after }),
            None => Ok(()),
        }
    }

    fn failed_at(&self, account: &str, address: &str, now: Instant) {
        let mut windows = self.windows.lock();
        if windows.len() >= MAX_TRACKED {
            windows.retain(|_, w| now.saturating_duration_since(w.started) < WINDOW);
        }
        for key in [account_key(account), address_key(address)] {
            let window = windows.entry(key).or_insert(Window {
                started: now,
                failures: 0,
            });
            if now.saturating_duration_since(window.started) >= WINDOW {
                *window = Window {
                    started: now,
                    failures: 0,
                };
            }
            window.failures += 1;
        }
    }
}

fn account_key(account: &str) -> String {
    format!("account:{account}")
}

fn address_key(address: &str) -> String {
    format!("address:{address}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_is_limited_after_its_failures_until_the_window_passes() {
        let limiter = LoginLimiter::default();
        let start = Instant::now();
        for _ in 0..ACCOUNT_FAILURES {
            assert!(limiter.check_at("acme/ana", "10.0.0.1", start).is_ok());
            limiter.failed_at("acme/ana", "10.0.0.1", start);
        }
        let limited = limiter.check_at("acme/ana", "10.0.0.9", start).unwrap_err();
        assert_eq!(limited.retry_after, WINDOW);
        // Another account from the same address is not limited yet.
        assert!(limiter.check_at("acme/bob", "10.0.0.1", start).is_ok());
        assert!(
            limiter
                .check_at("acme/ana", "10.0.0.1", start + WINDOW)
                .is_ok()
        );
    }

    #[test]
    fn an_address_is_limited_across_accounts() {
        let limiter = LoginLimiter::default();
        let now = Instant::now();
        for i in 0..ADDRESS_FAILURES {
            limiter.failed_at(&format!("acme/user{i}"), "10.0.0.1", now);
        }
        assert!(limiter.check_at("acme/new", "10.0.0.1", now).is_err());
        assert!(limiter.check_at("acme/new", "10.0.0.2", now).is_ok());
    }

    #[test]
    fn success_clears_the_account() {
        let limiter = LoginLimiter::default();
        let now = Instant::now();
        for _ in 0..ACCOUNT_FAILURES {
            limiter.failed_at("acme/ana", "10.0.0.1", now);
        }
        limiter.succeeded("acme/ana");
        assert!(limiter.check_at("acme/ana", "10.0.0.2", now).is_ok());
    }
}
