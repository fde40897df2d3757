//! Which snapshots of a table may be expired, by the rules the reference implementation's
//! snapshot expiry follows, so a table keeps here what it would keep there.
//!
//! Every branch of the table keeps its newest snapshots: at least its `min-snapshots-to-keep`
//! ancestors, and every ancestor younger than its `max-snapshot-age-ms`, each taken from the
//! ref or else from the table's `history.expire.*` properties (1 snapshot and 5 days when
//! unset). Every tag keeps its snapshot. A snapshot no ref reaches is kept while it is younger
//! than the cut-off. Everything else is expired. Before that, every ref but `main` whose
//! snapshot is older than its `max-ref-age-ms` (the ref's own, else the table's
//! `history.expire.max-ref-age-ms`; for ever when neither is set) is removed, and then keeps
//! nothing. Removing snapshots from the metadata deletes
//! no file; the files stay until a garbage collection finds nothing that still reads them.

use std::collections::BTreeSet;

use super::metadata::{RefType, TableMetadata};

/// Table property: how old a branch's snapshots may get before expiry removes them.
pub const MAX_SNAPSHOT_AGE_MS: &str = "history.expire.max-snapshot-age-ms";
/// Table property: how many of a branch's newest snapshots expiry always keeps.
pub const MIN_SNAPSHOTS_TO_KEEP: &str = "history.expire.min-snapshots-to-keep";

/// Table property: how old a ref's snapshot may get before expiry removes the ref (never
/// `main`).
pub const MAX_REF_AGE_MS: &str = "history.expire.max-ref-age-ms";

/// The reference implementation's defaults for those properties.
const DEFAULT_MAX_SNAPSHOT_AGE_MS: i64 = 5 * 24 * 60 * 60 * 1000;
const DEFAULT_MIN_SNAPSHOTS_TO_KEEP: i64 = 1;

/// What an expiry asks for beyond the table's own settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Expire what is older than this (milliseconds since the epoch) instead of the table's
    /// maximum age; refs with a maximum age of their own keep it.
    pub older_than_ms: Option<i64>,
    /// Keep at least this many snapshots per branch instead of the table's minimum; refs
    /// with a minimum of their own keep it.
    pub retain_last: Option<u32>,
}

/// The refs of `meta` that expire at `now_ms`, in name order: every ref but `main` whose
/// snapshot is older than its maximum age, or is not in the table at all.
pub fn expired_refs(meta: &TableMetadata, now_ms: i64) -> Vec<String> {
    let table_max = meta
        .properties
        .get(MAX_REF_AGE_MS)
        .and_then(|v| v.parse::<i64>().ok());
    meta.refs
        .iter()
        .filter(|(name, _)| name.as_str() != MAIN)
        .filter(|(_, r)| match meta.snapshot(r.snapshot_id) {
            None => true,
            Some(snapshot) => r
                .max_ref_age_ms
                .or(table_max)
                .is_some_and(|age| now_ms.saturating_sub(snapshot.timestamp_ms) > age),
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// The table branch expiry never removes.
const MAIN: &str = "main";

/// The ids of the snapshots of `meta` that expire at `now_ms`, in id order. The refs that
/// [`expired_refs`] names keep nothing.
pub fn expired(meta: &TableMetadata, now_ms: i64, retention: &Retention) -> Vec<i64> {
    let property = |name: &str, default: i64| {
        meta.properties
            .get(name)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(default)
    };
    let cut_off = retention.older_than_ms.unwrap_or_else(|| {
        now_ms.saturating_sub(property(MAX_SNAPSHOT_AGE_MS, DEFAULT_MAX_SNAPSHOT_AGE_MS))
    });
    let min_keep = retention.retain_last.map_or_else(
        || property(MIN_SNAPSHOTS_TO_KEEP, DEFAULT_MIN_SNAPSHOTS_TO_KEEP),
        i64::from,
    );
    let gone_refs = expired_refs(meta, now_ms);
    let mut kept = BTreeSet::new();
    let mut reached = BTreeSet::new();
    for (_, reference) in meta
        .refs
        .iter()
        .filter(|(name, _)| !gone_refs.contains(name))
    {
        match reference.kind {
            RefType::Tag => {
                kept.insert(reference.snapshot_id);
                reached.insert(reference.snapshot_id);
            }
            RefType::Branch => {
                let keep = reference.min_snapshots_to_keep.map_or(min_keep, i64::from);
                let older_than = reference
                    .max_snapshot_age_ms
                    .map_or(cut_off, |age| now_ms.saturating_sub(age));
                // Ancestors are kept newest first until one is neither among the first
                // `keep` nor younger than the limit; all of them are reached by the branch.
                let mut keeping = true;
                let mut count = 0;
                let mut visited = BTreeSet::new();
                let mut at = Some(reference.snapshot_id);
                while let Some(snapshot) = at.and_then(|id| meta.snapshot(id)) {
                    // A parent chain that loops is not a history: stop where it repeats.
                    if !visited.insert(snapshot.snapshot_id) {
                        break;
                    }
                    reached.insert(snapshot.snapshot_id);
                    keeping = keeping && (count < keep || snapshot.timestamp_ms >= older_than);
                    if keeping {
                        kept.insert(snapshot.snapshot_id);
                        count += 1;
                    }
                    at = snapshot.parent_snapshot_id;
                }
            }
        }
    }
    if let Some(current) = meta.current_snapshot_id {
        kept.insert(current);
    }
    meta.snapshots
        .iter()
        .filter(|s| !kept.contains(&s.snapshot_id))
        // What no ref reaches expires by the cut-off alone.
        .filter(|s| reached.contains(&s.snapshot_id) || s.timestamp_ms < cut_off)
        .map(|s| s.snapshot_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    const DAY: i64 = 24 * 60 * 60 * 1000;
    const NOW: i64 = 100 * DAY;

    /// A table whose `main` holds snapshots 1..=n, snapshot i taken i days ago counted from
    /// `n` (snapshot n is today's), plus what `more` adds to the metadata.
    fn table(n: i64, more: Value) -> TableMetadata {
        let snapshots: Vec<Value> = (1..=n)
            .map(|i| {
                let mut s = json!({"snapshot-id": i, "sequence-number": i,
                    "timestamp-ms": NOW - (n - i) * DAY, "manifest-list": format!("s3://b/{i}.avro"),
                    "summary": {"operation": "append"}});
                if i > 1 {
                    s["parent-snapshot-id"] = json!(i - 1);
                }
                s
            })
            .collect();
        let mut meta = json!({
            "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "s3://b/t", "last-sequence-number": n, "last-updated-ms": NOW,
            "last-column-id": 1, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": false, "type": "long"}]}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": {}, "current-snapshot-id": n, "snapshots": snapshots,
            "refs": {"main": {"snapshot-id": n, "type": "branch"}},
        });
        merge(&mut meta, more);
        serde_json::from_value(meta).unwrap()
    }

    fn merge(into: &mut Value, more: Value) {
        if let (Value::Object(into), Value::Object(more)) = (into, more) {
            for (k, v) in more {
                match into.get_mut(&k) {
                    Some(existing) if existing.is_object() && v.is_object() => merge(existing, v),
                    _ => {
                        into.insert(k, v);
                    }
                }
            }
        }
    }

    fn expire(meta: &TableMetadata, retention: Retention) -> Vec<i64> {
        expired(meta, NOW, &retention)
    }

    #[test]
    fn by_default_a_branch_keeps_five_days_and_at_least_one_snapshot() {
        let meta = table(10, json!({}));
        // Snapshots 6..=10 are 4..0 days old; 5 is exactly 5 days old and stays.
        assert_eq!(expire(&meta, Retention::default()), vec![1, 2, 3, 4]);
        let recent = table(3, json!({}));
        assert!(expire(&recent, Retention::default()).is_empty());
    }

    #[test]
    fn the_tables_properties_and_the_request_set_the_limits() {
        let meta = table(
            10,
            json!({"properties": {MAX_SNAPSHOT_AGE_MS: (2 * DAY).to_string(),
                MIN_SNAPSHOTS_TO_KEEP: "4"}}),
        );
        // Two days keep 8..=10; the minimum of four keeps 7 too.
        assert_eq!(expire(&meta, Retention::default()), vec![1, 2, 3, 4, 5, 6]);
        let everything_old = Retention {
            older_than_ms: Some(NOW + 1),
            retain_last: Some(2),
        };
        assert_eq!(expire(&meta, everything_old), vec![1, 2, 3, 4, 5, 6, 7, 8]);
        let keep_all = Retention {
            older_than_ms: Some(0),
            retain_last: None,
        };
        assert!(expire(&meta, keep_all).is_empty());
    }

    #[test]
    fn refs_older_than_their_maximum_age_expire_but_main_never() {
        let refs = json!({"refs": {
            "old-tag": {"snapshot-id": 2, "type": "tag", "max-ref-age-ms": 3 * DAY},
            "young-tag": {"snapshot-id": 9, "type": "tag", "max-ref-age-ms": 3 * DAY},
            "audit": {"snapshot-id": 4, "type": "branch"},
            "lost": {"snapshot-id": 77, "type": "tag"},
            "main": {"snapshot-id": 10, "type": "branch", "max-ref-age-ms": 1},
        }});
        let meta = table(10, refs.clone());
        // Without a table-wide maximum, `audit` lives; the tag whose snapshot is 8 days old
        // and the tag of a snapshot the table does not have go.
        assert_eq!(expired_refs(&meta, NOW), ["lost", "old-tag"]);
        let everything_old = Retention {
            older_than_ms: Some(NOW + 1),
            retain_last: Some(1),
        };
        // main keeps 10, `young-tag` 9, `audit` 4: snapshot 2 is no tag's any more.
        assert_eq!(expire(&meta, everything_old), vec![1, 2, 3, 5, 6, 7, 8]);
        let mut with_table_max = refs;
        with_table_max["properties"] = json!({MAX_REF_AGE_MS: (5 * DAY).to_string()});
        let meta = table(10, with_table_max);
        assert_eq!(expired_refs(&meta, NOW), ["audit", "lost", "old-tag"]);
    }

    #[test]
    fn tags_branches_and_their_own_limits_keep_their_snapshots() {
        let refs = json!({"refs": {
            "v1": {"snapshot-id": 2, "type": "tag"},
            "audit": {"snapshot-id": 4, "type": "branch", "min-snapshots-to-keep": 2},
        }});
        let meta = table(10, refs);
        let everything_old = Retention {
            older_than_ms: Some(NOW + 1),
            retain_last: Some(1),
        };
        // main keeps 10; the tag keeps 2; the branch `audit` keeps 4 and 3 by its own minimum.
        assert_eq!(expire(&meta, everything_old), vec![1, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn what_no_ref_reaches_goes_by_age_alone() {
        let mut meta = table(6, json!({}));
        // A snapshot off the history (a rolled-back write), one day old, and one ten days old.
        for (id, age) in [(20, DAY), (21, 10 * DAY)] {
            let mut s = meta.snapshots[0].clone();
            s.snapshot_id = id;
            s.parent_snapshot_id = Some(3);
            s.timestamp_ms = NOW - age;
            meta.snapshots.push(s);
        }
        let expired = expire(&meta, Retention::default());
        assert_eq!(expired, vec![21], "6 is 0 days, 1 is 5 days old: kept");
    }

    #[test]
    fn a_table_without_snapshots_expires_nothing() {
        let mut meta = table(1, json!({}));
        meta.snapshots.clear();
        meta.refs.clear();
        meta.current_snapshot_id = None;
        assert!(expire(&meta, Retention::default()).is_empty());
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const HOUR: i64 = 60 * 60 * 1000;
    const NOW: i64 = 1_000 * HOUR;

    /// A table with `parents.len()` snapshots: snapshot `i + 1` has parent `parents[i]` (an
    /// earlier one, or none), taken `ages[i]` hours ago; refs as given.
    fn table(
        parents: &[Option<usize>],
        ages: &[i64],
        refs: &[(String, usize, bool, Option<i32>)],
    ) -> TableMetadata {
        let snapshots: Vec<serde_json::Value> = parents
            .iter()
            .enumerate()
            .map(|(i, parent)| {
                let mut s = json!({"snapshot-id": i + 1, "sequence-number": i + 1,
                    "timestamp-ms": NOW - ages[i] * HOUR, "summary": {"operation": "append"}});
                if let Some(p) = parent {
                    s["parent-snapshot-id"] = json!(p + 1);
                }
                s
            })
            .collect();
        let mut all_refs = serde_json::Map::new();
        for (name, at, tag, keep) in refs {
            let mut r = json!({"snapshot-id": at + 1, "type": if *tag { "tag" } else { "branch" }});
            if let Some(keep) = keep {
                r["min-snapshots-to-keep"] = json!(keep);
            }
            all_refs.insert(name.clone(), r);
        }
        let main = refs.iter().find(|r| r.0 == "main").map(|r| r.1 + 1);
        serde_json::from_value(json!({
            "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "s3://b/t", "last-sequence-number": parents.len(), "last-updated-ms": NOW,
            "last-column-id": 1, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": {}, "current-snapshot-id": main, "snapshots": snapshots,
            "refs": all_refs,
        }))
        .unwrap()
    }

    /// Snapshot histories (each parent an earlier snapshot), their ages, `main` and a few
    /// more refs, and a retention.
    fn cases() -> impl Strategy<Value = (TableMetadata, Retention)> {
        (1usize..24).prop_flat_map(|n| {
            let parents = proptest::collection::vec(proptest::option::weighted(0.9, 0usize..n), n)
                .prop_map(|ps| {
                    ps.into_iter()
                        .enumerate()
                        .map(|(i, p)| p.filter(|&p| p < i))
                        .collect::<Vec<_>>()
                });
            let ages = proptest::collection::vec(0i64..400, n);
            let others = proptest::collection::vec(
                (0usize..n, any::<bool>(), proptest::option::of(1i32..5)),
                0..4,
            );
            let retention = (
                proptest::option::of(0i64..500),
                proptest::option::of(1u32..6),
            );
            (parents, ages, 0usize..n, others, retention).prop_map(
                move |(parents, ages, main, others, (older, keep))| {
                    let mut refs = vec![("main".to_owned(), main, false, None)];
                    for (i, (at, tag, own_keep)) in others.into_iter().enumerate() {
                        refs.push((format!("r{i}"), at, tag, own_keep));
                    }
                    let retention = Retention {
                        older_than_ms: older.map(|hours| NOW - hours * HOUR),
                        retain_last: keep,
                    };
                    (table(&parents, &ages, &refs), retention)
                },
            )
        })
    }

    proptest! {
        #[test]
        fn expiry_keeps_what_refs_need_and_is_done_once((meta, retention) in cases()) {
            let gone: BTreeSet<i64> = expired(&meta, NOW, &retention).into_iter().collect();
            let gone_refs = expired_refs(&meta, NOW);
            prop_assert!(!gone_refs.contains(&"main".to_owned()));
            prop_assert!(meta.current_snapshot_id.is_none_or(|c| !gone.contains(&c)));
            let default_keep = i64::from(retention.retain_last.unwrap_or(1));
            for (_, r) in meta.refs.iter().filter(|(n, _)| !gone_refs.contains(n)) {
                prop_assert!(!gone.contains(&r.snapshot_id), "a ref's own snapshot stays");
                if r.kind == RefType::Branch {
                    let keep = r.min_snapshots_to_keep.map_or(default_keep, i64::from);
                    let mut at = Some(r.snapshot_id);
                    let mut seen = 0;
                    while let Some(s) = at.and_then(|id| meta.snapshot(id)) {
                        if seen >= keep {
                            break;
                        }
                        prop_assert!(!gone.contains(&s.snapshot_id), "among a branch's newest {keep}");
                        seen += 1;
                        at = s.parent_snapshot_id;
                    }
                }
            }
            // Applied, there is nothing left to expire.
            let mut after = meta.clone();
            after.snapshots.retain(|s| !gone.contains(&s.snapshot_id));
            after.refs.retain(|n, _| !gone_refs.contains(n));
            prop_assert!(expired(&after, NOW, &retention).is_empty());
            prop_assert!(expired_refs(&after, NOW).is_empty());
        }
    }
}
