//! The rest of a table's settings: properties, location and encryption keys, and what every
//! build records whatever the updates were, the change time and the metadata log.
#![allow(clippy::unwrap_used)]

mod common;

use common::metadata::*;

#[test]
fn set_and_remove_properties() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "set-properties", "updates": {"owner": "bo", "write.format.default": "parquet"}}),
            json!({"action": "remove-properties", "removals": ["write.format.default", "never-set"]}),
        ],
    );
    assert_eq!(
        meta.properties,
        BTreeMap::from([("owner".to_owned(), "bo".to_owned())])
    );
}

#[test]
fn add_and_remove_encryption_keys() {
    let key = |id: &str, metadata: &str| {
        json!({"action": "add-encryption-key", "encryption-key": {
            "key-id": id, "encrypted-key-metadata": metadata, "encrypted-by-id": "kms-1",
            "properties": {"algo": "AES_GCM"}
        }})
    };
    let meta = apply(
        &table_with(3, None),
        &[key("k1", "AAAA"), key("k2", "BBBB"), key("k1", "CCCC")],
    );
    assert_eq!(meta.encryption_keys.len(), 2, "a key id is kept once");
    let k1 = meta
        .encryption_keys
        .iter()
        .find(|k| k.key_id == "k1")
        .unwrap();
    assert_eq!(k1.rest["encrypted-key-metadata"], "CCCC");
    let removed = apply(
        &meta,
        &[json!({"action": "remove-encryption-key", "key-id": "k1"})],
    );
    let left: Vec<_> = removed.encryption_keys.iter().map(|k| &k.key_id).collect();
    assert_eq!(left, vec!["k2"]);
}

#[test]
fn set_location_trims_the_trailing_slash_and_refuses_empty() {
    let meta = apply(
        &table(),
        &[json!({"action": "set-location", "location": "s3://other/place/"})],
    );
    assert_eq!(meta.location, "s3://other/place");
    let err = apply_err(
        &table(),
        &[json!({"action": "set-location", "location": "/"})],
    );
    assert_eq!(err, UpdateError::EmptyLocation);
}

#[test]
fn set_location_writes_hadoop_style_file_paths_with_an_empty_authority() {
    // Spark qualifies `LOCATION '/tmp/x'` as `file:/tmp/x`; metadata files go under
    // `file:///tmp/x`, the same place.
    for (given, stored) in [
        ("file:/tmp/wh/t/", "file:///tmp/wh/t"),
        ("file:///tmp/wh/t", "file:///tmp/wh/t"),
        ("file://host/wh/t", "file://host/wh/t"),
        ("/tmp/wh/t", "/tmp/wh/t"),
    ] {
        let meta = apply(
            &table(),
            &[json!({"action": "set-location", "location": given})],
        );
        assert_eq!(meta.location, stored, "{given}");
    }
}

#[test]
fn build_stamps_the_change_time_and_never_goes_back() {
    let mut builder = MetadataBuilder::new(table());
    builder
        .apply(
            &update(json!({"action": "set-properties", "updates": {"a": "b"}})),
            NOW - 10,
        )
        .unwrap();
    assert_eq!(builder.build(NOW - 10).unwrap().last_updated_ms, NOW);
    let builder = MetadataBuilder::new(table());
    assert_eq!(builder.build(NOW + 99).unwrap().last_updated_ms, NOW + 99);
}

#[test]
fn the_metadata_log_keeps_at_most_previous_versions_max_entries() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "set-properties", "updates": {"write.metadata.previous-versions-max": "2"}}),
        ],
    );
    let mut builder = MetadataBuilder::new(meta);
    for n in 0..4 {
        builder.log_previous(format!("{LOCATION}/metadata/0000{n}-x.metadata.json"), n);
    }
    let meta = builder.build(NOW).unwrap();
    let log: Vec<_> = meta.metadata_log.iter().map(|e| e.timestamp_ms).collect();
    assert_eq!(log, vec![2, 3], "the oldest entries go first");
}
