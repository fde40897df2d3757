//! Where a reader of the events feed is: a ref-log sequence number and the index of an event
//! among those its entry yields.

use std::fmt;
use std::str::FromStr;

/// A position in a catalog's events. Positions increase in the order changes became visible.
///
/// Written `S.I` for the `I`th event of ref-log entry `S`, or `S` for the end of entry `S`
/// (continuing after it reads only later entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cursor {
    pub sequence: u64,
    index: u32,
}

/// The index that stands for "after every event of the entry".
const END: u32 = u32::MAX;

impl Cursor {
    pub fn event(sequence: u64, index: u32) -> Self {
        Self {
            sequence,
            index: index.min(END - 1),
        }
    }

    /// After every event of entry `sequence`.
    pub fn end_of(sequence: u64) -> Self {
        Self {
            sequence,
            index: END,
        }
    }

    /// The event's index within its entry; `None` for the end of an entry.
    pub fn index(&self) -> Option<u32> {
        (self.index != END).then_some(self.index)
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index() {
            Some(index) => write!(f, "{}.{index}", self.sequence),
            None => write!(f, "{}", self.sequence),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an events cursor (expected `<sequence>` or `<sequence>.<index>`)")]
pub struct CursorError(String);

impl FromStr for Cursor {
    type Err = CursorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || CursorError(text.chars().take(64).collect());
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
        let (sequence, index) = match text.split_once('.') {
            Some((s, i)) if digits(s) && digits(i) => {
                let index: u32 = i.parse().map_err(|_| invalid())?;
                if index == END {
                    return Err(invalid());
                }
                (s, Some(index))
            }
            None if digits(text) => (text, None),
            _ => return Err(invalid()),
        };
        let sequence: u64 = sequence.parse().map_err(|_| invalid())?;
        Ok(match index {
            Some(index) => Self::event(sequence, index),
            None => Self::end_of(sequence),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_order_events_before_the_end_of_their_entry() {
        for cursor in [Cursor::event(7, 0), Cursor::event(7, 12), Cursor::end_of(7)] {
            assert_eq!(cursor.to_string().parse::<Cursor>(), Ok(cursor));
        }
        assert_eq!(Cursor::event(7, 3).to_string(), "7.3");
        assert_eq!(Cursor::end_of(7).to_string(), "7");
        assert!(Cursor::event(7, 3) < Cursor::event(7, 4));
        assert!(Cursor::event(7, 4) < Cursor::end_of(7));
        assert!(Cursor::end_of(7) < Cursor::event(8, 0));
    }

    #[test]
    fn malformed_cursors_are_refused() {
        for text in [
            "",
            ".",
            "7.",
            ".3",
            "7.3.1",
            "-1",
            "7.-1",
            "x",
            "7 ",
            "1e3",
            "4294967295.4294967295",
            "18446744073709551616",
            "7.99999999999",
        ] {
            assert!(text.parse::<Cursor>().is_err(), "{text:?}");
        }
    }
}
