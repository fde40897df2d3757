//! A table's place in a bucket: `s3://bucket/some/prefix`.

/// A location that cannot be a prefix of delegated access.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    #[error("`{0}` is not an s3:// location")]
    NotS3(String),
    #[error("`{0}` names no folder inside its bucket: access would be the whole bucket")]
    WholeBucket(String),
    #[error("`{0}` has an empty, `.` or `..` path segment")]
    Segments(String),
}

/// A folder of a bucket, with no leading or trailing slash. Access delegated for it covers
/// the keys strictly below it: `key/...`, never `key-other/...`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct S3Prefix {
    pub bucket: String,
    pub key: String,
}

impl S3Prefix {
    /// The prefix of `s3://bucket/a/b` (or `s3a://`); a trailing slash is dropped. Segments
    /// such as `..` are refused rather than interpreted: S3 takes them literally, but some
    /// S3-compatible servers and client libraries normalise them, and then a policy on
    /// `a/../b` would not mean what it says.
    pub fn parse(location: &str) -> Result<Self, LocationError> {
        let rest = location
            .strip_prefix("s3://")
            .or_else(|| location.strip_prefix("s3a://"))
            .ok_or_else(|| LocationError::NotS3(location.to_owned()))?;
        let (bucket, key) = rest
            .split_once('/')
            .ok_or_else(|| LocationError::WholeBucket(location.to_owned()))?;
        let key = key.trim_end_matches('/');
        if bucket.is_empty() {
            return Err(LocationError::NotS3(location.to_owned()));
        }
        if key.is_empty() {
            return Err(LocationError::WholeBucket(location.to_owned()));
        }
        if !valid_key(key) {
            return Err(LocationError::Segments(location.to_owned()));
        }
        Ok(Self {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// `s3://bucket/key`.
    pub fn url(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }

    /// Whether object `key` of `bucket` is strictly below this prefix.
    pub fn contains(&self, bucket: &str, key: &str) -> bool {
        bucket == self.bucket
            && key
                .strip_prefix(self.key.as_str())
                .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
            && valid_key(key)
    }

    /// Whether a listing with `prefix` in `bucket` shows only keys below this prefix: `key/`
    /// or deeper. A bare `key` is not enough, since it also lists `key-other/...`.
    pub fn covers_listing(&self, bucket: &str, prefix: &str) -> bool {
        bucket == self.bucket
            && prefix
                .strip_prefix(self.key.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
            && valid_key(prefix.trim_end_matches('/'))
    }
}

impl std::fmt::Display for S3Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

fn valid_key(key: &str) -> bool {
    key.split('/')
        .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_a_folder_of_a_bucket() {
        let prefix = S3Prefix::parse("s3://lake/wh/db/t-1/").unwrap();
        assert_eq!(prefix.bucket, "lake");
        assert_eq!(prefix.key, "wh/db/t-1");
        assert_eq!(prefix.url(), "s3://lake/wh/db/t-1");
        assert_eq!(S3Prefix::parse("s3a://lake/t").unwrap().key, "t");
        for bad in [
            "file:///lake/t",
            "s3://lake",
            "s3://lake/",
            "s3:///t",
            "s3://lake/a//b",
            "s3://lake/a/../b",
            "s3://lake/./b",
        ] {
            assert!(S3Prefix::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_keys_strictly_below_are_contained() {
        let prefix = S3Prefix::parse("s3://lake/wh/t").unwrap();
        assert!(prefix.contains("lake", "wh/t/data/1.parquet"));
        assert!(!prefix.contains("lake", "wh/t"));
        assert!(!prefix.contains("lake", "wh/t/"));
        assert!(!prefix.contains("lake", "wh/t2/data/1.parquet"));
        assert!(!prefix.contains("other", "wh/t/data/1.parquet"));
        assert!(!prefix.contains("lake", "wh/t/../u/x"));
        assert!(prefix.covers_listing("lake", "wh/t/"));
        assert!(prefix.covers_listing("lake", "wh/t/metadata/"));
        assert!(!prefix.covers_listing("lake", "wh/t"));
        assert!(!prefix.covers_listing("lake", "wh/t2"));
        assert!(!prefix.covers_listing("lake", "wh/"));
        assert!(!prefix.covers_listing("lake", ""));
    }
}
