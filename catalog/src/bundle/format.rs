//! The bundle file: a catalog's refs and the objects they reach, in one verifiable stream.
//!
//! ```text
//! "PANGOLIN-BUNDLE\n"          16 bytes
//! format version               u32, little endian (1)
//! header length, header        u32, then that many bytes of JSON (`Header`)
//! objects, each:               kind (u8: 1 commit, 2 tree), body length (u32), body
//! end:                         0 (u8), then the number of objects (u64)
//! bundle id                    32 bytes: blake3 of every byte before it
//! ```
//!
//! Object ids are not written: a reader computes each from the kind and the body, so a changed
//! body is a different object, which the refs and the other objects then miss. The trailing
//! hash covers the header and the framing too, so any changed byte is caught, and it names the
//! bundle: an incremental bundle names the one it continues.
//!
//! Both sides work in pieces, so neither needs the whole bundle in memory: the writer returns
//! the bytes of each piece, the reader is fed bytes as they arrive.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use bytes::{Buf, Bytes, BytesMut};
use pangolin_refs::{RefKind, RefName, Reference};
use pangolin_store::codec::MAX_OBJECT_BYTES;
use pangolin_store::{Object, ObjectId, ObjectKind, RawObject};
use serde::{Deserialize, Serialize};

use crate::reach::references;

const MAGIC: &[u8; 16] = b"PANGOLIN-BUNDLE\n";
/// The only format version so far.
pub const FORMAT_VERSION: u32 = 1;
/// A header is a few refs; anything near this is not one.
const MAX_HEADER_BYTES: usize = 64 << 20;
const END: u8 = 0;

/// What a bundle holds, written before its objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Header {
    /// Where it was exported from (informational: a bundle may be imported anywhere).
    pub tenant: String,
    pub catalog: String,
    /// RFC 3339.
    pub exported_at: String,
    /// Every branch and tag of the catalog, as exported.
    pub refs: Vec<BundleRef>,
    /// Set for an incremental bundle: the bundle it continues, whose objects it leaves out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Base>,
}

impl Header {
    /// Refuses refs a catalog cannot hold: one name twice, as a branch and a tag alike.
    fn check(&self) -> Result<(), BundleError> {
        let lists = std::iter::once(("refs", &self.refs))
            .chain(self.base.as_ref().map(|b| ("base refs", &b.refs)));
        for (what, refs) in lists {
            let mut names = HashSet::new();
            for r in refs {
                if !names.insert(r.name.as_str()) {
                    return Err(BundleError::Header(format!(
                        "its {what} name `{}` twice",
                        r.name.as_str()
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The bundle an incremental bundle continues.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Base {
    pub bundle: BundleId,
    /// Its refs: an import applies the increment only to a catalog whose refs are these.
    pub refs: Vec<BundleRef>,
}

/// A branch or tag and the commit it points to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RefText", into = "RefText")]
pub struct BundleRef {
    pub kind: RefKind,
    pub name: RefName,
    pub hash: ObjectId,
}

/// A [`BundleRef`] as JSON writes it: `{"type": "branch", "name": "main", "hash": "<hex>"}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RefText {
    #[serde(rename = "type")]
    kind: String,
    name: String,
    hash: String,
}

impl TryFrom<RefText> for BundleRef {
    type Error = String;

    fn try_from(text: RefText) -> Result<Self, String> {
        Ok(Self {
            kind: RefKind::parse(&text.kind)
                .ok_or_else(|| format!("ref type `{}` is neither branch nor tag", text.kind))?,
            name: RefName::new(text.name).map_err(|e| e.to_string())?,
            hash: text
                .hash
                .parse()
                .map_err(|_| format!("`{}` is not a commit hash", text.hash))?,
        })
    }
}

impl From<BundleRef> for RefText {
    fn from(r: BundleRef) -> Self {
        Self {
            kind: r.kind.as_str().to_owned(),
            name: r.name.as_str().to_owned(),
            hash: r.hash.to_hex(),
        }
    }
}

impl BundleRef {
    pub fn new(reference: &Reference, hash: ObjectId) -> Self {
        Self {
            kind: reference.kind,
            name: reference.name.clone(),
            hash,
        }
    }

    pub fn reference(&self) -> Reference {
        Reference {
            kind: self.kind,
            name: self.name.clone(),
        }
    }
}

/// A bundle's name: the blake3 hash of its bytes before the hash itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BundleId([u8; 32]);

impl fmt::Display for BundleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl FromStr for BundleId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut bytes = [0; 32];
        hex::decode_to_slice(s, &mut bytes)
            .map_err(|_| format!("`{s}` is not a bundle id (64 hex characters)"))?;
        Ok(Self(bytes))
    }
}

impl Serialize for BundleId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for BundleId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Why bytes are not a bundle, or not a whole one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("not a Pangolin bundle (it does not start as one)")]
    NotABundle,
    #[error("bundle format version {0} is not supported (this server reads version 1)")]
    Version(u32),
    #[error("the bundle's header is not valid: {0}")]
    Header(String),
    #[error("object {index} of the bundle is not valid: {reason}")]
    Object { index: u64, reason: String },
    #[error("the bundle says it holds {said} objects but holds {held}")]
    Count { said: u64, held: u64 },
    #[error(
        "the bundle was altered or damaged: its bytes hash to {actual}, but it ends with {recorded}"
    )]
    Altered {
        recorded: BundleId,
        actual: BundleId,
    },
    #[error("the bundle ends too early (it was cut off)")]
    Truncated,
    #[error("bytes follow the end of the bundle")]
    TrailingBytes,
}

/// Writes a bundle piece by piece.
#[derive(Debug)]
pub struct BundleWriter {
    hasher: blake3::Hasher,
    objects: u64,
}

impl BundleWriter {
    /// Starts a bundle: the bytes of its beginning, up to the first object.
    pub fn start(header: &Header) -> (Self, Bytes) {
        let json = serde_json::to_vec(header).expect("a header always serializes");
        let mut out = BytesMut::with_capacity(MAGIC.len() + 8 + json.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&u32::try_from(json.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&json);
        let mut hasher = blake3::Hasher::new();
        hasher.update(&out);
        (Self { hasher, objects: 0 }, out.freeze())
    }

    /// The bytes of one object.
    pub fn object(&mut self, object: &RawObject) -> Bytes {
        let mut out = BytesMut::with_capacity(5 + object.data.len());
        out.extend_from_slice(&[object.kind.as_u8()]);
        // Stored objects are at most `MAX_OBJECT_BYTES`, far below 4 GiB.
        out.extend_from_slice(
            &u32::try_from(object.data.len())
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        out.extend_from_slice(&object.data);
        self.hasher.update(&out);
        self.objects += 1;
        out.freeze()
    }

    /// The bytes that end the bundle, and its id.
    pub fn finish(mut self) -> (BundleId, Bytes) {
        let mut out = BytesMut::with_capacity(9 + 32);
        out.extend_from_slice(&[END]);
        out.extend_from_slice(&self.objects.to_le_bytes());
        self.hasher.update(&out);
        let id = BundleId(*self.hasher.finalize().as_bytes());
        out.extend_from_slice(&id.0);
        (id, out.freeze())
    }
}

/// What a reader takes out of a bundle, in order: the header, the objects, the end.
#[derive(Debug)]
pub enum Item {
    Header(Box<Header>),
    /// An object whose id was computed from its bytes, and that decodes.
    Object(RawObject, Object),
    End(BundleId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Start,
    Objects,
    Ended,
}

/// Reads a bundle from bytes fed in pieces, checking everything it can as it goes.
#[derive(Debug)]
pub struct BundleReader {
    buffer: BytesMut,
    hasher: blake3::Hasher,
    stage: Stage,
    objects: u64,
}

impl Default for BundleReader {
    fn default() -> Self {
        Self::new()
    }
}

impl BundleReader {
    pub fn new() -> Self {
        Self {
            buffer: BytesMut::new(),
            hasher: blake3::Hasher::new(),
            stage: Stage::Start,
            objects: 0,
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole item in what was fed, `None` until more bytes arrive.
    pub fn next_item(&mut self) -> Result<Option<Item>, BundleError> {
        match self.stage {
            Stage::Start => self.header(),
            Stage::Objects => self.object(),
            Stage::Ended if self.buffer.is_empty() => Ok(None),
            Stage::Ended => Err(BundleError::TrailingBytes),
        }
    }

    /// Checks that the bundle ended and nothing followed; call once the input is exhausted.
    pub fn finish(&self) -> Result<(), BundleError> {
        match self.stage {
            Stage::Ended if self.buffer.is_empty() => Ok(()),
            Stage::Ended => Err(BundleError::TrailingBytes),
            _ => Err(BundleError::Truncated),
        }
    }

    /// Takes `n` bytes off the front, hashing them.
    fn take(&mut self, n: usize) -> Bytes {
        let bytes = self.buffer.split_to(n).freeze();
        self.hasher.update(&bytes);
        bytes
    }

    fn header(&mut self) -> Result<Option<Item>, BundleError> {
        let fixed = MAGIC.len() + 8;
        let seen = self.buffer.len().min(MAGIC.len());
        if self.buffer[..seen] != MAGIC[..seen] {
            return Err(BundleError::NotABundle);
        }
        if self.buffer.len() < fixed {
            return Ok(None);
        }
        let version = u32_at(&self.buffer, MAGIC.len());
        if version != FORMAT_VERSION {
            return Err(BundleError::Version(version));
        }
        let length = u32_at(&self.buffer, MAGIC.len() + 4) as usize;
        if length > MAX_HEADER_BYTES {
            return Err(BundleError::Header(format!(
                "it says it is {length} bytes long"
            )));
        }
        if self.buffer.len() < fixed + length {
            return Ok(None);
        }
        let mut bytes = self.take(fixed + length);
        bytes.advance(fixed);
        let header: Header =
            serde_json::from_slice(&bytes).map_err(|e| BundleError::Header(e.to_string()))?;
        header.check()?;
        self.stage = Stage::Objects;
        Ok(Some(Item::Header(Box::new(header))))
    }

    fn object(&mut self) -> Result<Option<Item>, BundleError> {
        let Some(&kind) = self.buffer.first() else {
            return Ok(None);
        };
        if kind == END {
            if self.buffer.len() < 9 + 32 {
                return Ok(None);
            }
            let end = self.take(9);
            let said = u64::from_le_bytes(end[1..9].try_into().expect("8 bytes"));
            if said != self.objects {
                return Err(BundleError::Count {
                    said,
                    held: self.objects,
                });
            }
            let actual = BundleId(*self.hasher.finalize().as_bytes());
            let mut recorded = [0; 32];
            recorded.copy_from_slice(&self.buffer.split_to(32));
            let recorded = BundleId(recorded);
            if recorded != actual {
                return Err(BundleError::Altered { recorded, actual });
            }
            self.stage = Stage::Ended;
            return Ok(Some(Item::End(actual)));
        }
        let index = self.objects;
        let invalid = |reason: String| BundleError::Object { index, reason };
        let kind = ObjectKind::from_u8(kind).ok_or_else(|| invalid(format!("kind {kind}")))?;
        if self.buffer.len() < 5 {
            return Ok(None);
        }
        let length = u32_at(&self.buffer, 1) as usize;
        if length > MAX_OBJECT_BYTES {
            return Err(invalid(format!("it says it is {length} bytes long")));
        }
        if self.buffer.len() < 5 + length {
            return Ok(None);
        }
        let mut data = self.take(5 + length);
        data.advance(5);
        let raw = RawObject {
            id: ObjectId::compute(kind, &data),
            kind,
            data,
        };
        let object = Object::decode(&raw).map_err(|e| invalid(e.to_string()))?;
        self.objects += 1;
        Ok(Some(Item::Object(raw, object)))
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// What a whole bundle held, and what it points to without holding.
#[derive(Debug, Default)]
pub struct Closure {
    held: HashSet<ObjectId>,
    commits: HashSet<ObjectId>,
    wanted: HashSet<ObjectId>,
}

impl Closure {
    pub fn add(&mut self, raw: &RawObject, object: &Object) {
        self.held.insert(raw.id);
        if raw.kind == ObjectKind::Commit {
            self.commits.insert(raw.id);
        }
        for id in references(object) {
            if !self.held.contains(&id) {
                self.wanted.insert(id);
            }
        }
    }

    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Whether `id` is a commit the bundle holds.
    pub fn holds_commit(&self, id: &ObjectId) -> bool {
        self.commits.contains(id)
    }

    /// Objects pointed to and not held (an incremental bundle's base must supply them), in
    /// id order.
    pub fn missing(&self) -> Vec<ObjectId> {
        let mut missing: Vec<ObjectId> = self
            .wanted
            .iter()
            .filter(|id| !self.held.contains(id))
            .copied()
            .collect();
        missing.sort();
        missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(n: u8) -> RawObject {
        let key = pangolin_store::ContentKey::new([format!("ns{n}")]).unwrap();
        let entry = pangolin_store::Entry {
            content_id: pangolin_store::ContentId::from_uuid(uuid::Uuid::from_u128(u128::from(n))),
            content: pangolin_store::Content::Namespace {
                properties: Default::default(),
            },
        };
        Object::Tree(std::sync::Arc::new(pangolin_store::tree::Node::leaf(vec![
            (key, entry),
        ])))
        .encode()
    }

    fn header() -> Header {
        Header {
            tenant: "acme".into(),
            catalog: "lake".into(),
            exported_at: "2026-12-03T00:00:00Z".into(),
            refs: vec![BundleRef {
                kind: RefKind::Branch,
                name: RefName::new("main").unwrap(),
                hash: tree(0).id,
            }],
            base: None,
        }
    }

    fn bundle(objects: &[RawObject]) -> (BundleId, Vec<u8>) {
        let (mut writer, start) = BundleWriter::start(&header());
        let mut out = start.to_vec();
        for object in objects {
            out.extend_from_slice(&writer.object(object));
        }
        let (id, end) = writer.finish();
        out.extend_from_slice(&end);
        (id, out)
    }

    /// Reads `bytes` fed `step` bytes at a time.
    fn read(bytes: &[u8], step: usize) -> Result<(Header, Vec<RawObject>, BundleId), BundleError> {
        let mut reader = BundleReader::new();
        let (mut header, mut objects, mut id) = (None, Vec::new(), None);
        for piece in bytes.chunks(step) {
            reader.feed(piece);
            while let Some(item) = reader.next_item()? {
                match item {
                    Item::Header(h) => header = Some(*h),
                    Item::Object(raw, _) => objects.push(raw),
                    Item::End(end) => id = Some(end),
                }
            }
        }
        reader.finish()?;
        Ok((header.unwrap(), objects, id.unwrap()))
    }

    #[test]
    fn a_bundle_reads_back_whole_however_it_is_cut_into_pieces() {
        let objects: Vec<RawObject> = (0..5).map(tree).collect();
        let (id, bytes) = bundle(&objects);
        for step in [1, 3, 7, 64, bytes.len()] {
            let (read_header, read_objects, read_id) = read(&bytes, step).unwrap();
            assert_eq!(read_header, header());
            assert_eq!(read_objects, objects, "step {step}");
            assert_eq!(read_id, id);
        }
    }

    #[test]
    fn every_flipped_byte_is_caught() {
        let (_, bytes) = bundle(&[tree(1), tree(2)]);
        for at in 0..bytes.len() {
            let mut altered = bytes.clone();
            altered[at] ^= 0x01;
            assert!(read(&altered, 16).is_err(), "a flipped byte at {at} passed");
        }
    }

    #[test]
    fn a_cut_or_extended_bundle_is_refused() {
        let (_, bytes) = bundle(&[tree(1)]);
        for len in [0, 10, 30, bytes.len() - 1] {
            let error = read(&bytes[..len], 16).err();
            assert!(
                matches!(error, Some(BundleError::Truncated)),
                "cut at {len}: {error:?}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(read(&longer, 16).err(), Some(BundleError::TrailingBytes));
    }

    #[test]
    fn other_files_and_versions_are_named_as_such() {
        assert_eq!(
            read(b"PAR1 not a bundle at all", 8).err(),
            Some(BundleError::NotABundle)
        );
        let (_, mut bytes) = bundle(&[]);
        bytes[16] = 9;
        assert_eq!(read(&bytes, 64).err(), Some(BundleError::Version(9)));
    }

    #[test]
    fn a_header_naming_a_ref_twice_is_refused() {
        let mut twice = header();
        let mut tag = twice.refs[0].clone();
        tag.kind = RefKind::Tag;
        twice.refs.push(tag);
        let (writer, start) = BundleWriter::start(&twice);
        let (_, end) = writer.finish();
        let bytes = [start.as_ref(), end.as_ref()].concat();
        let error = read(&bytes, 64).unwrap_err();
        assert_eq!(
            error,
            BundleError::Header("its refs name `main` twice".into())
        );
    }

    #[test]
    fn the_closure_names_what_is_pointed_to_but_not_held() {
        let leaf = tree(1);
        let child = pangolin_store::tree::Child {
            last_key: pangolin_store::ContentKey::new(["ns1"]).unwrap(),
            id: leaf.id,
            count: 1,
        };
        let inner = Object::Tree(std::sync::Arc::new(pangolin_store::tree::Node::inner(
            1,
            vec![child],
        )));
        let raw = inner.encode();
        let mut closure = Closure::default();
        closure.add(&raw, &inner);
        assert_eq!(closure.missing(), vec![leaf.id]);
        let decoded = Object::decode(&leaf).unwrap();
        closure.add(&leaf, &decoded);
        assert!(closure.missing().is_empty());
        assert_eq!(closure.held(), 2);
    }
}
