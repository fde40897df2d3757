//! Conformance cases for the record store.

use std::sync::Arc;

use bytes::Bytes;
use pangolin_records::{ExpectedVersion, RecordError, RecordKey};

use crate::Backend;

/// Keys under a prefix no other test uses.
fn keys() -> impl Fn(&str) -> RecordKey {
    let prefix = crate::fresh_repo().to_string();
    move |name: &str| RecordKey::new(format!("{prefix}/{name}")).expect("valid key")
}

pub async fn creating_requires_the_record_to_be_absent<B: Backend>(backend: Arc<B>) {
    let key = keys()("tenant");
    let v = backend
        .put_record(&key, ExpectedVersion::Absent, Bytes::from_static(b"one"))
        .await
        .expect("create");
    assert_eq!(v, 1);
    let err = backend
        .put_record(&key, ExpectedVersion::Absent, Bytes::from_static(b"two"))
        .await
        .expect_err("exists");
    assert!(
        matches!(
            err,
            RecordError::VersionMismatch {
                actual: Some(1),
                ..
            }
        ),
        "{err}"
    );
    let record = backend
        .get_record(&key)
        .await
        .expect("get")
        .expect("present");
    assert_eq!(
        (record.version, record.value),
        (1, Bytes::from_static(b"one"))
    );
    assert_eq!(
        backend.get_record(&keys()("missing")).await.expect("get"),
        None
    );
}

pub async fn updates_compare_and_swap_the_version<B: Backend>(backend: Arc<B>) {
    let key = keys()("user");
    backend
        .put_record(&key, ExpectedVersion::Absent, Bytes::from_static(b"v1"))
        .await
        .expect("create");
    assert_eq!(
        backend
            .put_record(&key, ExpectedVersion::Is(1), Bytes::from_static(b"v2"))
            .await
            .expect("cas"),
        2
    );
    let err = backend
        .put_record(&key, ExpectedVersion::Is(1), Bytes::from_static(b"stale"))
        .await
        .expect_err("stale");
    assert!(matches!(
        err,
        RecordError::VersionMismatch {
            actual: Some(2),
            expected: ExpectedVersion::Is(1),
            ..
        }
    ));
    assert_eq!(
        backend
            .get_record(&key)
            .await
            .expect("get")
            .expect("present")
            .value,
        Bytes::from_static(b"v2")
    );
    let absent = keys()("absent");
    let err = backend
        .put_record(&absent, ExpectedVersion::Is(1), Bytes::new())
        .await
        .expect_err("absent");
    assert!(matches!(
        err,
        RecordError::VersionMismatch { actual: None, .. }
    ));
    assert_eq!(backend.get_record(&absent).await.expect("get"), None);
}

pub async fn deletes_need_the_current_version<B: Backend>(backend: Arc<B>) {
    let key = keys()("grant");
    backend
        .put_record(&key, ExpectedVersion::Absent, Bytes::from_static(b"x"))
        .await
        .expect("create");
    backend
        .put_record(&key, ExpectedVersion::Is(1), Bytes::from_static(b"y"))
        .await
        .expect("update");
    let err = backend
        .delete_record(&key, 1)
        .await
        .expect_err("stale delete");
    assert!(matches!(
        err,
        RecordError::VersionMismatch {
            actual: Some(2),
            ..
        }
    ));
    backend.delete_record(&key, 2).await.expect("delete");
    assert_eq!(backend.get_record(&key).await.expect("get"), None);
    let err = backend
        .delete_record(&key, 2)
        .await
        .expect_err("already gone");
    assert!(matches!(
        err,
        RecordError::VersionMismatch { actual: None, .. }
    ));
    // Created again, it starts over at version 1.
    assert_eq!(
        backend
            .put_record(&key, ExpectedVersion::Absent, Bytes::new())
            .await
            .expect("recreate"),
        1
    );
}

pub async fn listing_filters_by_prefix_and_pages<B: Backend>(backend: Arc<B>) {
    let key = keys();
    for name in [
        "users/a", "users/b", "users/c", "users/d", "users/e", "usersx/f", "roles/a",
    ] {
        backend
            .put_record(
                &key(name),
                ExpectedVersion::Absent,
                Bytes::from(name.to_owned()),
            )
            .await
            .expect("put");
    }
    let prefix = key("users/").as_str().to_owned();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = backend
            .list_records(&prefix, after.as_ref(), 2)
            .await
            .expect("list");
        assert!(page.records.len() <= 2);
        seen.extend(page.records.iter().map(|r| r.value.clone()));
        match page.next_after {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let expected: Vec<Bytes> = ["users/a", "users/b", "users/c", "users/d", "users/e"]
        .iter()
        .map(|s| Bytes::from(s.to_string()))
        .collect();
    assert_eq!(seen, expected);
    let none = backend
        .list_records(key("nothing/").as_str(), None, 10)
        .await
        .expect("list");
    assert!(none.records.is_empty() && none.next_after.is_none());
}

pub async fn racing_record_writers_lose_no_update<B: Backend>(backend: Arc<B>) {
    let key = keys()("counter");
    backend
        .put_record(&key, ExpectedVersion::Absent, Bytes::from_static(b"0"))
        .await
        .expect("create");
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (backend, key) = (backend.clone(), key.clone());
        tasks.spawn(async move {
            for _ in 0..10 {
                loop {
                    let current = backend
                        .get_record(&key)
                        .await
                        .expect("get")
                        .expect("present");
                    let n: u64 = std::str::from_utf8(&current.value)
                        .expect("utf8")
                        .parse()
                        .expect("number");
                    let next = Bytes::from((n + 1).to_string());
                    match backend
                        .put_record(&key, ExpectedVersion::Is(current.version), next)
                        .await
                    {
                        Ok(_) => break,
                        Err(RecordError::VersionMismatch { .. }) => continue,
                        Err(other) => panic!("unexpected error: {other}"),
                    }
                }
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.expect("writer");
    }
    let record = backend
        .get_record(&key)
        .await
        .expect("get")
        .expect("present");
    assert_eq!(record.value, Bytes::from_static(b"80"));
    assert_eq!(record.version, 81);
}

/// A lease has one holder at a time: of many servers racing for a free lease exactly one
/// gets it; its holder renews it; another gets it only once it ran out.
pub async fn a_lease_has_one_holder_at_a_time<B: Backend>(backend: Arc<B>) {
    use pangolin_records::Lease;
    use pangolin_store::Timestamp;
    use std::time::Duration;
    let name = crate::fresh_repo().to_string();
    let now = Timestamp::from_millis(1_000_000);
    let length = Duration::from_secs(60);
    let mut racers = Vec::new();
    for server in 0..8 {
        let backend = backend.clone();
        let lease = Lease::new(&name, format!("server-{server}")).expect("valid name");
        racers.push(tokio::spawn(async move {
            lease
                .try_take(backend.as_ref(), now, length)
                .await
                .expect("take")
        }));
    }
    let mut winners = 0;
    for racer in racers {
        winners += usize::from(racer.await.expect("racer"));
    }
    assert_eq!(winners, 1, "one holder at a time");
    let holder = {
        let mut found = None;
        for server in 0..8 {
            let lease = Lease::new(&name, format!("server-{server}")).expect("valid name");
            let later = Timestamp::from_millis(now.as_millis() + 1_000);
            if lease
                .try_take(backend.as_ref(), later, length)
                .await
                .expect("take")
            {
                found = Some(lease);
            }
        }
        found.expect("the holder renews its own lease")
    };
    let other = Lease::new(&name, "newcomer").expect("valid name");
    let before_end = Timestamp::from_millis(now.as_millis() + 60_000);
    assert!(
        !other
            .try_take(backend.as_ref(), before_end, length)
            .await
            .expect("take")
    );
    let after_end = Timestamp::from_millis(now.as_millis() + 61_001);
    assert!(
        other
            .try_take(backend.as_ref(), after_end, length)
            .await
            .expect("take")
    );
    assert!(
        !holder
            .try_take(backend.as_ref(), after_end, length)
            .await
            .expect("take")
    );
}
