//! Revoked tokens: one record per revoked `jti`, kept until the token would have expired
//! anyway, then pruned.

use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use crate::Identity;
use crate::clock::plus;
use crate::docs::StoreError;
use crate::layout;

/// Page size when pruning.
const PRUNE_PAGE: usize = 500;

#[derive(Serialize, Deserialize)]
struct RevokedDoc {
    /// After this (plus leeway) the token is refused for its expiry; the record can go.
    expires: Timestamp,
    revoked: Timestamp,
}

impl Identity {
    /// Records `jti` as revoked until `expires`; `false` when it already was, which makes a
    /// refresh token usable exactly once even when two refreshes race.
    pub(crate) async fn revoke_jti(
        &self,
        jti: &str,
        expires: Timestamp,
    ) -> Result<bool, StoreError> {
        let doc = RevokedDoc {
            expires,
            revoked: self.now(),
        };
        self.docs().create(&layout::revoked_token(jti)?, &doc).await
    }

    pub(crate) async fn is_revoked(&self, jti: &str) -> Result<bool, StoreError> {
        let doc = self
            .docs()
            .get::<RevokedDoc>(&layout::revoked_token(jti)?)
            .await?;
        Ok(doc.is_some())
    }

    /// Deletes revocation records of tokens that have expired (past the leeway); returns how
    /// many went.
    pub async fn prune_revocations(&self) -> Result<usize, StoreError> {
        let now = self.now();
        let leeway = self.inner.config.leeway;
        let mut pruned = 0;
        let mut after = None;
        loop {
            let (page, next) = self
                .docs()
                .list::<RevokedDoc>(layout::revoked_tokens(), after.as_ref(), PRUNE_PAGE)
                .await?;
            for (key, doc) in page {
                if plus(doc.value.expires, leeway) < now
                    && self.docs().delete_at(&key, doc.version).await?
                {
                    pruned += 1;
                }
            }
            match next {
                Some(next) => after = Some(next),
                None => return Ok(pruned),
            }
        }
    }
}
