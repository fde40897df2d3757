//! Holds: what a transfer in progress is about to make reachable, kept by collections.
//!
//! A bundle's or pack's objects are stored before any ref points to them, and commits made
//! elsewhere carry their own, possibly old, times, so a collection running meanwhile would
//! find them unreachable and past every window. So before its first object is stored, a
//! transfer records the commits its refs will point to, and collections read the holds after
//! listing what is stored and keep what those commits reach of it. Objects arrive in walk
//! order, each after one that points to it, so whatever of a transfer is stored is reachable
//! from its heads through stored objects. The hold goes once the refs moved (or the transfer
//! failed); one left by a server that died expires.
//!
//! ```text
//! receiving/<tenant>/<catalog>/<id>     the heads of one transfer and when it began
//! ```

use pangolin_records::{ExpectedVersion, RecordKey, RecordStore};
use pangolin_store::{ObjectId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::tenancy::Name;
use crate::tenancy::records::{self, RecordsError};

/// How long a hold keeps anything: far longer than any transfer takes.
const EXPIRY_MS: i64 = 24 * 3600 * 1000;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct HoldRecord {
    heads: Vec<String>,
    since_ms: i64,
}

fn prefix(tenant: &str, catalog: &str) -> String {
    format!("receiving/{tenant}/{catalog}/")
}

/// A transfer's hold, released once its refs moved.
#[derive(Debug)]
pub struct Hold {
    key: RecordKey,
}

impl Hold {
    /// Records that `heads` are arriving in `catalog`.
    pub(crate) async fn place(catalog: &Catalog, heads: &[ObjectId]) -> Result<Self, RecordsError> {
        let key = RecordKey::new(format!(
            "{}{}",
            prefix(catalog.tenant(), catalog.name()),
            uuid::Uuid::new_v4().simple()
        ))
        .expect("names are short and have no control characters");
        let record = HoldRecord {
            heads: heads.iter().map(ObjectId::to_hex).collect(),
            since_ms: Timestamp::now().as_millis(),
        };
        match records::put(
            catalog.store().as_ref(),
            &key,
            ExpectedVersion::Absent,
            &record,
        )
        .await
        {
            Ok(_) => Ok(Self { key }),
            Err(records::PutError::Records(e)) => Err(e),
            // A fresh random key taken: no store hands one out twice.
            Err(records::PutError::Mismatch { .. }) => Err(RecordsError::Contended {
                key: key.to_string(),
            }),
        }
    }

    /// Lets collections take what the transfer stored, unless a ref now reaches it.
    pub async fn release(self, catalog: &Catalog) {
        if let Err(error) = records::delete_if_there(catalog.store().as_ref(), &self.key).await {
            tracing::warn!(key = %self.key, %error, "could not release a transfer's hold; it expires");
        }
    }
}

/// The heads of every transfer into `catalog` that holds objects now.
pub(crate) async fn held_heads(catalog: &Catalog) -> Result<Vec<ObjectId>, RecordsError> {
    let store: &dyn RecordStore = catalog.store().as_ref();
    let prefix = prefix(catalog.tenant(), catalog.name());
    let oldest = Timestamp::now().as_millis() - EXPIRY_MS;
    let mut heads = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_records(&prefix, after.as_ref(), records::MAX_PAGE)
            .await?;
        for record in &page.records {
            // A record that does not read is no hold anyone made.
            let Ok(hold) = serde_json::from_slice::<HoldRecord>(&record.value) else {
                continue;
            };
            if hold.since_ms >= oldest {
                heads.extend(hold.heads.iter().filter_map(|h| h.parse::<ObjectId>().ok()));
            }
        }
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(heads),
        }
    }
}

/// Deletes every hold of catalog `catalog` of `tenant`, when the catalog goes.
pub(crate) async fn delete_all(
    store: &dyn RecordStore,
    tenant: &Name,
    catalog: &Name,
) -> Result<(), RecordsError> {
    records::delete_all_under(store, &prefix(tenant.as_ref(), catalog.as_ref())).await
}
