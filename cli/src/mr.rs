//! `pangolin mr`: merge requests. A request proposes merging one branch into another; its
//! checks run on the very merge commit that would land, and a protected branch takes changes
//! only through requests whose checks passed.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use crate::client::MAX_PAGE;
use crate::context::{Context, print_pages};
use crate::error::{Exit, Result};
use crate::output::{Cell, Paint, Table, relative};
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin mr create dev -t 'Q3 restatement'    # dev into main",
        "pangolin mr list --state open",
        "pangolin mr check 3                           # run the checks on the merge",
        "pangolin mr show 3",
        "pangolin mr merge 3",
        "pangolin mr merge 3 --override 'approved by finance'",
    ],
    "A protected branch (see `protection` in the management API) refuses direct writes and \
     merges; a request lands on it once the branch's checks passed on the merge commit it \
     lands. When either branch moved since the checks ran, `merge` runs them again first. \
     Failed checks exit 1 and are printed; only administrators may --override them, and the \
     reason is audited.",
))]
pub(crate) struct MrArgs {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List merge requests, newest first (the default).
    List {
        /// Only requests in this state.
        #[arg(long, value_parser = ["open", "merged", "closed"])]
        state: Option<String>,
        /// At most this many.
        #[arg(short = 'n', long)]
        limit: Option<usize>,
    },
    /// Open a merge request from a branch.
    Create {
        /// The branch to merge.
        source: String,
        /// The branch to merge into [default: main].
        #[arg(long, value_name = "BRANCH")]
        into: Option<String>,
        /// One line saying what the change is.
        #[arg(short = 't', long)]
        title: String,
        #[arg(short = 'd', long)]
        description: Option<String>,
    },
    /// Show a merge request and its latest checks.
    Show { number: u64 },
    /// Run the target's checks on the merge of both branches' current heads.
    Check { number: u64 },
    /// Merge a request whose checks passed (running them again when a branch moved).
    Merge {
        number: u64,
        /// Merge past failed checks, for this reason (administrators only; audited).
        #[arg(long = "override", value_name = "REASON")]
        override_reason: Option<String>,
    },
    /// Close a request without merging it.
    Close { number: u64 },
}

pub(crate) async fn run(args: MrArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let action = args.action.unwrap_or(Action::List {
        state: None,
        limit: None,
    });
    match action {
        Action::List { state, limit } => list(&ctx, state.as_deref(), limit).await,
        Action::Create {
            source,
            into,
            title,
            description,
        } => {
            let mut body = json!({"source": source, "title": title});
            if let Some(into) = into {
                body["target"] = json!(into);
            }
            if let Some(description) = description {
                body["description"] = json!(description);
            }
            let answer = ctx
                .client
                .call(
                    &ctx.client
                        .request(Method::POST, &["merge-requests"])
                        .json(body),
                )
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            let request = &answer.body;
            println!(
                "Opened merge request {}: {} into {}.",
                number_of(request),
                text(request, "source"),
                text(request, "target")
            );
            println!(
                "Run its checks with `pangolin mr check {}`.",
                number_of(request)
            );
            Ok(())
        }
        Action::Show { number } => {
            let answer = ctx
                .client
                .call(&request_at(&ctx, number, None, Method::GET))
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            print_request(&ctx, &answer.body);
            Ok(())
        }
        Action::Check { number } => {
            let answer = ctx
                .client
                .call(&request_at(&ctx, number, Some("checks"), Method::POST))
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            print_checks(&ctx, &answer.body);
            Ok(())
        }
        Action::Merge {
            number,
            override_reason,
        } => merge(&ctx, number, override_reason).await,
        Action::Close { number } => {
            let answer = ctx
                .client
                .call(&request_at(&ctx, number, Some("close"), Method::POST))
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            println!("Closed merge request {number}.");
            Ok(())
        }
    }
}

fn request_at(
    ctx: &Context,
    number: u64,
    action: Option<&str>,
    method: Method,
) -> crate::client::Request {
    let number = number.to_string();
    let mut segments = vec!["merge-requests", number.as_str()];
    segments.extend(action);
    ctx.client.request(method, &segments)
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or("")
}

fn number_of(request: &Value) -> u64 {
    request.get("number").and_then(Value::as_u64).unwrap_or(0)
}

async fn merge(ctx: &Context, number: u64, override_reason: Option<String>) -> Result<()> {
    let mut request = request_at(ctx, number, Some("merge"), Method::POST);
    if let Some(reason) = override_reason {
        request = request.json(json!({"override-reason": reason}));
    }
    let answer = match ctx.client.call(&request).await {
        Ok(answer) => answer,
        Err(error) => {
            // Failed checks or conflicts: show the run the refusal is about under it.
            if matches!(error.exit, Exit::Conflict)
                && !ctx.json
                && let Ok(shown) = ctx
                    .client
                    .call(&request_at(ctx, number, None, Method::GET))
                    .await
            {
                print_checks(ctx, &shown.body);
            }
            return Err(error);
        }
    };
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let merged = answer.body.get("merged").cloned().unwrap_or(Value::Null);
    println!(
        "Merged request {number}: {} is now at {}.",
        text(&answer.body, "target"),
        ctx.style.hash(text(&merged, "commit"))
    );
    if let Some(reason) = merged.get("overridden").and_then(Value::as_str) {
        println!("Failed checks were overridden: {reason}");
    }
    Ok(())
}

async fn list(ctx: &Context, state: Option<&str>, limit: Option<usize>) -> Result<()> {
    let request = ctx
        .client
        .request(Method::GET, &["merge-requests"])
        .query_opt("state", state);
    let answers = ctx
        .client
        .pages(&request, "merge-requests", limit, MAX_PAGE, |_| Ok(()))
        .await?;
    if ctx.json {
        return print_pages(&answers, "merge-requests", limit);
    }
    let mut table = Table::with_header(&["#", "STATE", "BRANCHES", "CHECKS", "AUTHOR", "TITLE"]);
    let requests = answers
        .iter()
        .filter_map(|a| a.body.get("merge-requests").and_then(Value::as_array))
        .flatten()
        .take(limit.unwrap_or(usize::MAX));
    for request in requests {
        let verdict = request
            .get("checks")
            .map_or("-", |run| text(run, "verdict"));
        table.row(vec![
            Cell::number(number_of(request).to_string()),
            Cell::new(text(request, "state")),
            Cell::new(format!(
                "{} -> {}",
                text(request, "source"),
                text(request, "target")
            )),
            Cell::painted(verdict, verdict_paint(verdict)),
            Cell::new(text(request, "author")),
            Cell::new(text(request, "title")),
        ]);
    }
    if table.is_empty() {
        match state {
            Some(state) => println!("No {state} merge requests."),
            None => println!("No merge requests."),
        }
        return Ok(());
    }
    print!("{}", table.render(ctx.style, 0));
    Ok(())
}

fn verdict_paint(verdict: &str) -> Paint {
    match verdict {
        "passed" | "up-to-date" => Paint::Green,
        "failed" | "conflicted" => Paint::Red,
        _ => Paint::Yellow,
    }
}

fn print_request(ctx: &Context, request: &Value) {
    println!(
        "Merge request {}: {}",
        number_of(request),
        text(request, "title")
    );
    println!(
        "  {} into {}, {}, opened by {} {}",
        text(request, "source"),
        text(request, "target"),
        text(request, "state"),
        text(request, "author"),
        relative(text(request, "created-at"), ctx.now)
    );
    if let Some(description) = request.get("description").and_then(Value::as_str) {
        println!();
        for line in description.lines() {
            println!("  {line}");
        }
    }
    if let Some(merged) = request.get("merged") {
        println!(
            "  merged by {} {} as {}",
            text(merged, "by"),
            relative(text(merged, "at"), ctx.now),
            ctx.style.hash(text(merged, "commit"))
        );
        if let Some(reason) = merged.get("overridden").and_then(Value::as_str) {
            println!("  failed checks overridden: {reason}");
        }
    }
    if let Some(by) = request.get("closed-by").and_then(Value::as_str) {
        println!("  closed by {by}");
    }
    println!();
    print_checks(ctx, request);
}

/// The latest run of a request's checks, a line per check.
fn print_checks(ctx: &Context, request: &Value) {
    let Some(run) = request.get("checks") else {
        println!(
            "Checks have not run: `pangolin mr check {}`.",
            number_of(request)
        );
        return;
    };
    let verdict = text(run, "verdict");
    println!(
        "Checks {} on {} {} and {} {}, {}:",
        ctx.style.paint(verdict_paint(verdict), verdict),
        text(request, "target"),
        ctx.style.hash(text(run, "target-head")),
        text(request, "source"),
        ctx.style.hash(text(run, "source-head")),
        relative(text(run, "ran-at"), ctx.now)
    );
    match verdict {
        "up-to-date" => println!("  nothing to merge"),
        "conflicted" => {
            let keys: Vec<&str> = run
                .get("conflicts")
                .and_then(Value::as_array)
                .map(|keys| keys.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            println!("  conflicts: {}", keys.join(", "));
        }
        _ => {
            println!(
                "  merge commit {} changes {} keys",
                ctx.style.hash(text(run, "merge-commit")),
                run.get("changed-keys").and_then(Value::as_u64).unwrap_or(0)
            );
        }
    }
    let checks = run
        .get("checks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if checks.is_empty() && verdict == "passed" {
        println!("  (the target asks for no checks)");
    }
    for check in checks {
        let passed = check
            .get("passed")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mark = if passed {
            ctx.style.paint(Paint::Green, "pass")
        } else {
            ctx.style.paint(Paint::Red, "FAIL")
        };
        println!("  {mark}  {}", text(&check, "description"));
        for message in check
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            println!("        {message}");
        }
    }
}
