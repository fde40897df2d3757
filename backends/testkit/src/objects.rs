//! Conformance cases for the object store.

use std::sync::Arc;

use pangolin_store::{HashPrefix, ObjectKind, RawObject};

use crate::{Backend, fresh_repo, object};

pub async fn stored_objects_read_back_byte_for_byte<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let objects: Vec<RawObject> = (0..10).map(object).collect();
    backend.put_many(&repo, &objects).await.expect("put");
    for expected in &objects {
        let found = backend.get(&repo, &expected.id).await.expect("get");
        assert_eq!(found.as_ref(), Some(expected));
        assert!(
            backend
                .contains(&repo, &expected.id)
                .await
                .expect("contains")
        );
    }
}

pub async fn a_missing_object_is_none_not_an_error<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let missing = object(404).id;
    assert_eq!(backend.get(&repo, &missing).await.expect("get"), None);
    assert!(!backend.contains(&repo, &missing).await.expect("contains"));
    backend.put_many(&repo, &[object(1)]).await.expect("put");
    assert_eq!(backend.get(&repo, &missing).await.expect("get"), None);
}

pub async fn puts_are_idempotent<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let one = object(1);
    backend
        .put_many(&repo, &[one.clone(), one.clone()])
        .await
        .expect("duplicate in one batch");
    backend
        .put_many(&repo, std::slice::from_ref(&one))
        .await
        .expect("second put");
    backend.put_many(&repo, &[]).await.expect("empty put");
    assert_eq!(backend.get(&repo, &one.id).await.expect("get"), Some(one));
}

pub async fn get_many_answers_in_request_order_with_gaps<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let stored: Vec<RawObject> = (0..5).map(object).collect();
    backend.put_many(&repo, &stored).await.expect("put");
    let ids = [stored[3].id, object(99).id, stored[0].id, stored[3].id];
    let found = backend.get_many(&repo, &ids).await.expect("get_many");
    assert_eq!(
        found,
        vec![
            Some(stored[3].clone()),
            None,
            Some(stored[0].clone()),
            Some(stored[3].clone())
        ]
    );
    assert!(
        backend
            .get_many(&repo, &[])
            .await
            .expect("empty get_many")
            .is_empty()
    );
}

pub async fn objects_are_scoped_per_repository<B: Backend>(backend: Arc<B>) {
    let (a, b) = (fresh_repo(), fresh_repo());
    let one = object(1);
    backend
        .put_many(&a, std::slice::from_ref(&one))
        .await
        .expect("put");
    assert_eq!(backend.get(&b, &one.id).await.expect("get"), None);
    assert!(!backend.contains(&b, &one.id).await.expect("contains"));
    let prefix = HashPrefix::parse(&one.id.short(8)).expect("prefix");
    assert!(
        backend
            .find_by_prefix(&b, &prefix, 10)
            .await
            .expect("find")
            .is_empty()
    );
}

pub async fn prefixes_find_matching_ids_in_order<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let objects: Vec<RawObject> = (0..300).map(object).collect();
    backend.put_many(&repo, &objects).await.expect("put");
    // With 300 ids, some 8-character prefix is unique; a 1-hex-character class is shared by
    // about 19 ids and exercises ordering and limits. Prefixes are at least 8 characters, so
    // share the first 7 characters of a real id and vary the eighth.
    let target = objects[7].id;
    let unique = HashPrefix::parse(&target.short(8)).expect("prefix");
    assert_eq!(
        backend
            .find_by_prefix(&repo, &unique, 10)
            .await
            .expect("find"),
        vec![target]
    );

    let mut ids: Vec<_> = objects.iter().map(|o| o.id).collect();
    ids.sort();
    let found = backend
        .find_by_prefix(
            &repo,
            &HashPrefix::parse(&ids[0].to_hex()).expect("full"),
            5,
        )
        .await;
    assert_eq!(found.expect("find"), vec![ids[0]]);

    let absent = HashPrefix::parse("00000000").expect("prefix");
    let expected: Vec<_> = ids
        .iter()
        .copied()
        .filter(|id| absent.matches(id))
        .collect();
    assert_eq!(
        backend
            .find_by_prefix(&repo, &absent, 10)
            .await
            .expect("find"),
        expected
    );

    let limited = backend
        .find_by_prefix(&repo, &unique, 0)
        .await
        .expect("find");
    assert!(limited.is_empty());
}

pub async fn large_objects_round_trip<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let data: Vec<u8> = (0..(4 << 20)).map(|i: u32| (i % 251) as u8).collect();
    let big = RawObject {
        id: pangolin_store::ObjectId::compute(ObjectKind::Tree, &data),
        kind: ObjectKind::Tree,
        data: data.into(),
    };
    backend
        .put_many(&repo, std::slice::from_ref(&big))
        .await
        .expect("put");
    assert_eq!(backend.get(&repo, &big.id).await.expect("get"), Some(big));
}
