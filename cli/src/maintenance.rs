//! `pangolin maintenance expire`: snapshot expiry on a branch.

use reqwest::Method;
use serde_json::{Value, json};

use crate::context::Context;
use crate::error::Result;
use crate::log::parse_time;
use crate::output::{Cell, Table};
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
pub(crate) struct MaintenanceArgs {
    #[command(subcommand)]
    command: MaintenanceCommand,
}

#[derive(Debug, clap::Subcommand)]
enum MaintenanceCommand {
    /// Expire old snapshots of every table on a branch, in one commit there.
    Expire(ExpireArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin maintenance expire --dry-run",
        "pangolin maintenance expire --branch dev --older-than 7d --retain-last 5",
    ],
    "Each table keeps, per branch of its own, its newest snapshots by its\n\
     history.expire.max-snapshot-age-ms (5 days) and history.expire.min-snapshots-to-keep (1)\n\
     properties, which --older-than and --retain-last replace; tagged snapshots stay. The\n\
     removals land as one commit on the branch: other branches and earlier commits still read\n\
     every snapshot they had, and no file is deleted. Needs the right to manage the catalog.",
))]
pub(crate) struct ExpireArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The branch [default: main].
    #[arg(long)]
    branch: Option<String>,
    /// Expire snapshots older than this: RFC 3339, a date, or an age (30d, 1w).
    #[arg(long, value_name = "TIME")]
    older_than: Option<String>,
    /// Keep at least this many snapshots per table branch.
    #[arg(long, value_name = "N")]
    retain_last: Option<u32>,
    /// Show what would expire; change nothing.
    #[arg(long)]
    dry_run: bool,
}

pub(crate) async fn run(args: MaintenanceArgs) -> Result<()> {
    let MaintenanceCommand::Expire(args) = args.command;
    let ctx = Context::new(&args.global)?;
    let older_than = args
        .older_than
        .as_deref()
        .map(|t| parse_time(t, ctx.now))
        .transpose()?;
    let request = ctx
        .client
        .request(Method::POST, &["maintenance", "expire-snapshots"])
        .json(json!({
            "branch": args.branch,
            "older-than": older_than,
            "retain-last": args.retain_last,
            "dry-run": args.dry_run,
        }));
    let answer = ctx.client.call(&request).await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let body = &answer.body;
    let branch = body["branch"].as_str().unwrap_or("?");
    let tables = body["tables"].as_array().cloned().unwrap_or_default();
    let mut table = Table::with_header(&["TABLE", "EXPIRED", "KEPT"]);
    let mut expired = 0;
    for t in &tables {
        let key: Vec<&str> = t["key"]
            .as_array()
            .map(|k| k.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let count = t["expired"].as_array().map_or(0, Vec::len);
        expired += count;
        table.row(vec![
            Cell::new(key.join(".")),
            Cell::new(count.to_string()),
            Cell::new(t["kept"].to_string()),
        ]);
    }
    if !table.is_empty() {
        print!("{}", table.render(ctx.style, 0));
    }
    let read = body["tables-read"].as_u64().unwrap_or(0);
    match body["commit"].as_str() {
        Some(commit) => println!(
            "Expired {expired} snapshots of {} of {read} tables on {branch}: commit {}.",
            tables.len(),
            ctx.style.hash(commit)
        ),
        None if args.dry_run => println!(
            "Dry run: {expired} snapshots of {} of {read} tables on {branch} would expire.",
            tables.len()
        ),
        None => println!("Nothing to expire in the {read} tables on {branch}."),
    }
    Ok(())
}
