//! `pangolin events`: a catalog's change events after a cursor, and with `--follow` as they
//! land (long polls), one line each, or one JSON object per line with `--json`.

use reqwest::Method;
use serde_json::Value;

use crate::context::Context;
use crate::error::Result;
use crate::key;
use crate::output::{Paint, Style, short};
use crate::profile::GlobalArgs;

/// How long one request of `--follow` waits for an event (the server allows up to 50 s).
const FOLLOW_WAIT: &str = "25s";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin events                                # every event kept, oldest first",
        "pangolin events --follow --after 42            # from cursor 42 on, as they land",
        "pangolin events --type update-table --prefix sales --ref main",
        "pangolin events --json --follow | jq .identifier",
    ],
    "Each line starts with the event's cursor: save the last one a consumer processed and\n\
     continue with --after CURSOR to miss nothing and see nothing twice. With --json, one\n\
     event per line (JSON Lines); on stderr the cursor to continue after, at the end.",
))]
pub(crate) struct EventsArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// Only events after this cursor [default: from the oldest kept].
    #[arg(long, value_name = "CURSOR")]
    after: Option<String>,
    /// Only events of this type (repeatable): create-table, update-table, drop-table,
    /// rename-table, the same for view and asset, create-namespace,
    /// update-namespace-properties, drop-namespace, create-branch, move-branch,
    /// delete-branch, the same for tag, merge.
    #[arg(long = "type", value_name = "TYPE")]
    types: Vec<String>,
    /// Only events about keys at or under this one (dotted: `sales` or `sales.orders`).
    #[arg(long, value_name = "NS.T")]
    prefix: Option<String>,
    /// Only events of this branch or tag.
    #[arg(long = "ref", value_name = "REF")]
    reference: Option<String>,
    /// Keep waiting for new events (until interrupted).
    #[arg(short, long)]
    follow: bool,
    /// Stop after this many events.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
    /// Events asked for per request (for tests of paging).
    #[arg(long, hide = true, default_value_t = 100,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    page_size: u16,
}

pub(crate) async fn run(args: EventsArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let prefix = args.prefix.as_deref().map(key::parse).transpose()?;
    let types = (!args.types.is_empty()).then(|| args.types.join(","));
    let base = ctx
        .client
        .request(Method::GET, &["events"])
        .query_opt("types", types)
        .query_opt("prefix", prefix.as_deref().map(key::query_value))
        .query_opt("ref", args.reference.as_deref())
        .query("pageSize", args.page_size.to_string());
    let mut after = args.after.clone();
    let mut printed = 0usize;
    loop {
        let request = base
            .clone()
            .query_opt("after", after.clone())
            .query_opt("wait", args.follow.then_some(FOLLOW_WAIT));
        let answer = ctx.client.call(&request).await?;
        let events = answer
            .body
            .get("events")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for event in &events {
            if args.max_count.is_some_and(|max| printed >= max) {
                break;
            }
            if ctx.json {
                println!("{event}");
            } else {
                println!("{}", render(event, ctx.style));
            }
            printed += 1;
            after = event
                .get("cursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        let done = args.max_count.is_some_and(|max| printed >= max);
        if !done && let Some(next) = answer.body.get("next-cursor").and_then(Value::as_str) {
            after = Some(next.to_owned());
        }
        if done || (events.is_empty() && !args.follow) {
            break;
        }
    }
    if ctx.json {
        if let Some(after) = &after {
            eprintln!("next cursor: {after}");
        }
    } else if printed == 0 {
        println!("No events.");
    } else if let Some(after) = &after {
        println!(
            "{}",
            ctx.style
                .paint(Paint::Dim, &format!("next cursor: {after}"))
        );
    }
    Ok(())
}

fn text<'a>(event: &'a Value, name: &str) -> &'a str {
    event.get(name).and_then(Value::as_str).unwrap_or("")
}

/// `12.0  2026-05-01T12:00:00Z  main  update-table  sales.orders  3fa9c1e2abcd  ana  append 3 rows`
fn render(event: &Value, style: Style) -> String {
    let time = event
        .get("timestamp-ms")
        .and_then(Value::as_i64)
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map(|t| t.to_string())
        .unwrap_or_default();
    let what = match (event.get("identifier"), event.get("source")) {
        (Some(to), Some(from)) => format!("{} -> {}", key::display(from), key::display(to)),
        (Some(key), None) => key::display(key),
        (None, _) => match (event.get("from"), event.get("to")) {
            (Some(Value::String(from)), Some(Value::String(to))) => {
                format!("{} -> {}", short(from), short(to))
            }
            _ => String::new(),
        },
    };
    let mut line = format!(
        "{}  {}  {}  {}",
        style.paint(Paint::Dim, text(event, "cursor")),
        time,
        text(event, "ref"),
        style.paint(Paint::Yellow, text(event, "operation-type")),
    );
    if !what.is_empty() {
        line.push_str(&format!("  {what}"));
    }
    line.push_str(&format!(
        "  {}  {}",
        style.hash(text(event, "commit")),
        text(event, "principal")
    ));
    if let Some(summary) = event.pointer("/table/snapshot/summary") {
        let records = summary.get("added-records").and_then(Value::as_str);
        let operation = summary.get("operation").and_then(Value::as_str);
        if let Some(operation) = operation {
            line.push_str(&format!("  {operation}"));
            if let Some(records) = records {
                line.push_str(&format!(" +{records} rows"));
            }
        }
    }
    line
}
