//! `pangolin branch`: list, create, delete and move branches.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use crate::context::Context;
use crate::error::Result;
use crate::profile::GlobalArgs;
use crate::refs::{self, Kind};

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin branch                          # list branches",
        "pangolin branch list --prefix team/",
        "pangolin branch create dev               # from main",
        "pangolin branch create fix --from v1",
        "pangolin branch move dev --to 'main~2' --expect 3fa9c1e2abcd",
        "pangolin branch delete dev",
    ],
    "AHEAD and BEHIND count the first-parent commits of a branch that are not in the default\n\
     branch, and the reverse.",
))]
pub(crate) struct BranchArgs {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List branches with their head and how far ahead of and behind the default branch
    /// they are (the default).
    #[command(after_help = crate::help::after(&["pangolin branch list --prefix team/"], ""))]
    List {
        /// Only branches whose name starts with this.
        #[arg(long)]
        prefix: Option<String>,
    },
    /// Create a branch.
    #[command(after_help = crate::help::after(
        &["pangolin branch create dev", "pangolin branch create hotfix --from 'main#3fa9c1e2'"],
        "",
    ))]
    Create {
        /// The new branch's name.
        name: String,
        /// Where the branch starts: a branch, tag, commit or any reference [default: main].
        #[arg(long, value_name = "REF")]
        from: Option<String>,
    },
    /// Delete a branch (never the default branch).
    #[command(after_help = crate::help::after(&["pangolin branch delete dev --expect 3fa9c1e2abcd"], ""))]
    Delete {
        /// The branch to delete.
        name: String,
        /// Delete only if the branch still points to this commit (exit 1 otherwise)
        /// [default: where it points when looked up].
        #[arg(long, value_name = "HASH")]
        expect: Option<String>,
    },
    /// Point a branch at another commit.
    #[command(after_help = crate::help::after(&["pangolin branch move dev --to main --expect 3fa9c1e2abcd"], ""))]
    Move {
        /// The branch to move.
        name: String,
        /// The reference or commit the branch will point to.
        #[arg(long, value_name = "REF")]
        to: String,
        /// Move only if the branch still points to this commit (exit 1 otherwise)
        /// [default: where it points when looked up].
        #[arg(long, value_name = "HASH")]
        expect: Option<String>,
    },
}

pub(crate) async fn run(args: BranchArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    match args.action.unwrap_or(Action::List { prefix: None }) {
        Action::List { prefix } => refs::list(&ctx, Kind::Branch, prefix.as_deref()).await,
        Action::Create { name, from } => {
            refs::create(&ctx, Kind::Branch, &name, from.as_deref()).await
        }
        Action::Delete { name, expect } => {
            refs::delete(&ctx, Kind::Branch, &name, expect.as_deref()).await
        }
        Action::Move { name, to, expect } => move_branch(&ctx, &name, &to, expect).await,
    }
}

async fn move_branch(ctx: &Context, name: &str, to: &str, expect: Option<String>) -> Result<()> {
    // Looked up even with --expect, to refuse moving a tag with a clear message.
    let seen = refs::lookup(ctx, Kind::Branch, name).await?;
    let expected = expect.unwrap_or(seen);
    let answer = ctx
        .client
        .call(
            &ctx.client
                .request(Method::PUT, &["refs", name])
                .json(json!({"to": to, "expected-hash": expected})),
        )
        .await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let field = |f: &str| answer.body.get(f).and_then(Value::as_str).unwrap_or("");
    println!(
        "Moved branch {name} from {} to {}.",
        ctx.style.hash(field("previous-hash")),
        ctx.style.hash(field("hash"))
    );
    Ok(())
}
