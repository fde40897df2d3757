//! `pangolin maintenance`: snapshot expiry on a branch, the sweep of orphan files and the
//! collection of unreachable store objects (jobs the command follows until they end), and
//! the catalog's maintenance jobs.

use std::io::IsTerminal;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::client::Answer;
use crate::context::Context;
use crate::error::{CliError, Result};
use crate::log::{parse_span, parse_time};
use crate::output::{Cell, Table};
use crate::profile::GlobalArgs;

/// How often a followed job is asked how far it got.
const POLL: Duration = Duration::from_millis(500);

#[derive(Debug, clap::Args)]
pub(crate) struct MaintenanceArgs {
    #[command(subcommand)]
    command: MaintenanceCommand,
}

#[derive(Debug, clap::Subcommand)]
enum MaintenanceCommand {
    /// Expire old snapshots of every table on a branch, in one commit there.
    Expire(ExpireArgs),
    /// Delete the files no table or view in the catalog's history references.
    Orphans(OrphansArgs),
    /// Delete the catalog's commits and tree nodes that nothing retained reaches.
    Gc(GcArgs),
    /// List the catalog's maintenance jobs, or show one.
    Jobs(JobsArgs),
    /// Show or set how long the catalog keeps its history readable.
    Retention(RetentionArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin maintenance retention",
        "pangolin maintenance retention --history 30d --branch 'feature/*=7d'",
        "pangolin maintenance retention --clear",
    ],
    "Within its window a commit can be read (main#<time>, main#<hash>, main~3) and keeps its\n\
     tables' files from `maintenance orphans`; older commits are refused. Heads of branches\n\
     and tags are always kept, whatever their age. --branch gives the branches a pattern\n\
     matches (`*` matches anything) their own window; the first match wins.",
))]
pub(crate) struct RetentionArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// Keep commits this long (at least 1h): 90d, 12w.
    #[arg(long, value_name = "AGE", conflicts_with = "clear")]
    history: Option<String>,
    /// PATTERN=AGE: another window for the branches PATTERN matches (repeatable).
    #[arg(long = "branch", value_name = "PATTERN=AGE", requires = "history")]
    branches: Vec<String>,
    /// Remove the policy: keep the whole history.
    #[arg(long)]
    clear: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin maintenance orphans --dry-run",
        "pangolin maintenance orphans --grace 7d",
        "pangolin maintenance orphans --no-wait --json",
        "pangolin maintenance orphans --resume 1764770000000-0a1b2c3d",
    ],
    "Every commit that a branch, a tag or a ref log reaches keeps the files of its tables:\n\
     metadata files, manifest lists, manifests, data and delete files, statistics. Only the\n\
     folders the catalog named after its tables and views are listed, and only files last\n\
     modified longer ago than the grace period go. The sweep runs as a job on the server;\n\
     this command follows it and prints its progress (--no-wait: print the job and return;\n\
     see `pangolin maintenance jobs`). A sweep saves what it marked as it goes: --resume\n\
     continues one that failed or whose server stopped, reading again only what it had not\n\
     read. Needs the right to manage the catalog.",
))]
pub(crate) struct OrphansArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// Only files older than this may go: 3d when absent, at least 1h.
    #[arg(long, value_name = "AGE")]
    grace: Option<String>,
    /// Show what would go; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Name at most this many orphans one by one (all are counted).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Start the job and print it; do not follow it.
    #[arg(long)]
    no_wait: bool,
    /// Resume this sweep (one that failed or was abandoned) from what it marked.
    #[arg(long, value_name = "JOB")]
    resume: Option<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin maintenance gc --dry-run", "pangolin maintenance gc"],
    "Kept: the whole history of every branch and tag, what their ref logs record within the\n\
     retention window, and any other commit made within the window (its hash still reads it).\n\
     Without a retention policy every commit is kept and only objects no commit names go. What\n\
     goes is left by deleted branches, by refs reset past commits, and by writes that never\n\
     landed. Writers may keep running. Runs as a job on the server; this command follows it\n\
     (--no-wait: print the job and return). Needs the right to manage the catalog.",
))]
pub(crate) struct GcArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// Count what would go; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Start the job and print it; do not follow it.
    #[arg(long)]
    no_wait: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin maintenance jobs", "pangolin maintenance jobs 1764770000000-0a1b2c3d"],
    "A job's state is running, succeeded, failed, or abandoned when the server running it\n\
     stopped before it ended.",
))]
pub(crate) struct JobsArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// Show this job, with its progress or its result.
    job: Option<String>,
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
    match args.command {
        MaintenanceCommand::Expire(args) => expire(args).await,
        MaintenanceCommand::Orphans(args) => orphans(args).await,
        MaintenanceCommand::Gc(args) => gc(args).await,
        MaintenanceCommand::Jobs(args) => jobs(args).await,
        MaintenanceCommand::Retention(args) => retention(args).await,
    }
}

async fn expire(args: ExpireArgs) -> Result<()> {
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
    let mut table = Table::with_header(&["TABLE", "EXPIRED", "KEPT", "REFS REMOVED"]);
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
            Cell::new(
                t["expired-refs"]
                    .as_array()
                    .map(|refs| {
                        refs.iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default(),
            ),
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

/// An age as milliseconds.
fn age_ms(text: &str) -> Result<u64> {
    parse_span(text)
        .and_then(|span| u64::try_from(span.as_millis()).ok())
        .ok_or_else(|| CliError::usage(format!("`{text}` is not an age: use 90m, 12h, 3d or 1w")))
}

async fn retention(args: RetentionArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let request = if args.clear {
        ctx.client.request(Method::DELETE, &["retention"])
    } else if let Some(history) = &args.history {
        let mut branches = Vec::new();
        for branch in &args.branches {
            let (pattern, age) = branch.rsplit_once('=').ok_or_else(|| {
                CliError::usage(format!("`{branch}` is not PATTERN=AGE (feature/*=7d)"))
            })?;
            branches.push(json!({"pattern": pattern, "history-ms": age_ms(age)?}));
        }
        ctx.client
            .request(Method::PUT, &["retention"])
            .json(json!({"history-ms": age_ms(history)?, "branches": branches}))
    } else {
        ctx.client.request(Method::GET, &["retention"])
    };
    let answer = ctx.client.call(&request).await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let policy = &answer.body["retention"];
    if policy.is_null() {
        println!("The catalog keeps its whole history.");
        return Ok(());
    }
    let age = |ms: &Value| {
        let ms = ms.as_u64().unwrap_or(0);
        if ms.is_multiple_of(86_400_000) {
            format!("{}d", ms / 86_400_000)
        } else {
            format!("{}m", ms / 60_000)
        }
    };
    println!("Commits stay readable for {}.", age(&policy["history-ms"]));
    for branch in policy["branches"].as_array().into_iter().flatten() {
        println!(
            "Branches matching {}: {}.",
            branch["pattern"].as_str().unwrap_or("?"),
            age(&branch["history-ms"])
        );
    }
    Ok(())
}

async fn orphans(args: OrphansArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let grace_ms = args.grace.as_deref().map(age_ms).transpose()?;
    let request = ctx
        .client
        .request(Method::POST, &["maintenance", "remove-orphan-files"])
        .json(json!({
            "grace-period-ms": grace_ms,
            "dry-run": args.dry_run,
            "limit": args.limit,
            "resume": args.resume,
        }));
    follow(&ctx, &request, args.no_wait).await
}

async fn gc(args: GcArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let request = ctx
        .client
        .request(Method::POST, &["maintenance", "collect-objects"])
        .json(json!({ "dry-run": args.dry_run }));
    follow(&ctx, &request, args.no_wait).await
}

/// Starts the job `request` asks for and, unless `no_wait`, follows it to its end, showing
/// its progress on a terminal.
async fn follow(ctx: &Context, request: &crate::client::Request, no_wait: bool) -> Result<()> {
    let mut answer = ctx.client.call(request).await?;
    if no_wait {
        if ctx.json {
            return ctx.print_answer(&answer);
        }
        println!(
            "Started job {}: follow it with `pangolin maintenance jobs {}`.",
            job_id(&answer.body),
            job_id(&answer.body)
        );
        return Ok(());
    }
    let id = job_id(&answer.body).to_owned();
    let terminal = !ctx.json && std::io::stderr().is_terminal();
    let mut last = String::new();
    while answer.body["state"] == "running" {
        tokio::time::sleep(POLL).await;
        answer = ctx
            .client
            .call(
                &ctx.client
                    .request(Method::GET, &["maintenance", "jobs", &id]),
            )
            .await?;
        let line = progress_line(&answer.body["progress"]);
        if terminal && line != last {
            eprint!("\r{line}\x1b[K");
            last = line;
        }
    }
    if !last.is_empty() {
        eprintln!();
    }
    if ctx.json {
        ctx.print_answer(&answer)?;
    } else {
        print_job(ctx, &answer.body);
    }
    match answer.body["state"].as_str() {
        Some("succeeded") => Ok(()),
        _ => Err(CliError::server(format!(
            "job {id} {}: {}",
            answer.body["state"].as_str().unwrap_or("?"),
            answer.body["error"]
                .as_str()
                .unwrap_or("see the server's log")
        ))),
    }
}

async fn jobs(args: JobsArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    if let Some(id) = &args.job {
        let answer = ctx
            .client
            .call(
                &ctx.client
                    .request(Method::GET, &["maintenance", "jobs", id]),
            )
            .await?;
        if ctx.json {
            return ctx.print_answer(&answer);
        }
        print_job(&ctx, &answer.body);
        return Ok(());
    }
    let request = ctx.client.request(Method::GET, &["maintenance", "jobs"]);
    let answer: Answer = ctx.client.call(&request).await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let jobs = answer.body["jobs"].as_array().cloned().unwrap_or_default();
    if jobs.is_empty() {
        println!("No maintenance jobs.");
        return Ok(());
    }
    let mut table = Table::with_header(&["JOB", "KIND", "STATE", "STARTED", "BY", "DRY RUN"]);
    for job in &jobs {
        table.row(vec![
            Cell::new(job_id(job)),
            Cell::new(job["kind"].as_str().unwrap_or("?")),
            Cell::new(job["state"].as_str().unwrap_or("?")),
            Cell::new(job["started-at"].as_str().unwrap_or("?")),
            Cell::new(job["principal"].as_str().unwrap_or("?")),
            Cell::new(if job["dry-run"] == true { "yes" } else { "no" }),
        ]);
    }
    print!("{}", table.render(ctx.style, 0));
    Ok(())
}

fn job_id(job: &Value) -> &str {
    job["id"].as_str().unwrap_or("?")
}

/// One line of a job's progress: its phase and what it counted so far.
fn progress_line(progress: &Value) -> String {
    let count = |name: &str| progress[name].as_u64().unwrap_or(0);
    if count("objects-listed") > 0 || count("unreachable-objects") > 0 {
        return format!(
            "{}: {} objects read; {} listed; {} unreachable; {} deleted",
            progress["phase"].as_str().unwrap_or("?"),
            count("objects-read"),
            count("objects-listed"),
            count("unreachable-objects"),
            count("deleted"),
        );
    }
    format!(
        "{}: {} objects, {} metadata files, {} manifests read; {} files referenced; {} listed; {} deleted",
        progress["phase"].as_str().unwrap_or("?"),
        count("objects-read"),
        count("metadata-files-read"),
        count("manifests-read"),
        count("referenced-files"),
        count("files-listed"),
        count("deleted"),
    )
}

fn print_job(ctx: &Context, job: &Value) {
    let state = job["state"].as_str().unwrap_or("?");
    println!(
        "Job {} ({}, {}{}) started {} by {}.",
        job_id(job),
        job["kind"].as_str().unwrap_or("?"),
        state,
        if job["dry-run"] == true {
            ", dry run"
        } else {
            ""
        },
        job["started-at"].as_str().unwrap_or("?"),
        job["principal"].as_str().unwrap_or("?"),
    );
    let result = &job["result"];
    if !result.is_object() {
        if let Some(error) = job["error"].as_str() {
            println!("Failed: {error}");
        } else {
            println!("{}", progress_line(&job["progress"]));
        }
        return;
    }
    let count = |name: &str| result[name].as_u64().unwrap_or(0);
    if job["kind"] == "collect-objects" {
        println!(
            "{} objects: {} reachable or retained ({} commits no ref reaches kept{}), {} \
             unreachable ({} commits); {} deleted.",
            count("objects"),
            count("reachable-objects"),
            count("retained-commits"),
            match result["history-cutoff"].as_str() {
                Some(cutoff) => format!(", made since {cutoff}"),
                None => ": no retention policy".to_owned(),
            },
            count("unreachable-objects"),
            count("unreachable-commits"),
            count("deleted"),
        );
        return;
    }
    let orphans = result["orphans"].as_array().cloned().unwrap_or_default();
    if !orphans.is_empty() {
        let mut table = Table::with_header(&["FILE", "BYTES", "MODIFIED"]);
        for file in &orphans {
            table.row(vec![
                Cell::new(file["location"].as_str().unwrap_or("?")),
                Cell::new(file["size"].to_string()),
                Cell::new(file["modified-at"].as_str().unwrap_or("?")),
            ]);
        }
        print!("{}", table.render(ctx.style, 0));
    }
    for skipped in result["skipped"].as_array().into_iter().flatten() {
        println!(
            "Skipped {}: {}",
            skipped["location"].as_str().unwrap_or("?"),
            skipped["reason"].as_str().unwrap_or("?")
        );
    }
    let listed_more = count("orphan-files") > orphans.len() as u64;
    println!(
        "Read {} objects, {} metadata files, {} manifest lists and {} manifests; {} files referenced.",
        count("objects-read"),
        count("metadata-files-read"),
        count("manifest-lists-read"),
        count("manifests-read"),
        count("referenced-files"),
    );
    if count("reads-resumed") > 0 {
        println!(
            "Resumed: {} Iceberg files the earlier run read were not read again.",
            count("reads-resumed")
        );
    }
    if count("other-catalogs") > 0 {
        println!(
            "Walked the histories of {} other catalogs sharing the warehouse.",
            count("other-catalogs")
        );
    }
    if count("forgotten-directories") > 0 {
        println!(
            "{} folders only commits past the retention window name (their tables were dropped \
             or their branches deleted): none of their files is referenced.",
            count("forgotten-directories")
        );
    }
    println!(
        "Listed {} files in {} folders: {} orphans ({} bytes){}, {} newer than {} kept; {} deleted.",
        count("files-listed"),
        count("directories-swept"),
        count("orphan-files"),
        count("orphan-bytes"),
        if listed_more { ", the first shown" } else { "" },
        count("too-recent"),
        result["cutoff"].as_str().unwrap_or("?"),
        count("deleted"),
    );
}
