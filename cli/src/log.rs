//! `pangolin log`: the history of a reference, newest first, paged through the API.

use jiff::{SignedDuration, Timestamp};
use reqwest::Method;
use serde_json::Value;

use crate::context::{Context, print_json};
use crate::error::{CliError, Result};
use crate::json::join_pages;
use crate::key;
use crate::output::{Paint, Style, relative, short, subject};
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin log                              # the default branch",
        "pangolin log dev -n 5 --oneline",
        "pangolin log --table sales.orders --since 2d",
        "pangolin log main --author ana --since 2026-05-01 --until '3 hours ago'",
    ],
    "Times are RFC 3339 (2026-05-01T12:00:00Z), dates (2026-05-01, midnight UTC) or ages\n\
     (30m, 2h, 3d, 1w, `2 days ago`). With --json, the pages read are joined into one\n\
     {\"commits\": [...]} answer.",
))]
pub(crate) struct LogArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The branch, tag or commit whose history to show [default: the default branch].
    #[arg(value_name = "REF")]
    reference: Option<String>,
    /// Only commits that changed this table or namespace (dotted: `sales.orders`).
    #[arg(long, value_name = "NS.T")]
    table: Option<String>,
    /// Only commits by this author.
    #[arg(long)]
    author: Option<String>,
    /// Only commits at or after this time.
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// Only commits at or before this time.
    #[arg(long, value_name = "TIME")]
    until: Option<String>,
    /// Show at most this many commits [default: all].
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
    /// One line per commit: short hash and the message's first line.
    #[arg(long)]
    oneline: bool,
    /// Commits asked for per request (for tests of paging).
    #[arg(long, hide = true, default_value_t = 100,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    page_size: u16,
}

pub(crate) async fn run(args: LogArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let key = args.table.as_deref().map(key::parse).transpose()?;
    let since = args
        .since
        .as_deref()
        .map(|t| parse_time(t, ctx.now))
        .transpose()?;
    let until = args
        .until
        .as_deref()
        .map(|t| parse_time(t, ctx.now))
        .transpose()?;
    let request = ctx
        .client
        .request(Method::GET, &["log"])
        .query_opt("ref", args.reference.as_deref())
        .query_opt("author", args.author.as_deref())
        .query_opt("since", since)
        .query_opt("until", until)
        .query_opt("key", key.as_deref().map(key::query_value));
    if args.max_count == Some(0) {
        if ctx.json {
            println!("{{\n  \"commits\": []\n}}");
        }
        return Ok(());
    }
    let mut printed = 0;
    let (style, now, json, oneline, limit) =
        (ctx.style, ctx.now, ctx.json, args.oneline, args.max_count);
    let answers = ctx
        .client
        .pages(
            &request,
            "commits",
            limit,
            args.page_size.into(),
            |answer| {
                if json {
                    return Ok(());
                }
                // People see each page as it comes.
                let commits = answer.body.get("commits").and_then(Value::as_array);
                for commit in commits.into_iter().flatten() {
                    if limit.is_some_and(|limit| printed >= limit) {
                        break;
                    }
                    if oneline {
                        println!("{}", render_oneline(commit, style));
                    } else {
                        if printed > 0 {
                            println!();
                        }
                        print!("{}", render_commit(commit, style, now));
                    }
                    printed += 1;
                }
                Ok(())
            },
        )
        .await?;
    if json {
        let pages = answers
            .iter()
            .map(|a| a.ordered())
            .collect::<Result<Vec<_>>>()?;
        print_json(&join_pages(pages, "commits", limit));
    } else if printed == 0 {
        println!("No commits.");
    }
    Ok(())
}

fn field<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).and_then(Value::as_str).unwrap_or("")
}

/// `3fa9c1e2abcd Add orders`
pub(crate) fn render_oneline(commit: &Value, style: Style) -> String {
    format!(
        "{} {}",
        style.hash(field(commit, "hash")),
        subject(field(commit, "message"))
    )
}

/// A commit as `git log` shows one: hash, parents of a merge, author, date, message.
pub(crate) fn render_commit(commit: &Value, style: Style, now: Timestamp) -> String {
    let mut out = format!(
        "{}\n",
        style.paint(Paint::Yellow, &format!("commit {}", field(commit, "hash")))
    );
    let parents: Vec<&str> = commit
        .get("parents")
        .and_then(Value::as_array)
        .map(|p| p.iter().filter_map(Value::as_str).map(short).collect())
        .unwrap_or_default();
    if parents.len() > 1 {
        out.push_str(&format!("Merge:  {}\n", parents.join(" ")));
    }
    let author = field(commit, "author");
    out.push_str(&format!("Author: {author}\n"));
    let committer = field(commit, "committer");
    if !committer.is_empty() && committer != author {
        out.push_str(&format!("Committer: {committer}\n"));
    }
    let time = field(commit, "time");
    out.push_str(&format!(
        "Date:   {time} {}\n\n",
        style.paint(Paint::Dim, &format!("({})", relative(time, now)))
    ));
    let message = field(commit, "message");
    if message.trim().is_empty() {
        out.push_str("    (no message)\n");
    }
    for line in message.lines() {
        out.push_str(&format!("    {line}\n"));
    }
    out
}

/// A time for `--since`/`--until` as RFC 3339: an RFC 3339 time, a date (midnight UTC), or
/// an age before `now` (`3d`, `2 hours ago`).
pub(crate) fn parse_time(text: &str, now: Timestamp) -> Result<String> {
    let trimmed = text.trim();
    if let Ok(time) = trimmed.parse::<Timestamp>() {
        return Ok(time.to_string());
    }
    if let Ok(date) = trimmed.parse::<jiff::civil::Date>() {
        return Ok(format!("{date}T00:00:00Z"));
    }
    let bad = || {
        CliError::usage(format!(
            "`{text}` is not a time: use RFC 3339 (2026-05-01T12:00:00Z), a date (2026-05-01) \
             or an age (30m, 2h, 3d, 1w, `2 days ago`)"
        ))
    };
    let age = trimmed.strip_suffix("ago").unwrap_or(trimmed).trim();
    let span = parse_span(age).ok_or_else(bad)?;
    let time = now.checked_sub(span).map_err(|_| bad())?;
    Ok(time.to_string())
}

/// A span of time as people write it: `30m`, `2h`, `3d`, `1w`, `2 days`.
pub(crate) fn parse_span(text: &str) -> Option<SignedDuration> {
    let text = text.trim();
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let number: i64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        _ => return None,
    };
    number.checked_mul(seconds).map(SignedDuration::from_secs)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn times_may_be_instants_dates_or_ages() {
        let now: Timestamp = "2026-05-10T12:00:00Z".parse().unwrap();
        let cases = [
            ("2026-05-01T12:00:00Z", "2026-05-01T12:00:00Z"),
            ("2026-05-01T14:00:00+02:00", "2026-05-01T12:00:00Z"),
            ("2026-05-01", "2026-05-01T00:00:00Z"),
            ("3d", "2026-05-07T12:00:00Z"),
            ("2 hours ago", "2026-05-10T10:00:00Z"),
            ("90m", "2026-05-10T10:30:00Z"),
            ("1w", "2026-05-03T12:00:00Z"),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_time(text, now).unwrap(), expected, "{text}");
        }
        for bad in ["yesterday", "3 fortnights", "", "d"] {
            assert!(parse_time(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn commits_read_like_git_log() {
        let now: Timestamp = "2026-05-01T12:03:00Z".parse().unwrap();
        let commit = json!({
            "hash": "0123456789abcdef0123456789abcdef",
            "parents": ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"],
            "author": "ana", "committer": "ana",
            "time": "2026-05-01T12:00:00Z", "message": "Merge dev\n\ndetails"
        });
        assert_eq!(
            render_commit(&commit, Style::plain(), now),
            "commit 0123456789abcdef0123456789abcdef\nMerge:  aaaaaaaaaaaa bbbbbbbbbbbb\n\
             Author: ana\nDate:   2026-05-01T12:00:00Z (3 minutes ago)\n\n    Merge dev\n    \n    details\n"
        );
        assert_eq!(
            render_oneline(&commit, Style::plain()),
            "0123456789ab Merge dev"
        );
    }
}
