//! Partition and sort transforms, and which source types each applies to.

use std::fmt;

use super::types::PrimitiveType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Identity,
    Bucket(u32),
    Truncate(u32),
    Year,
    Month,
    Day,
    Hour,
    Void,
}

impl Transform {
    /// Parses a transform as the reference implementation does (case-insensitively), but
    /// refuses names the spec does not define: a table partitioned by a transform no engine
    /// knows could not be read or written by any of them.
    pub fn parse(text: &str) -> Result<Self, String> {
        let lower = text.trim().to_ascii_lowercase();
        if let Some((name, rest)) = lower.split_once('[') {
            let Some(width) = rest.strip_suffix(']') else {
                return Err(format!("`{text}` is not a transform of the spec"));
            };
            let width: i64 = width
                .parse()
                .map_err(|_| format!("`{text}`: the width must be a number"))?;
            let positive = u32::try_from(width).ok().filter(|w| *w > 0);
            return match (name, positive) {
                ("bucket", Some(n)) => Ok(Self::Bucket(n)),
                ("bucket", None) => Err(format!("`{text}`: the number of buckets must be above 0")),
                ("truncate", Some(w)) => Ok(Self::Truncate(w)),
                ("truncate", None) => Err(format!("`{text}`: the width must be above 0")),
                _ => Err(format!("`{text}` is not a transform of the spec")),
            };
        }
        match lower.as_str() {
            "identity" => Ok(Self::Identity),
            "year" => Ok(Self::Year),
            "month" => Ok(Self::Month),
            "day" => Ok(Self::Day),
            "hour" => Ok(Self::Hour),
            "void" => Ok(Self::Void),
            _ => Err(format!("`{text}` is not a transform of the spec")),
        }
    }

    /// Whether the transform applies to values of `source`, as the spec's table of transforms.
    pub fn can_transform(self, source: &PrimitiveType) -> bool {
        use PrimitiveType as P;
        match self {
            Self::Void => true,
            Self::Identity => !matches!(source, P::Variant | P::Geometry(_) | P::Geography(_)),
            Self::Bucket(_) => matches!(
                source,
                P::Int
                    | P::Long
                    | P::Date
                    | P::Time
                    | P::Timestamp
                    | P::Timestamptz
                    | P::TimestampNs
                    | P::TimestamptzNs
                    | P::String
                    | P::Binary
                    | P::Fixed(_)
                    | P::Decimal { .. }
                    | P::Uuid
            ),
            Self::Truncate(_) => matches!(
                source,
                P::Int | P::Long | P::String | P::Binary | P::Decimal { .. }
            ),
            Self::Year | Self::Month | Self::Day => matches!(
                source,
                P::Date | P::Timestamp | P::Timestamptz | P::TimestampNs | P::TimestamptzNs
            ),
            Self::Hour => matches!(
                source,
                P::Timestamp | P::Timestamptz | P::TimestampNs | P::TimestamptzNs
            ),
        }
    }
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Identity => f.write_str("identity"),
            Self::Bucket(n) => write!(f, "bucket[{n}]"),
            Self::Truncate(w) => write!(f, "truncate[{w}]"),
            Self::Year => f.write_str("year"),
            Self::Month => f.write_str("month"),
            Self::Day => f.write_str("day"),
            Self::Hour => f.write_str("hour"),
            Self::Void => f.write_str("void"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transforms_parse_and_check_their_sources() {
        assert_eq!(
            Transform::parse("BUCKET[16]").unwrap().to_string(),
            "bucket[16]"
        );
        for bad in [
            "bucket[0]",
            "truncate[-1]",
            "bucket",
            "foo",
            "bucket[x]",
            "zorder[2]",
        ] {
            assert!(Transform::parse(bad).is_err(), "{bad}");
        }
        assert!(!Transform::Year.can_transform(&PrimitiveType::String));
        assert!(Transform::Day.can_transform(&PrimitiveType::Date));
        assert!(!Transform::Hour.can_transform(&PrimitiveType::Date));
        assert!(!Transform::Truncate(4).can_transform(&PrimitiveType::Uuid));
        assert!(Transform::Bucket(4).can_transform(&PrimitiveType::Uuid));
    }
}
