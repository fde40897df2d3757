//! Checking a bundle file without a server: every object's id, the trailing hash, and what
//! the bundle points to without holding.

use std::io::Read;

use pangolin_store::ObjectId;

use super::format::{BundleError, BundleId, BundleReader, BundleRef, Closure, Header, Item};

/// Bytes read from the file at once.
const CHUNK: usize = 1 << 20;

/// A bundle that read back whole.
#[derive(Debug)]
pub struct Verified {
    pub id: BundleId,
    pub header: Header,
    pub objects: u64,
    pub bytes: u64,
    /// Objects pointed to and not held: for an incremental bundle, what its base supplies;
    /// for a full bundle, a sign that it was made wrong.
    pub missing: Vec<ObjectId>,
    /// Refs whose commit the bundle does not hold (same reading).
    pub outside: Vec<BundleRef>,
}

impl Verified {
    /// Whether everything the bundle points to is in it, as a full bundle's must be.
    pub fn self_contained(&self) -> bool {
        self.missing.is_empty() && self.outside.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error("reading the bundle: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads a whole bundle from `source`, checking it; `progress` is told the bytes read so far
/// after each piece.
pub fn verify(
    mut source: impl Read,
    mut progress: impl FnMut(u64),
) -> Result<Verified, VerifyError> {
    let mut reader = BundleReader::new();
    let mut closure = Closure::default();
    let (mut header, mut id) = (None, None);
    let mut objects = 0;
    let mut bytes = 0u64;
    let mut buffer = vec![0; CHUNK];
    loop {
        let n = source.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        reader.feed(&buffer[..n]);
        while let Some(item) = reader.next_item()? {
            match item {
                Item::Header(h) => header = Some(*h),
                Item::Object(raw, object) => {
                    closure.add(&raw, &object);
                    objects += 1;
                }
                Item::End(end) => id = Some(end),
            }
        }
        progress(bytes);
    }
    reader.finish()?;
    let (Some(header), Some(id)) = (header, id) else {
        return Err(BundleError::Truncated.into());
    };
    let outside = header
        .refs
        .iter()
        .filter(|r| !closure.holds_commit(&r.hash))
        .cloned()
        .collect();
    Ok(Verified {
        id,
        objects,
        bytes,
        missing: closure.missing(),
        outside,
        header,
    })
}
