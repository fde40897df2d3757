//! Key ranges for listing and diffing part of a tree.

use crate::key::ContentKey;

/// A contiguous range of keys: a lower bound and an upper limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub start: RangeStart,
    pub end: RangeEnd,
}

/// Where a [`KeyRange`] begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeStart {
    /// From the smallest key.
    Unbounded,
    /// This key and every greater one.
    From(ContentKey),
    /// Keys strictly greater than this one.
    After(ContentKey),
    /// Keys greater than every key that starts with this one: past the key and everything
    /// under it. Lets a walk step over a whole subtree with one descent.
    AfterPrefix(ContentKey),
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

impl RangeStart {
    /// Whether `key` lies before this start.
    fn excludes(&self, key: &ContentKey) -> bool {
        match self {
            Self::Unbounded => false,
            Self::From(start) => key < start,
            Self::After(start) => key <= start,
            Self::AfterPrefix(prefix) => key <= prefix || key.starts_with(prefix),
        }
    }

    /// Whether this start excludes every key that `AfterPrefix(prefix)` excludes.
    ///
    /// Both exclude a down-set of the key order, so one contains the other. `AfterPrefix(prefix)`
    /// excludes `prefix` and everything under it (and all smaller keys); a start covers that when
    /// it lies past the whole subtree, or when it is itself an `AfterPrefix` of an enclosing key.
    fn covers_prefix(&self, prefix: &ContentKey) -> bool {
        let past_subtree = |key: &ContentKey| key > prefix && !key.starts_with(prefix);
        match self {
            Self::Unbounded => false,
            Self::From(start) | Self::After(start) => past_subtree(start),
            Self::AfterPrefix(other) => prefix.starts_with(other) || past_subtree(other),
        }
    }
}

impl KeyRange {
    pub fn all() -> Self {
        Self {
            start: RangeStart::Unbounded,
            end: RangeEnd::Unbounded,
        }
    }

    /// `prefix` itself and every key under it.
    pub fn prefix(prefix: ContentKey) -> Self {
        Self {
            start: RangeStart::From(prefix.clone()),
            end: RangeEnd::Under(prefix),
        }
    }

    /// The same range, continuing strictly after `key`: the next page of a listing.
    pub fn after(&self, key: &ContentKey) -> Self {
        let start = if self.start.excludes(key) {
            self.start.clone()
        } else {
            RangeStart::After(key.clone())
        };
        Self {
            start,
            end: self.end.clone(),
        }
    }

    /// The same range, continuing after every key that starts with `prefix` (`prefix` itself
    /// and every key under it): what a walk uses to step over a whole subtree.
    pub fn after_prefix(&self, prefix: &ContentKey) -> Self {
        let start = if self.start.covers_prefix(prefix) {
            self.start.clone()
        } else {
            RangeStart::AfterPrefix(prefix.clone())
        };
        Self {
            start,
            end: self.end.clone(),
        }
    }

    /// Whether `key` lies before the start of the range.
    pub fn is_before(&self, key: &ContentKey) -> bool {
        self.start.excludes(key)
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
    use proptest::prelude::*;

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
            start: RangeStart::From(key(&["m"])),
            end: RangeEnd::Unbounded,
        };
        assert_eq!(
            range.after(&key(&["a"])).start,
            RangeStart::From(key(&["m"]))
        );
        assert_eq!(
            range.after(&key(&["n"])).start,
            RangeStart::After(key(&["n"]))
        );
        let skipped = range.after_prefix(&key(&["m", "x"]));
        assert_eq!(skipped.after(&key(&["m", "x", "y"])), skipped);
    }

    #[test]
    fn after_prefix_skips_the_key_and_everything_under_it_only() {
        let range = KeyRange::all().after_prefix(&key(&["a"]));
        for excluded in [
            &["0"][..],
            &["a"],
            &["a", "b"],
            &["a", "b", "c"],
            &["a", "表"],
        ] {
            assert!(range.is_before(&key(excluded)), "{excluded:?}");
        }
        // Siblings whose names merely start with the same characters come after the subtree.
        for included in [
            &["a-b"][..],
            &["a b"],
            &["ab"],
            &["ab", "c"],
            &["b"],
            &["é"],
        ] {
            assert!(range.contains(&key(included)), "{included:?}");
        }
    }

    #[test]
    fn after_prefix_keeps_a_start_that_is_already_further() {
        let past = KeyRange::all().after(&key(&["ab"]));
        assert_eq!(past.after_prefix(&key(&["a"])), past);

        let outer = KeyRange::all().after_prefix(&key(&["a"]));
        assert_eq!(outer.after_prefix(&key(&["a", "b"])), outer);
        let inner = KeyRange::all().after_prefix(&key(&["a", "b"]));
        assert_eq!(inner.after_prefix(&key(&["a"])), outer);
        // `a` sorts before `a.b` yet its subtree ends after it.
        let from_under = KeyRange {
            start: RangeStart::From(key(&["a", "b"])),
            end: RangeEnd::Unbounded,
        };
        assert_eq!(from_under.after_prefix(&key(&["a"])), outer);
    }

    #[test]
    fn after_prefix_keeps_the_end() {
        let range = KeyRange::prefix(key(&["a"])).after_prefix(&key(&["a", "b"]));
        assert!(range.contains(&key(&["a", "c"])));
        assert!(!range.contains(&key(&["a", "b", "z"])));
        assert!(range.is_past(&key(&["ab"])));
    }

    /// The naive definition of the key order: element by element, each element by its bytes.
    type ModelKey = Vec<String>;

    fn starts_with(key: &ModelKey, prefix: &ModelKey) -> bool {
        key.len() >= prefix.len() && key[..prefix.len()] == prefix[..]
    }

    #[derive(Debug, Clone)]
    enum Step {
        After(ModelKey),
        AfterPrefix(ModelKey),
    }

    impl Step {
        /// Whether the model keeps `k` after this step.
        fn keeps(&self, k: &ModelKey) -> bool {
            match self {
                Step::After(key) => k > key,
                Step::AfterPrefix(prefix) => k > prefix && !starts_with(k, prefix),
            }
        }
    }

    /// Elements chosen so that names are prefixes of each other, around the separator's place.
    const ELEMENTS: [&str; 7] = ["a", "a b", "a-b", "ab", "b", "é", "表"];

    /// Keys that often share leading elements, so that steps often nest.
    fn model_key() -> impl Strategy<Value = ModelKey> {
        let element = prop_oneof![
            3 => prop::sample::select(&ELEMENTS[..2]),
            2 => prop::sample::select(&ELEMENTS[..]),
        ];
        prop::collection::vec(element, 1..4)
            .prop_map(|e| e.into_iter().map(str::to_owned).collect())
    }

    fn universe() -> Vec<ModelKey> {
        let mut keys: Vec<ModelKey> = Vec::new();
        let mut level: Vec<ModelKey> = vec![Vec::new()];
        for _ in 0..3 {
            level = level
                .iter()
                .flat_map(|k| {
                    ELEMENTS.iter().map(move |e| {
                        let mut k = k.clone();
                        k.push((*e).to_owned());
                        k
                    })
                })
                .collect();
            keys.extend(level.iter().cloned());
        }
        keys
    }

    proptest! {
        /// Any chain of `after` and `after_prefix` from a whole or prefix range holds exactly
        /// the keys the naive model keeps, for every key of up to three elements.
        #[test]
        fn steps_agree_with_the_naive_order(
            prefix in prop::option::of(model_key()),
            steps in prop::collection::vec(
                prop_oneof![
                    model_key().prop_map(Step::After),
                    model_key().prop_map(Step::AfterPrefix),
                ],
                0..5,
            ),
        ) {
            let to_key = |k: &ModelKey| ContentKey::new(k).unwrap();
            let mut range = match &prefix {
                Some(p) => KeyRange::prefix(to_key(p)),
                None => KeyRange::all(),
            };
            for step in &steps {
                range = match step {
                    Step::After(k) => range.after(&to_key(k)),
                    Step::AfterPrefix(p) => range.after_prefix(&to_key(p)),
                };
            }
            for k in universe() {
                let in_prefix = prefix.as_ref().is_none_or(|p| starts_with(&k, p));
                let expected = in_prefix && steps.iter().all(|s| s.keeps(&k));
                prop_assert_eq!(range.contains(&to_key(&k)), expected, "{:?} in {:?}", k, range);
            }
        }
    }
}
