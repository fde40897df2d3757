//! Human output: colour (only on a terminal, never with `NO_COLOR`), aligned columns, short
//! hashes and relative times.

use std::io::IsTerminal;

use jiff::Timestamp;

/// How many hex digits of a hash people see.
pub(crate) const SHORT_HASH: usize = 12;

/// The first [`SHORT_HASH`] characters of a hash.
pub(crate) fn short(hash: &str) -> &str {
    hash.get(..SHORT_HASH).unwrap_or(hash)
}

/// Whether a stream gets colour: a terminal, and `NO_COLOR` unset or empty
/// (<https://no-color.org>).
pub(crate) fn colour_for(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// ANSI styles, or none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    colour: bool,
}

/// The styles used, as ANSI SGR parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paint {
    Bold,
    Dim,
    Red,
    Green,
    Yellow,
    Cyan,
}

impl Paint {
    fn code(self) -> &'static str {
        match self {
            Self::Bold => "1",
            Self::Dim => "2",
            Self::Red => "31",
            Self::Green => "32",
            Self::Yellow => "33",
            Self::Cyan => "36",
        }
    }
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset.
    pub(crate) fn for_stdout() -> Self {
        Self {
            colour: colour_for(std::io::stdout().is_terminal()),
        }
    }

    pub(crate) fn with_colour(colour: bool) -> Self {
        Self { colour }
    }

    #[cfg(test)]
    pub(crate) fn plain() -> Self {
        Self { colour: false }
    }

    pub(crate) fn paint(self, paint: Paint, text: &str) -> String {
        if self.colour && !text.is_empty() {
            format!("\x1b[{}m{text}\x1b[0m", paint.code())
        } else {
            text.to_owned()
        }
    }

    /// A short hash, in the colour hashes have.
    pub(crate) fn hash(self, hash: &str) -> String {
        self.paint(Paint::Yellow, short(hash))
    }
}

/// One cell: its text, an optional colour, and whether it aligns right (numbers).
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    text: String,
    paint: Option<Paint>,
    right: bool,
}

impl Cell {
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            paint: None,
            right: false,
        }
    }

    pub(crate) fn painted(text: impl Into<String>, paint: Paint) -> Self {
        Self {
            paint: Some(paint),
            ..Self::new(text)
        }
    }

    pub(crate) fn number(text: impl Into<String>) -> Self {
        Self {
            right: true,
            ..Self::new(text)
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

/// Columns aligned on the widest cell, two spaces apart; each row may carry indented notes.
#[derive(Debug, Default)]
pub(crate) struct Table {
    header: Option<Vec<String>>,
    rows: Vec<(Vec<Cell>, Vec<String>)>,
}

impl Table {
    pub(crate) fn with_header(header: &[&str]) -> Self {
        Self {
            header: Some(header.iter().map(|h| (*h).to_owned()).collect()),
            rows: Vec::new(),
        }
    }

    pub(crate) fn without_header() -> Self {
        Self::default()
    }

    pub(crate) fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push((cells, Vec::new()));
    }

    /// A row with lines printed under it, indented.
    pub(crate) fn row_with_notes(&mut self, cells: Vec<Cell>, notes: Vec<String>) {
        self.rows.push((cells, notes));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, one line per row (and note), each ending in a newline.
    pub(crate) fn render(&self, style: Style, indent: usize) -> String {
        let columns = self
            .rows
            .iter()
            .map(|(cells, _)| cells.len())
            .chain(self.header.iter().map(Vec::len))
            .max()
            .unwrap_or(0);
        let mut widths = vec![0; columns];
        let all_cells = self.rows.iter().map(|(cells, _)| {
            cells
                .iter()
                .map(|c| c.text.chars().count())
                .collect::<Vec<_>>()
        });
        let header_cells = self
            .header
            .iter()
            .map(|h| h.iter().map(|c| c.chars().count()).collect::<Vec<_>>());
        for lengths in all_cells.chain(header_cells) {
            for (width, length) in widths.iter_mut().zip(lengths) {
                *width = (*width).max(length);
            }
        }
        let pad = " ".repeat(indent);
        let mut out = String::new();
        if let Some(header) = &self.header {
            let cells: Vec<Cell> = header
                .iter()
                .map(|h| Cell::painted(h.clone(), Paint::Bold))
                .collect();
            out.push_str(&line(&pad, &cells, &widths, style));
        }
        for (cells, notes) in &self.rows {
            out.push_str(&line(&pad, cells, &widths, style));
            for note in notes {
                out.push_str(&format!("{pad}    {note}\n"));
            }
        }
        out
    }
}

fn line(pad: &str, cells: &[Cell], widths: &[usize], style: Style) -> String {
    let mut out = String::from(pad);
    for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
        let last = i + 1 == cells.len();
        let fill = width.saturating_sub(cell.text.chars().count());
        let text = match cell.paint {
            Some(paint) => style.paint(paint, &cell.text),
            None => cell.text.clone(),
        };
        if cell.right {
            out.push_str(&" ".repeat(fill));
            out.push_str(&text);
        } else {
            out.push_str(&text);
            if !last {
                out.push_str(&" ".repeat(fill));
            }
        }
        if !last {
            out.push_str("  ");
        }
    }
    // An empty last cell leaves padding behind.
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// `3 minutes ago`, `2 days ago`, `just now`; the text as given when it is not a time.
pub(crate) fn relative(time: &str, now: Timestamp) -> String {
    let Ok(then) = time.parse::<Timestamp>() else {
        return time.to_owned();
    };
    let seconds = now.as_second() - then.as_second();
    if seconds < -60 {
        return "in the future".to_owned();
    }
    let seconds = seconds.max(0);
    let unit = |n: i64, name: &str| {
        if n == 1 {
            format!("1 {name} ago")
        } else {
            format!("{n} {name}s ago")
        }
    };
    const MINUTE: i64 = 60;
    const HOUR: i64 = 60 * MINUTE;
    const DAY: i64 = 24 * HOUR;
    match seconds {
        0..=4 => "just now".to_owned(),
        s if s < MINUTE => unit(s, "second"),
        s if s < HOUR => unit(s / MINUTE, "minute"),
        s if s < DAY => unit(s / HOUR, "hour"),
        s if s < 30 * DAY => unit(s / DAY, "day"),
        s if s < 365 * DAY => unit(s / (30 * DAY), "month"),
        s => unit(s / (365 * DAY), "year"),
    }
}

/// The first line of a message, or a placeholder for none.
pub(crate) fn subject(message: &str) -> &str {
    match message.lines().next() {
        Some(line) if !line.trim().is_empty() => line,
        _ => "(no message)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_read_like_speech() {
        let now: Timestamp = "2026-05-01T12:00:00Z".parse().unwrap();
        let cases = [
            ("2026-05-01T12:00:00Z", "just now"),
            ("2026-05-01T11:59:30Z", "30 seconds ago"),
            ("2026-05-01T11:57:00Z", "3 minutes ago"),
            ("2026-05-01T11:00:00Z", "1 hour ago"),
            ("2026-04-29T12:00:00Z", "2 days ago"),
            ("2026-02-01T12:00:00Z", "2 months ago"),
            ("2024-04-01T12:00:00Z", "2 years ago"),
            ("2026-05-01T12:00:30Z", "just now"),
            ("2026-05-02T12:00:00Z", "in the future"),
            ("yesterday", "yesterday"),
        ];
        for (time, expected) in cases {
            assert_eq!(relative(time, now), expected, "{time}");
        }
    }

    #[test]
    fn tables_align_columns_without_trailing_spaces() {
        let mut table = Table::with_header(&["NAME", "AHEAD"]);
        table.row(vec!["main".into(), Cell::number("0")]);
        table.row_with_notes(
            vec!["feature".into(), Cell::number("12")],
            vec!["note".into()],
        );
        assert_eq!(
            table.render(Style::plain(), 0),
            "NAME     AHEAD\nmain         0\nfeature     12\n    note\n"
        );
    }

    #[test]
    fn short_hashes_have_twelve_digits() {
        assert_eq!(short("0123456789abcdef0123"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
        assert_eq!(subject("first\nsecond"), "first");
        assert_eq!(subject(""), "(no message)");
    }
}
