//! `pangolin diff`: what changed between two references.

use reqwest::Method;
use serde_json::Value;

use crate::changes::render_changes;
use crate::client::MAX_PAGE;
use crate::context::{Context, print_json};
use crate::error::Result;
use crate::json::join_pages;
use crate::key;
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin diff main dev",
        "pangolin diff v1 main --prefix sales",
        "pangolin diff 'main~5' main --json",
    ],
    "The changes that turn FROM into TO, key by key.",
))]
pub(crate) struct DiffArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The old side: a branch, tag, commit or any reference.
    #[arg(value_name = "FROM")]
    from: String,
    /// The new side.
    #[arg(value_name = "TO")]
    to: String,
    /// Only keys under this namespace (dotted: `sales.eu`).
    #[arg(long, value_name = "NS")]
    prefix: Option<String>,
}

pub(crate) async fn run(args: DiffArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let prefix = args.prefix.as_deref().map(key::parse).transpose()?;
    let request = ctx
        .client
        .request(Method::GET, &["diff"])
        .query("from", &args.from)
        .query("to", &args.to)
        .query_opt("prefix", prefix.as_deref().map(key::query_value));
    let answers = ctx
        .client
        .pages(&request, "changes", None, MAX_PAGE, |_| Ok(()))
        .await?;
    if ctx.json {
        let pages = answers
            .iter()
            .map(|a| a.ordered())
            .collect::<Result<Vec<_>>>()?;
        print_json(&join_pages(pages, "changes", None));
        return Ok(());
    }
    let changes: Vec<Value> = answers
        .iter()
        .filter_map(|a| a.body.get("changes").and_then(Value::as_array))
        .flatten()
        .cloned()
        .collect();
    let hash = |name: &str| {
        answers
            .first()
            .and_then(|a| a.body.get(name))
            .and_then(Value::as_str)
            .map_or_else(String::new, |h| format!(" ({})", ctx.style.hash(h)))
    };
    let (from, to) = (hash("from"), hash("to"));
    if changes.is_empty() {
        println!(
            "No differences between {}{from} and {}{to}.",
            args.from, args.to
        );
        return Ok(());
    }
    let n = changes.len();
    println!(
        "{n} change{} from {}{from} to {}{to}:",
        if n == 1 { "" } else { "s" },
        args.from,
        args.to
    );
    print!("{}", render_changes(&changes, ctx.style));
    Ok(())
}
