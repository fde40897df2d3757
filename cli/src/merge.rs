//! `pangolin merge`, `pangolin cherry-pick` and `pangolin revert`: changes that land on a
//! branch by compare-and-swap, with conflicts as data.

use reqwest::{Method, StatusCode};
use serde_json::{Map, Value, json};

use crate::changes::{render_changes, render_conflicts};
use crate::client::status_error;
use crate::context::Context;
use crate::error::{CliError, Result};
use crate::key;
use crate::profile::GlobalArgs;

const SIDES: &str = "\
`ours` is the target branch, `theirs` is what is merged, picked or reverted. With conflicts
nothing changes: every conflicting key is printed (its kind, and the entry at the base, ours
and theirs) and the command exits 1. Settle them with --resolve KEY=ours|theirs (once per
key) or --strategy prefer-ours|prefer-theirs, and run it again.";

/// How conflicts no `--resolve` names are settled.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Strategy {
    /// Conflicts fail the whole operation.
    Fail,
    /// Take the target branch's side.
    PreferOurs,
    /// Take the incoming side.
    PreferTheirs,
}

impl Strategy {
    fn name(self) -> &'static str {
        match self {
            Self::Fail => "fail",
            Self::PreferOurs => "prefer-ours",
            Self::PreferTheirs => "prefer-theirs",
        }
    }
}

/// The options merge, cherry-pick and revert share.
#[derive(Debug, clap::Args)]
struct Common {
    /// Work out the result and print it; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// How to settle conflicts that no --resolve names [default: fail].
    #[arg(long, value_enum)]
    strategy: Option<Strategy>,
    /// Settle one conflicting key (dotted: `sales.orders`) by taking our or their side;
    /// repeat for several keys.
    #[arg(long = "resolve", value_name = "KEY=ours|theirs")]
    resolve: Vec<String>,
    /// The message of the commit made.
    #[arg(short = 'm', long)]
    message: Option<String>,
    /// Land only if the target branch still points to this commit (exit 1 otherwise).
    #[arg(long, value_name = "HASH")]
    expect: Option<String>,
}

impl Common {
    /// Adds the options that were given to a request body; absent ones are left to the
    /// server's defaults.
    fn add_to(&self, body: &mut Map<String, Value>) -> Result<()> {
        if self.dry_run {
            body.insert("dry-run".into(), json!(true));
        }
        if let Some(strategy) = self.strategy {
            body.insert("strategy".into(), json!(strategy.name()));
        }
        if !self.resolve.is_empty() {
            let resolutions = self
                .resolve
                .iter()
                .map(|r| parse_resolution(r))
                .collect::<Result<Vec<_>>>()?;
            body.insert("resolutions".into(), Value::Array(resolutions));
        }
        if let Some(message) = &self.message {
            body.insert("message".into(), json!(message));
        }
        if let Some(expect) = &self.expect {
            body.insert("expected-target-head".into(), json!(expect));
        }
        Ok(())
    }
}

/// `sales.orders=theirs` as `{"key": ["sales", "orders"], "take": "theirs"}`.
fn parse_resolution(text: &str) -> Result<Value> {
    let bad = || {
        CliError::usage(format!(
            "`{text}` is not a resolution: write KEY=ours or KEY=theirs, as in \
             `--resolve sales.orders=theirs`"
        ))
    };
    let (key, take) = text.rsplit_once('=').ok_or_else(bad)?;
    let take = match take.trim() {
        "ours" => "ours",
        "theirs" => "theirs",
        _ => return Err(bad()),
    };
    Ok(json!({"key": key::parse(key.trim())?, "take": take}))
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin merge dev                       # dev into main",
        "pangolin merge dev --into release --dry-run",
        "pangolin merge dev --resolve sales.orders=theirs -m 'Bring in the new orders'",
        "pangolin merge dev --strategy prefer-ours --expect 3fa9c1e2abcd",
    ],
    SIDES,
))]
pub(crate) struct MergeArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// What to merge: a branch, tag, commit or any reference.
    source: String,
    /// The branch to merge into [default: main].
    #[arg(long, value_name = "TARGET")]
    into: Option<String>,
    /// Make one commit with a single parent instead of a merge commit.
    #[arg(long)]
    squash: bool,
    /// Always make a merge commit, even when the target could fast-forward.
    #[arg(long, conflicts_with = "ff_only")]
    no_ff: bool,
    /// Only fast-forward; refuse (exit 1) when the histories diverged.
    #[arg(long)]
    ff_only: bool,
    /// `auto`: merge a table both sides changed when the changes commute (appends,
    /// properties, added fields); `off`: it is a conflict [default: the catalog's].
    #[arg(long, value_parser = ["auto", "off"])]
    table_merge: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin cherry-pick 3fa9c1e2abcd                    # onto main",
        "pangolin cherry-pick 3fa9c1e2abcd 9b1c22d0e4f5 --onto release --squash",
        "pangolin cherry-pick 'dev~1' --dry-run",
    ],
    SIDES,
))]
pub(crate) struct CherryPickArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The commits to replay, oldest first (hashes or any reference).
    #[arg(value_name = "COMMIT", required = true)]
    commits: Vec<String>,
    /// The branch to replay them on [default: main].
    #[arg(long, value_name = "BRANCH")]
    onto: Option<String>,
    /// Make one commit for all of them instead of one per commit.
    #[arg(long)]
    squash: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin revert 3fa9c1e2abcd                         # on main",
        "pangolin revert 3fa9c1e2abcd --on dev --dry-run",
        "pangolin revert 'main~1' -m 'Undo the bad load'",
    ],
    SIDES,
))]
pub(crate) struct RevertArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The commit to undo (a hash or any reference).
    commit: String,
    /// The branch to undo it on [default: main].
    #[arg(long, value_name = "BRANCH")]
    on: Option<String>,
    #[command(flatten)]
    common: Common,
}

/// What is being done, for the text people read.
pub(crate) enum Operation<'a> {
    Merge { source: &'a str },
    CherryPick { count: usize },
    Revert { commit: &'a str },
}

pub(crate) async fn merge(args: MergeArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let mut body = Map::new();
    body.insert("source".into(), json!(args.source));
    if let Some(into) = &args.into {
        body.insert("target".into(), json!(into));
    }
    if args.no_ff {
        body.insert("fast-forward".into(), json!("never"));
    } else if args.ff_only {
        body.insert("fast-forward".into(), json!("only"));
    }
    if args.squash {
        body.insert("squash".into(), json!(true));
    }
    if let Some(mode) = &args.table_merge {
        body.insert("table-merge".into(), json!(mode));
    }
    args.common.add_to(&mut body)?;
    let target = args.into.as_deref().unwrap_or("main");
    let operation = Operation::Merge {
        source: &args.source,
    };
    submit(&ctx, "merge", body, &operation, target).await
}

pub(crate) async fn cherry_pick(args: CherryPickArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let mut body = Map::new();
    body.insert("commits".into(), json!(args.commits));
    if let Some(onto) = &args.onto {
        body.insert("onto".into(), json!(onto));
    }
    if args.squash {
        body.insert("squash".into(), json!(true));
    }
    args.common.add_to(&mut body)?;
    let target = args.onto.as_deref().unwrap_or("main");
    let operation = Operation::CherryPick {
        count: args.commits.len(),
    };
    submit(&ctx, "cherry-pick", body, &operation, target).await
}

pub(crate) async fn revert(args: RevertArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let mut body = Map::new();
    body.insert("commit".into(), json!(args.commit));
    if let Some(on) = &args.on {
        body.insert("on".into(), json!(on));
    }
    args.common.add_to(&mut body)?;
    let target = args.on.as_deref().unwrap_or("main");
    let operation = Operation::Revert {
        commit: &args.commit,
    };
    submit(&ctx, "revert", body, &operation, target).await
}

pub(crate) async fn submit(
    ctx: &Context,
    route: &str,
    body: Map<String, Value>,
    operation: &Operation<'_>,
    target: &str,
) -> Result<()> {
    let request = ctx
        .client
        .request(Method::POST, &[route])
        .json(Value::Object(body));
    let answer = ctx.client.send(&request).await?;
    let conflicts = answer
        .body
        .get("conflicts")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty());
    if answer.status == StatusCode::CONFLICT
        && let Some(conflicts) = conflicts
    {
        if ctx.json {
            ctx.print_answer(&answer)?;
        } else {
            let n = conflicts.len();
            println!(
                "{} {target}: {n} conflict{}; nothing was changed.",
                match operation {
                    Operation::Merge { source } => format!("Merging {source} into"),
                    Operation::CherryPick { .. } => "Cherry-picking onto".to_owned(),
                    Operation::Revert { commit } => format!("Reverting {commit} on"),
                },
                if n == 1 { "" } else { "s" }
            );
            print!("{}", render_conflicts(conflicts, ctx.style));
            println!(
                "Settle them with --resolve KEY=ours|theirs (ours: {target}) or \
                 --strategy prefer-ours|prefer-theirs."
            );
        }
        let message = answer.error_message().map_or_else(
            || format!("{} conflicting keys; nothing was changed", conflicts.len()),
            str::to_owned,
        );
        return Err(CliError::conflict(message));
    }
    if !answer.status.is_success() {
        return Err(status_error(&answer));
    }
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    print!("{}", render_outcome(ctx, &answer.body, operation, target));
    for table in answer
        .body
        .get("table-merges")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        println!(
            "Table {} changed on both sides, merged: {}",
            key::display(table.get("key").unwrap_or(&Value::Null)),
            table
                .get("plan")
                .and_then(Value::as_array)
                .map(|plan| plan
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("; "))
                .unwrap_or_default()
        );
    }
    Ok(())
}

fn render_outcome(ctx: &Context, body: &Value, operation: &Operation<'_>, target: &str) -> String {
    let field = |f: &str| body.get(f).and_then(Value::as_str).unwrap_or("");
    let style = ctx.style;
    let dry_run = body
        .get("dry-run")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let previous = style.hash(field("previous-head"));
    let head = style.hash(field("target-head"));
    let result = field("result");
    let mut out = match (result, dry_run) {
        ("up-to-date", _) => format!("Already up to date: {target} is at {previous}."),
        ("fast-forward", true) => {
            format!("Would fast-forward {target} from {previous} to {head}.")
        }
        ("fast-forward", false) => {
            format!("Fast-forwarded {target} from {previous} to {head}.")
        }
        (_, true) => match operation {
            Operation::Merge { source } => {
                format!("Would merge {source} into {target} (at {previous}).")
            }
            Operation::CherryPick { count } => format!(
                "Would cherry-pick {count} commit{} onto {target} (at {previous}).",
                if *count == 1 { "" } else { "s" }
            ),
            Operation::Revert { commit } => {
                format!("Would revert {commit} on {target} (at {previous}).")
            }
        },
        (_, false) => {
            let what = match operation {
                Operation::Merge { source } => format!("Merged {source} into {target}"),
                Operation::CherryPick { count } => format!(
                    "Cherry-picked {count} commit{} onto {target}",
                    if *count == 1 { "" } else { "s" }
                ),
                Operation::Revert { commit } => format!("Reverted {commit} on {target}"),
            };
            format!("{what}: {target} is now at {head} (was {previous}).")
        }
    };
    if dry_run {
        out.push_str(" Dry run: nothing was changed.");
    }
    out.push('\n');
    let list = |name: &str| {
        body.get(name)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let commits = list("commits");
    if commits.len() > 1 {
        let hashes: Vec<String> = commits
            .iter()
            .filter_map(Value::as_str)
            .map(|h| style.hash(h))
            .collect();
        out.push_str(&format!("New commits: {}\n", hashes.join(" ")));
    }
    let changes = list("changes");
    if !changes.is_empty() {
        out.push_str(&format!("Changes ({}):\n", changes.len()));
        out.push_str(&render_changes(changes, style));
    }
    let resolved = list("resolved");
    if !resolved.is_empty() {
        out.push_str(&format!("Resolved conflicts ({}):\n", resolved.len()));
        out.push_str(&render_conflicts(resolved, style));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolutions_name_a_dotted_key_and_a_side() {
        assert_eq!(
            parse_resolution("sales.orders=theirs").unwrap(),
            json!({"key": ["sales", "orders"], "take": "theirs"})
        );
        assert_eq!(
            parse_resolution("db=ours").unwrap(),
            json!({"key": ["db"], "take": "ours"})
        );
        for bad in ["db", "db=mine", "=ours", "a..b=ours"] {
            assert!(parse_resolution(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_given_options_are_sent() {
        let common = Common {
            dry_run: false,
            strategy: None,
            resolve: vec![],
            message: None,
            expect: None,
        };
        let mut body = Map::new();
        common.add_to(&mut body).unwrap();
        assert!(body.is_empty(), "{body:?}");
        let common = Common {
            dry_run: true,
            strategy: Some(Strategy::PreferTheirs),
            resolve: vec!["db=ours".into()],
            message: Some("m".into()),
            expect: Some("3fa9c1e2".into()),
        };
        common.add_to(&mut body).unwrap();
        assert_eq!(
            Value::Object(body),
            json!({"dry-run": true, "strategy": "prefer-theirs",
                   "resolutions": [{"key": ["db"], "take": "ours"}],
                   "message": "m", "expected-target-head": "3fa9c1e2"})
        );
    }
}
