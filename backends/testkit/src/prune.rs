//! Conformance cases for deleting unreachable objects and whole repositories.

use std::sync::Arc;

use pangolin_refs::{Expected, LogQuery, ObjectQuery, Target};
use pangolin_store::{ObjectId, ObjectKind, RawObject};

use crate::refs::{tx, update};
use crate::{Backend, branch, commit_id, fresh_repo, object};

pub async fn listing_objects_pages_in_id_order<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let other = fresh_repo();
    let mut objects: Vec<RawObject> = (0..25).map(object).collect();
    // Commits among the tree nodes, so a listing of one kind skips the others.
    objects.extend((0..7).map(|seed| {
        let data = format!("commit body {seed}").into_bytes();
        RawObject {
            id: ObjectId::compute(ObjectKind::Commit, &data),
            kind: ObjectKind::Commit,
            data: data.into(),
        }
    }));
    backend.put_many(&repo, &objects).await.expect("put");
    backend
        .put_many(&other, &[object(100)])
        .await
        .expect("put other");
    let mut expected: Vec<(ObjectId, ObjectKind)> =
        objects.iter().map(|o| (o.id, o.kind)).collect();
    expected.sort();
    for kind in [None, Some(ObjectKind::Commit), Some(ObjectKind::Tree)] {
        let mut listed = Vec::new();
        let mut query = ObjectQuery {
            kind,
            after: None,
            limit: 3,
        };
        loop {
            let page = backend.list_objects(&repo, query).await.expect("list");
            assert!(page.len() <= 3);
            let Some((last, _)) = page.last().copied() else {
                break;
            };
            listed.extend(page);
            query.after = Some(last);
        }
        let wanted: Vec<(ObjectId, ObjectKind)> = expected
            .iter()
            .filter(|(_, k)| kind.is_none_or(|kind| kind == *k))
            .copied()
            .collect();
        assert_eq!(listed, wanted, "{kind:?}");
    }
    assert!(
        backend
            .list_objects(&fresh_repo(), ObjectQuery::all(10))
            .await
            .expect("list empty")
            .is_empty()
    );
}

pub async fn deletes_apply_only_while_no_ref_moved<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let objects: Vec<RawObject> = (0..4).map(object).collect();
    backend.put_many(&repo, &objects).await.expect("put");
    let moves = backend.ref_moves(&repo).await.expect("moves");
    assert!(
        backend
            .delete_objects(&repo, moves, &[objects[0].id, objects[1].id])
            .await
            .expect("delete")
    );
    assert_eq!(backend.get(&repo, &objects[0].id).await.expect("get"), None);
    assert_eq!(backend.get(&repo, &objects[1].id).await.expect("get"), None);
    assert!(backend.contains(&repo, &objects[2].id).await.expect("get"));

    let main = branch("main");
    backend
        .transact(
            &repo,
            tx(
                vec![update(&main, Expected::Absent, Target::Set(commit_id(1)))],
                1,
            ),
        )
        .await
        .expect("move");
    assert!(
        !backend
            .delete_objects(&repo, moves, &[objects[2].id])
            .await
            .expect("stale delete"),
        "a ref moved since the number was read"
    );
    assert!(backend.contains(&repo, &objects[2].id).await.expect("get"));
    let moved = backend.ref_moves(&repo).await.expect("moves");
    assert_ne!(moved, moves);
    assert!(
        backend
            .delete_objects(&repo, moved, &[objects[2].id, object(404).id])
            .await
            .expect("delete")
    );
    assert!(!backend.contains(&repo, &objects[2].id).await.expect("get"));
    assert!(backend.contains(&repo, &objects[3].id).await.expect("get"));
}

/// A publish that stores an object already present (so the backend keeps the stored copy)
/// races a delete of that object: whichever goes first, the object is there afterwards.
pub async fn publishes_racing_deletes_keep_their_objects<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let main = branch("main");
    let mut head = None;
    for round in 0..40u64 {
        let revived = object(1000 + round);
        backend
            .put_many(&repo, std::slice::from_ref(&revived))
            .await
            .expect("put");
        let moves = backend.ref_moves(&repo).await.expect("moves");
        let expected = head.map_or(Expected::Absent, Expected::Equals);
        let next = commit_id(round + 1);
        let publish = {
            let backend = backend.clone();
            let repo = repo.clone();
            let main = main.clone();
            let revived = revived.clone();
            tokio::spawn(async move {
                backend
                    .publish(
                        &repo,
                        vec![revived],
                        tx(
                            vec![update(&main, expected, Target::Set(next))],
                            i64::try_from(round).expect("small"),
                        ),
                        Vec::new(),
                    )
                    .await
            })
        };
        let delete = {
            let backend = backend.clone();
            let repo = repo.clone();
            let id = revived.id;
            tokio::spawn(async move { backend.delete_objects(&repo, moves, &[id]).await })
        };
        publish.await.expect("join").expect("publish");
        delete.await.expect("join").expect("delete");
        head = Some(next);
        assert!(
            backend.contains(&repo, &revived.id).await.expect("get"),
            "round {round}: the published object was deleted"
        );
    }
}

pub async fn dropping_a_repository_removes_everything_of_it<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let kept = fresh_repo();
    let main = branch("main");
    for r in [&repo, &kept] {
        backend
            .publish(
                r,
                vec![object(1), object(2)],
                tx(
                    vec![update(&main, Expected::Absent, Target::Set(commit_id(1)))],
                    1,
                ),
                Vec::new(),
            )
            .await
            .expect("publish");
    }
    let before = backend.ref_moves(&repo).await.expect("moves");
    backend.drop_repo(&repo).await.expect("drop");
    assert_eq!(backend.get_ref(&repo, &main).await.expect("get"), None);
    let log = LogQuery {
        before: None,
        limit: 10,
    };
    assert!(
        backend
            .ref_log(&repo, &main, log)
            .await
            .expect("log")
            .is_empty()
    );
    assert!(
        backend
            .list_objects(&repo, ObjectQuery::all(10))
            .await
            .expect("list")
            .is_empty()
    );
    assert_eq!(
        backend.get_ref(&kept, &main).await.expect("get"),
        Some(commit_id(1))
    );
    assert_eq!(
        backend.ref_log(&kept, &main, log).await.expect("log").len(),
        1
    );
    assert_eq!(
        backend
            .list_objects(&kept, ObjectQuery::all(10))
            .await
            .expect("list")
            .len(),
        2
    );
    // A repository of the same name starts empty, and its moves are never numbered as the
    // dropped one's were.
    backend
        .transact(
            &repo,
            tx(
                vec![update(&main, Expected::Absent, Target::Set(commit_id(2)))],
                2,
            ),
        )
        .await
        .expect("recreate");
    assert_ne!(backend.ref_moves(&repo).await.expect("moves"), before);
}
