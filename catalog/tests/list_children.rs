//! Listing a namespace's children steps over subtrees: it returns exactly what a scan of every
//! key under the parent returns, page for page, while reading nodes in proportion to the
//! children and the tree's height rather than to the entries below.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::list::children;
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{
    BackendError, Content, ContentId, ContentKey, ContentKind, Entry, HashPrefix, ObjectCache,
    ObjectId, ObjectStore, Odb, RawObject, RepoId,
};
use proptest::prelude::*;
use uuid::Uuid;

type Listed = (Vec<(ContentKey, Entry)>, Option<ContentKey>);

/// The listing as it was: every key under the parent, in pages of `scan_page`, deeper keys and
/// other kinds dropped.
async fn scan(
    odb: &Odb,
    root: &ObjectId,
    parent: Option<&ContentKey>,
    kind: ContentKind,
    after: Option<&ContentKey>,
    limit: usize,
    scan_page: usize,
) -> Listed {
    let depth = parent.map_or(1, |p| p.len() + 1);
    let mut range = match parent {
        Some(p) => KeyRange::prefix(p.clone()),
        None => KeyRange::all(),
    };
    if let Some(after) = after {
        range = range.after(after);
    }
    let mut found: Vec<(ContentKey, Entry)> = Vec::new();
    loop {
        let page = tree::list(odb, root, &range, scan_page).await.unwrap();
        for (key, entry) in page.entries {
            if key.len() == depth && entry.content.kind() == kind {
                if found.len() == limit {
                    let next = found.last().map(|(k, _)| k.clone());
                    return (found, next);
                }
                found.push((key, entry));
            }
        }
        match page.next_after {
            Some(next) => range = range.after(&next),
            None => return (found, None),
        }
    }
}

fn odb_on(store: Arc<dyn ObjectStore>) -> Odb {
    Odb::new(
        RepoId::new("list").unwrap(),
        store,
        Arc::new(ObjectCache::new(64 << 20)),
    )
}

fn entry(i: u64, kind: ContentKind) -> Entry {
    let content = match kind {
        ContentKind::Namespace => Content::Namespace {
            properties: BTreeMap::new(),
        },
        ContentKind::IcebergView => Content::IcebergView {
            metadata_location: format!("s3://b/v{i}/00001.metadata.json"),
            version_id: 1,
        },
        _ => Content::IcebergTable {
            metadata_location: format!("s3://b/t{i}/00001.metadata.json"),
            snapshot_id: None,
            schema_id: 0,
            spec_id: 0,
            sort_order_id: 0,
        },
    };
    Entry {
        content_id: ContentId::from_uuid(Uuid::from_u128(u128::from(i) + 1)),
        content,
    }
}

/// Names that are prefixes of each other, around where the element separator sorts, and
/// outside ASCII.
const NAMES: [&str; 8] = ["a", "a b", "a-b", "ab", "b", "é", "表", "z"];

/// A catalog of the given keys: every key that encloses another is a namespace, and so is every
/// enclosing key the list lacks; the others are namespaces, tables or views as drawn.
fn catalog_of(keys: &[(Vec<&str>, u8)]) -> BTreeMap<ContentKey, Entry> {
    let mut kinds: BTreeMap<ContentKey, ContentKind> = BTreeMap::new();
    for (elements, kind) in keys {
        let key = ContentKey::new(elements).unwrap();
        for depth in 1..key.len() {
            kinds.insert(key.truncated(depth).unwrap(), ContentKind::Namespace);
        }
        let kind = match kind % 3 {
            0 => ContentKind::Namespace,
            1 => ContentKind::IcebergTable,
            _ => ContentKind::IcebergView,
        };
        kinds.entry(key).or_insert(kind);
    }
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, (key, kind))| (key, entry(i as u64, kind)))
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

const KINDS: [ContentKind; 3] = [
    ContentKind::Namespace,
    ContentKind::IcebergTable,
    ContentKind::IcebergView,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// On random catalogs of up to four levels, for the top level and some namespaces, every
    /// kind, page sizes from 0 up and `after` tokens anywhere (present or not, shallower or
    /// deeper than the children), each page and its `next` token equal the scan's, and paging
    /// to the end yields exactly the model's children.
    #[test]
    fn listing_agrees_with_the_scan(
        keys in prop::collection::vec(
            (prop::collection::vec(prop::sample::select(&NAMES[..]), 1..5), any::<u8>()),
            1..3_000,
        ),
        parents in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        afters in prop::collection::vec(
            prop::option::of(prop::collection::vec(prop::sample::select(&NAMES[..]), 1..5)),
            1..4,
        ),
        limit in prop_oneof![0..4usize, 4..40usize, Just(usize::MAX)],
        scan_page in 1..50usize,
    ) {
        let model = catalog_of(&keys);
        runtime().block_on(async {
            let odb = odb_on(Arc::new(MemoryBackend::new()));
            let root = tree::build(&odb, model.clone()).await.unwrap();
            let namespaces: Vec<&ContentKey> = model
                .iter()
                .filter(|(_, e)| e.content.kind() == ContentKind::Namespace)
                .map(|(k, _)| k)
                .collect();
            let mut parents: Vec<Option<&ContentKey>> =
                parents.iter().map(|i| Some(*i.get(&namespaces))).collect();
            parents.push(None);
            for parent in parents {
                let depth = parent.map_or(1, |p| p.len() + 1);
                for kind in KINDS {
                    let expected: Vec<&ContentKey> = model
                        .iter()
                        .filter(|(k, e)| {
                            k.len() == depth
                                && parent.is_none_or(|p| k.starts_with(p))
                                && e.content.kind() == kind
                        })
                        .map(|(k, _)| k)
                        .collect();
                    for first in &afters {
                        let mut after = first.as_ref().map(|a| ContentKey::new(a).unwrap());
                        let mut listed = Vec::new();
                        loop {
                            let got = children(&odb, &root, parent, kind, after.as_ref(), limit)
                                .await
                                .unwrap();
                            let want =
                                scan(&odb, &root, parent, kind, after.as_ref(), limit, scan_page)
                                    .await;
                            prop_assert_eq!(&got, &want, "{:?} {:?} after {:?}", parent, kind, after);
                            listed.extend(got.0.into_iter().map(|(k, _)| k));
                            match got.1 {
                                Some(next) => after = Some(next),
                                None => break,
                            }
                        }
                        if limit > 0 {
                            let start = first.as_ref().map(|a| ContentKey::new(a).unwrap());
                            let tail: Vec<ContentKey> = expected
                                .iter()
                                .filter(|k| start.as_ref().is_none_or(|s| **k > s))
                                .map(|k| (*k).clone())
                                .collect();
                            prop_assert_eq!(listed, tail);
                        }
                    }
                }
            }
            Ok(())
        })?;
    }
}

/// An object store that counts the objects asked of it.
#[derive(Debug)]
struct CountingStore {
    inner: MemoryBackend,
    reads: AtomicU64,
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.get(repo, id).await
    }

    async fn get_many(
        &self,
        repo: &RepoId,
        ids: &[ObjectId],
    ) -> Result<Vec<Option<RawObject>>, BackendError> {
        self.reads.fetch_add(ids.len() as u64, Ordering::Relaxed);
        self.inner.get_many(repo, ids).await
    }

    async fn put_many(&self, repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError> {
        self.inner.put_many(repo, objects).await
    }

    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError> {
        self.inner.contains(repo, id).await
    }

    async fn find_by_prefix(
        &self,
        repo: &RepoId,
        prefix: &HashPrefix,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        self.inner.find_by_prefix(repo, prefix, limit).await
    }
}

/// Five top-level namespaces, each with three nested namespaces, holding 20,000 tables.
fn warehouse() -> BTreeMap<ContentKey, Entry> {
    let mut keys: Vec<(Vec<String>, ContentKind)> = Vec::new();
    for ns in 0..5u64 {
        let top = format!("schema_{ns}");
        keys.push((vec![top.clone()], ContentKind::Namespace));
        for sub in 0..3 {
            keys.push((
                vec![top.clone(), format!("sub_{sub}")],
                ContentKind::Namespace,
            ));
        }
        for t in 0..4_000u64 {
            let mut key = vec![top.clone()];
            if t % 2 == 1 {
                key.push(format!("sub_{}", t % 3));
            }
            key.push(format!("table_{t:05}"));
            keys.push((key, ContentKind::IcebergTable));
        }
    }
    keys.into_iter()
        .enumerate()
        .map(|(i, (k, kind))| (ContentKey::new(k).unwrap(), entry(i as u64, kind)))
        .collect()
}

#[tokio::test]
async fn listing_top_level_namespaces_reads_one_path_per_namespace() {
    let store = Arc::new(CountingStore {
        inner: MemoryBackend::new(),
        reads: AtomicU64::new(0),
    });
    let model = warehouse();
    let root = tree::build(&odb_on(store.clone()), model.clone())
        .await
        .unwrap();

    // A fresh cache: every node the listing touches is read from the store.
    let cold = odb_on(store.clone());
    let height = u64::from(cold.node(&root).await.unwrap().level()) + 1;
    store.reads.store(0, Ordering::Relaxed);
    let (found, next) = children(&cold, &root, None, ContentKind::Namespace, None, 100)
        .await
        .unwrap();
    let reads = store.reads.load(Ordering::Relaxed);

    let names: Vec<String> = found.iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(
        names,
        (0..5).map(|i| format!("schema_{i}")).collect::<Vec<_>>()
    );
    assert_eq!(next, None);

    // Reading every node of the tree, as a scan does.
    let all = odb_on(store.clone());
    store.reads.store(0, Ordering::Relaxed);
    let listed = tree::list(&all, &root, &KeyRange::all(), usize::MAX)
        .await
        .unwrap();
    assert_eq!(listed.entries.len(), model.len());
    let nodes = store.reads.load(Ordering::Relaxed);

    // The root was cached above; then one descent below it to each namespace and one past the
    // last one's subtree, each at most `height - 1` nodes.
    let bound = (5 + 1) * (height - 1);
    assert!(
        reads <= bound,
        "read {reads} nodes, bound {bound} for height {height}"
    );
    assert!(
        nodes > 20 * bound,
        "the tree has {nodes} nodes, too few to tell a scan from skipping"
    );
}

#[tokio::test]
async fn listing_tables_steps_over_the_nested_namespaces() {
    let store = Arc::new(CountingStore {
        inner: MemoryBackend::new(),
        reads: AtomicU64::new(0),
    });
    let root = tree::build(&odb_on(store.clone()), warehouse())
        .await
        .unwrap();
    let cold = odb_on(store.clone());
    let height = u64::from(cold.node(&root).await.unwrap().level()) + 1;
    store.reads.store(0, Ordering::Relaxed);
    let parent = ContentKey::new(["schema_2"]).unwrap();
    let (found, next) = children(
        &cold,
        &root,
        Some(&parent),
        ContentKind::IcebergTable,
        None,
        10,
    )
    .await
    .unwrap();
    let reads = store.reads.load(Ordering::Relaxed);
    let names: Vec<String> = found.iter().map(|(k, _)| k.name().to_owned()).collect();
    let expected: Vec<String> = (0..20)
        .step_by(2)
        .map(|t| format!("table_{t:05}"))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(
        next,
        Some(ContentKey::new(["schema_2", "table_00018"]).unwrap())
    );
    // The 2,000 tables inside the three sub-namespaces sort before the direct ones and are
    // not read: one descent to the parent, one past each sub-namespace, and at most one more
    // path for the eleven tables read after them.
    let bound = (1 + 3 + 1) * (height - 1);
    assert!(
        reads <= bound,
        "read {reads} nodes, bound {bound} for height {height}"
    );
}
