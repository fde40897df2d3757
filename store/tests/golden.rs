//! Golden vectors: fixed objects encode to fixed bytes and ids. A failure here means the
//! canonical encoding changed, which needs a new format version, not a new vector.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_store::tree::{Child, Node};
use pangolin_store::{
    Commit, Content, ContentId, ContentKey, Entry, Object, ObjectId, ObjectKind, RawObject,
    Timestamp,
};
use uuid::Uuid;

fn key(elements: &[&str]) -> ContentKey {
    ContentKey::new(elements.iter().copied()).unwrap()
}

fn content_id(n: u128) -> ContentId {
    ContentId::from_uuid(Uuid::from_u128(n))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn leaf() -> Node {
    Node::leaf(vec![
        (
            key(&["sales"]),
            Entry {
                content_id: content_id(1),
                content: Content::Namespace {
                    properties: BTreeMap::from([("owner".into(), "ana".into())]),
                },
            },
        ),
        (
            key(&["sales", "orders"]),
            Entry {
                content_id: content_id(2),
                content: Content::IcebergTable {
                    metadata_location: "s3://w/orders/metadata/00001.metadata.json".into(),
                    snapshot_id: Some(7),
                    schema_id: 1,
                    spec_id: 0,
                    sort_order_id: 0,
                },
            },
        ),
        (
            key(&["sales", "v"]),
            Entry {
                content_id: content_id(3),
                content: Content::IcebergView {
                    metadata_location: "s3://w/v/metadata/00000.metadata.json".into(),
                    version_id: 1,
                },
            },
        ),
        (
            key(&["sales", "z"]),
            Entry {
                content_id: content_id(4),
                content: Content::Generic {
                    kind: "delta".into(),
                    location: "s3://w/z".into(),
                    properties: BTreeMap::new(),
                },
            },
        ),
    ])
}

fn inner() -> Node {
    Node::inner(
        1,
        vec![
            Child {
                last_key: key(&["a"]),
                id: ObjectId::from_bytes([1; 32]),
                count: 3,
            },
            Child {
                last_key: key(&["b", "c"]),
                id: ObjectId::from_bytes([2; 32]),
                count: 300,
            },
        ],
    )
}

fn commit() -> Commit {
    Commit {
        parents: vec![ObjectId::from_bytes([3; 32]), ObjectId::from_bytes([4; 32])],
        tree: ObjectId::from_bytes([5; 32]),
        generation: 42,
        depth: 41,
        time: Timestamp::from_millis(1_795_000_000_000),
        author: "ana".into(),
        committer: "pangolin".into(),
        message: "merge dev into main".into(),
        properties: BTreeMap::from([("operation".into(), "merge".into())]),
        skips: vec![ObjectId::from_bytes([6; 32])],
    }
}

const LEAF_BYTES: &str = "0004010573616c657310000000000000000000000000000000010001056f776e657203616e61020573616c6573066f72646572731000000000000000000000000000000002012a73333a2f2f772f6f72646572732f6d657461646174612f30303030312e6d657461646174612e6a736f6e010e020000020573616c657301761000000000000000000000000000000003022573333a2f2f772f762f6d657461646174612f30303030302e6d657461646174612e6a736f6e02020573616c6573017a1000000000000000000000000000000004030564656c74610873333a2f2f772f7a00";
const LEAF_ID: &str = "4f5737e4d27fc8be8ec3d2db04a1b770c5ec800c08c88dc224ffa0e19536e558";
const INNER_BYTES: &str = "01010201016101010101010101010101010101010101010101010101010101010101010101010302016201630202020202020202020202020202020202020202020202020202020202020202fb2c01";
const INNER_ID: &str = "2bbb246eb39d1237da643b723de0f49d11c56642705cc0fbfb8c32470787af7b";
const COMMIT_BYTES: &str = "020303030303030303030303030303030303030303030303030303030303030303040404040404040404040404040404040404040404040404040404040404040405050505050505050505050505050505050505050505050505050505050505052a29fd00bcacdc4303000003616e610870616e676f6c696e136d657267652064657620696e746f206d61696e01096f7065726174696f6e056d65726765010606060606060606060606060606060606060606060606060606060606060606";
const COMMIT_ID: &str = "4803c9bdbd80c8cfd33b4122ecd13a961d72b5c72b69781f88e44f79fc3783ae";

fn check(object: Object, bytes: &str, id: &str) {
    let raw = object.encode();
    assert_eq!(hex(&raw.data), bytes, "canonical bytes of a {}", raw.kind);
    assert_eq!(raw.id.to_hex(), id, "id of a {}", raw.kind);
    assert_eq!(Object::decode(&raw).unwrap(), object, "round trip");
}

#[test]
fn leaf_node_vector() {
    check(Object::Tree(Arc::new(leaf())), LEAF_BYTES, LEAF_ID);
}

#[test]
fn inner_node_vector() {
    check(Object::Tree(Arc::new(inner())), INNER_BYTES, INNER_ID);
}

#[test]
fn commit_vector() {
    check(Object::Commit(Arc::new(commit())), COMMIT_BYTES, COMMIT_ID);
}

#[test]
fn the_empty_tree_has_a_fixed_id() {
    assert_eq!(
        pangolin_store::tree::empty_id().to_hex(),
        "f8ce400bfa24db493ee93e660e14efc02e774a66e90bcd309c75410ba36623f5"
    );
}

#[test]
fn the_id_hashes_format_version_kind_and_length_before_the_body() {
    let raw = Object::Commit(Arc::new(commit())).encode();
    let mut hashed = vec![1u8, 1u8];
    hashed.extend_from_slice(&(raw.data.len() as u64).to_le_bytes());
    hashed.extend_from_slice(&raw.data);
    assert_eq!(raw.id.as_bytes(), blake3::hash(&hashed).as_bytes());
}

#[test]
fn altered_bytes_are_detected_on_read() {
    let mut raw = Object::Commit(Arc::new(commit())).encode();
    let mut data = raw.data.to_vec();
    data[10] ^= 1;
    raw.data = data.into();
    let err = Object::decode(&raw).unwrap_err();
    assert!(err.to_string().contains("altered"), "{err}");
}

#[test]
fn malformed_and_trailing_bytes_are_refused() {
    let reencoded = |data: Vec<u8>, kind| {
        let raw = RawObject {
            id: ObjectId::compute(kind, &data),
            kind,
            data: data.into(),
        };
        Object::decode(&raw)
    };
    let mut data = Object::Commit(Arc::new(commit())).encode().data.to_vec();
    data.push(0);
    let err = reencoded(data, ObjectKind::Commit).unwrap_err();
    assert!(err.to_string().contains("unexpected bytes"), "{err}");

    let err = reencoded(vec![0xff; 16], ObjectKind::Tree).unwrap_err();
    assert!(
        err.to_string().contains("could not be decoded as a tree"),
        "{err}"
    );

    // A commit's bytes under the tree kind do not decode as a tree.
    let data = Object::Commit(Arc::new(commit())).encode().data.to_vec();
    assert!(reencoded(data, ObjectKind::Tree).is_err());
}

#[test]
fn invalid_keys_inside_stored_nodes_are_refused() {
    // A leaf whose key has an empty element, encoded by hand: 1 entry, key of 1 element "".
    let node = Object::Tree(Arc::new(leaf())).encode();
    let mut data = node.data.to_vec();
    // Byte layout: variant 0, entry count 4, key element count 1, element length 5, "sales".
    assert_eq!(&data[..4], &[0, 4, 1, 5]);
    data[3] = 0;
    data.drain(4..9);
    let raw = RawObject {
        id: ObjectId::compute(ObjectKind::Tree, &data),
        kind: ObjectKind::Tree,
        data: data.into(),
    };
    assert!(Object::decode(&raw).is_err());
}
