//! Key ranges for listing and diffing part of a tree.

use std::ops::Bound;

use crate::key::ContentKey;

/// A contiguous range of keys: a lower bound and an upper limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Bound<ContentKey>,
    pub end: RangeEnd,
}

/// Where a [`KeyRange`] stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeEnd {
    Unbounded,
    /// Keys strictly before this one.
    Before(ContentKey),
    /// Keys equal to or under this one: the keys of a namespace subtree.
    Under(ContentKey),
}

impl KeyRange {
    pub fn all() -> Self {
        Self {
            start: Bound::Unbounded,
            end: RangeEnd::Unbounded,
        }
    }

    /// `prefix` itself and every key under it.
    pub fn prefix(prefix: ContentKey) -> Self {
        Self {
            start: Bound::Included(prefix.clone()),
            end: RangeEnd::Under(prefix),
        }
    }

    /// The same range, continuing strictly after `key`: the next page of a listing.
    pub fn after(&self, key: &ContentKey) -> Self {
        let start = match &self.start {
            Bound::Included(s) | Bound::Excluded(s) if s > key => self.start.clone(),
            _ => Bound::Excluded(key.clone()),
        };
        Self {
            start,
            end: self.end.clone(),
        }
    }

    /// Whether `key` lies before the start of the range.
    pub fn is_before(&self, key: &ContentKey) -> bool {
        match &self.start {
            Bound::Unbounded => false,
            Bound::Included(start) => key < start,
            Bound::Excluded(start) => key <= start,
        }
    }

    /// Whether `key` and every greater key lie past the end of the range.
    pub fn is_past(&self, key: &ContentKey) -> bool {
        match &self.end {
            RangeEnd::Unbounded => false,
            RangeEnd::Before(end) => key >= end,
            RangeEnd::Under(prefix) => key > prefix && !key.starts_with(prefix),
        }
    }

    pub fn contains(&self, key: &ContentKey) -> bool {
        !self.is_before(key) && !self.is_past(key)
    }
}

impl Default for KeyRange {
    fn default() -> Self {
        Self::all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(elements: &[&str]) -> ContentKey {
        ContentKey::new(elements.iter().copied()).unwrap()
    }

    #[test]
    fn prefix_range_holds_the_namespace_and_its_descendants_only() {
        let range = KeyRange::prefix(key(&["a"]));
        assert!(range.contains(&key(&["a"])));
        assert!(range.contains(&key(&["a", "b", "c"])));
        assert!(!range.contains(&key(&["ab"])));
        assert!(range.is_before(&key(&["0"])));
        assert!(range.is_past(&key(&["ab"])));
        assert!(!range.is_past(&key(&["a", "zzz"])));
    }

    #[test]
    fn after_never_moves_the_start_backwards() {
        let range = KeyRange {
            start: Bound::Included(key(&["m"])),
            end: RangeEnd::Unbounded,
        };
        assert_eq!(
            range.after(&key(&["a"])).start,
            Bound::Included(key(&["m"]))
        );
        assert_eq!(
            range.after(&key(&["n"])).start,
            Bound::Excluded(key(&["n"]))
        );
    }
}
