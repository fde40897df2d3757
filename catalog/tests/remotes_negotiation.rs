//! Whatever the two histories (branches, merges, commits on both sides after a clone), a fetch
//! sends exactly the objects the receiver lacks and arrives complete, and a push of the
//! merged result back is a fast-forward that sends exactly what the sender lacks.
#![allow(clippy::unwrap_used)]

mod common;

use common::lake::*;
use common::transfer::*;
use pangolin_catalog::bundle::Receiving;
use pangolin_catalog::remotes::{NewRemote, PushRequest};
use proptest::prelude::*;

const BRANCHES: [&str; 3] = ["main", "b1", "b2"];

#[derive(Debug, Clone)]
enum Op {
    Commit(usize),
    Branch(usize, usize),
    Merge(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3usize).prop_map(Op::Commit),
        1 => (0..3usize, 0..3usize).prop_map(|(from, to)| Op::Branch(from, to)),
        1 => (0..3usize, 0..3usize).prop_map(|(from, into)| Op::Merge(from, into)),
    ]
}

async fn exists(catalog: &Catalog, name: &str) -> bool {
    catalog
        .store()
        .get_ref(catalog.odb().repo(), &branch(name))
        .await
        .unwrap()
        .is_some()
}

async fn apply(catalog: &Catalog, ops: &[Op], tag: &str) {
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Commit(b) => {
                if exists(catalog, BRANCHES[b]).await {
                    catalog
                        .create_namespace(
                            &branch(BRANCHES[b]),
                            &key(&format!("{tag}{i}")),
                            Default::default(),
                            &meta("ns"),
                        )
                        .await
                        .unwrap();
                }
            }
            Op::Branch(from, to) => {
                if exists(catalog, BRANCHES[from]).await && !exists(catalog, BRANCHES[to]).await {
                    new_branch(catalog, BRANCHES[to], BRANCHES[from]).await;
                }
            }
            Op::Merge(from, into) => {
                if from != into
                    && exists(catalog, BRANCHES[from]).await
                    && exists(catalog, BRANCHES[into]).await
                {
                    merge(catalog, &spec(BRANCHES[from]), BRANCHES[into]).await;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn fetch_and_push_send_exactly_what_the_other_side_lacks(
        before in prop::collection::vec(op(), 0..8),
        theirs in prop::collection::vec(op(), 0..8),
        ours in prop::collection::vec(op(), 0..6),
    ) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let lake = lake().await;
                let source = &lake.catalog;
                apply(source, &before, "a").await;
                let copy = Catalog::create(
                    source.store().clone(),
                    Arc::new(ObjectCache::new(1 << 20)),
                    "acme",
                    "clone",
                    "ana",
                )
                .await
                .unwrap();
                let mut importer = copy.importer();
                importer.feed(&pack(source, None, &[]).await).await.unwrap();
                importer.finish("cloner").await.unwrap();
                copy.add_remote(
                    NewRemote {
                        name: "origin".into(),
                        url: "http://origin.example".into(),
                        catalog: None,
                    },
                    "ana",
                )
                .await
                .unwrap();
                // The clone's first fetch records where the source's refs are, as
                // `pangolin clone` does.
                let mut receiver = copy.fetch_receiver("origin").await.unwrap();
                receiver.feed(&pack(source, None, &heads(&copy).await).await).await.unwrap();
                assert_eq!(receiver.finish("fetcher").await.unwrap().objects, 0);
                apply(source, &theirs, "b").await;
                apply(&copy, &ours, "c").await;

                // Fetch: exactly the difference, and it arrives complete.
                let missing = lacking(source, &heads(source).await, &copy).await;
                // What the copy says it holds: its heads and the source's as last fetched.
                let mut have = heads(&copy).await;
                have.extend(copy.remote("origin").await.unwrap().value.refs.iter().map(|r| r.hash));
                let mut receiver = copy.fetch_receiver("origin").await.unwrap();
                receiver.feed(&pack(source, None, &have).await).await.unwrap();
                let fetched = receiver.finish("fetcher").await.unwrap();
                assert_eq!(fetched.objects, missing.len() as u64);

                // Merge the source's main into ours and push it back: a fast-forward carrying
                // exactly what the source lacks.
                let theirs_main = fetched.remote.head("main").unwrap();
                merge(&copy, &spec(&theirs_main.to_hex()), "main").await;
                let ours_main = head(&copy, "main").await;
                let missing = lacking(&copy, &[ours_main], source).await;
                let bytes = pack(&copy, Some(&["main"]), &heads(source).await).await;
                let mut receiver = source
                    .push_receiver(PushRequest {
                        branch: RefName::new("main").unwrap(),
                        expected: Some(theirs_main),
                        force: false,
                        origin: None,
                    })
                    .unwrap();
                receiver.feed(&bytes).await.unwrap();
                let pushed = receiver.finish("pusher").await.unwrap();
                assert_eq!(pushed.objects, missing.len() as u64);
                assert!(!pushed.forced);
                assert_eq!(head(source, "main").await, ours_main);
            });
    }
}
