//! Transfers between catalogs: packs as bytes, and what refs reach, to count what must travel.

use std::collections::BTreeSet;
use std::sync::Arc;

use pangolin_catalog::collect::{CollectReport, CollectRequest};
use pangolin_catalog::orphans::SweepProgress;
use pangolin_catalog::reach::{self, Reach};
use pangolin_catalog::{Catalog, HistoryRequest, RefSpec};
use pangolin_merge::{Landed, MergeOptions, MergeOutcome};
use pangolin_refs::RefName;
use pangolin_store::ObjectId;
use tokio::sync::mpsc;

/// A pack of `want` (every ref when `None`) beyond what the commits of `have` reach.
pub async fn pack(catalog: &Catalog, want: Option<&[&str]>, have: &[ObjectId]) -> Vec<u8> {
    let want: Option<Vec<RefName>> =
        want.map(|names| names.iter().map(|n| RefName::new(*n).unwrap()).collect());
    let plan = catalog.plan_pack(want.as_deref(), have).await.unwrap();
    let (pieces, mut received) = mpsc::channel(4);
    let writer = tokio::spawn(plan.write(pieces));
    let mut bytes = Vec::new();
    while let Some(piece) = received.recv().await {
        bytes.extend_from_slice(&piece);
    }
    writer.await.unwrap().unwrap();
    bytes
}

/// Merges `source` into branch `into` with the default options, as `ana`.
pub async fn merge(catalog: &Catalog, source: &RefSpec, into: &str) -> Landed<MergeOutcome> {
    let request = HistoryRequest {
        principal: "ana".into(),
        message: None,
        expected_head: None,
    };
    catalog
        .merge(
            source,
            &super::lake::spec(into),
            &MergeOptions::default(),
            &request,
        )
        .await
        .unwrap()
}

/// Every ref's head.
pub async fn heads(catalog: &Catalog) -> Vec<ObjectId> {
    reach::all_refs(catalog.store().as_ref(), catalog.odb().repo())
        .await
        .unwrap()
        .into_iter()
        .map(|(_, head)| head)
        .collect()
}

/// Every object reachable from `from`.
pub async fn reachable(catalog: &Catalog, from: &[ObjectId]) -> BTreeSet<ObjectId> {
    let mut walk = Reach::default();
    for id in from {
        walk.push(*id);
    }
    let mut all = BTreeSet::new();
    loop {
        let batch = walk
            .next(catalog.store().as_ref(), catalog.odb().repo())
            .await
            .unwrap();
        if batch.is_empty() {
            return all;
        }
        all.extend(batch.iter().map(|(raw, _)| raw.id));
    }
}

/// What `from` reaches in `a` that `b`'s refs do not reach.
pub async fn lacking(a: &Catalog, from: &[ObjectId], b: &Catalog) -> BTreeSet<ObjectId> {
    reachable(a, from)
        .await
        .difference(&reachable(b, &heads(b).await).await)
        .copied()
        .collect()
}

/// Collects `catalog`'s unreachable objects, with no slack beyond its window.
pub async fn collect(catalog: &Catalog) -> CollectReport {
    catalog
        .collect_objects(
            CollectRequest {
                dry_run: false,
                slack_ms: 0,
            },
            Arc::new(SweepProgress::default()),
        )
        .await
        .unwrap()
}
