//! `pangolin tag`: list, create and delete tags.

use clap::Subcommand;

use crate::context::Context;
use crate::error::Result;
use crate::profile::GlobalArgs;
use crate::refs::{self, Kind};

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin tag                             # list tags",
        "pangolin tag create v1                   # at main's head",
        "pangolin tag create nightly-0501 --from 'main#2026-05-01T00:00:00Z'",
        "pangolin tag delete v1",
    ],
    "Tags never move; Iceberg clients read a table at one as `sales.orders@v1`.",
))]
pub(crate) struct TagArgs {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List tags (the default).
    #[command(after_help = crate::help::after(&["pangolin tag list --prefix release-"], ""))]
    List {
        /// Only tags whose name starts with this.
        #[arg(long)]
        prefix: Option<String>,
    },
    /// Create a tag.
    #[command(after_help = crate::help::after(&["pangolin tag create v1 --from dev"], ""))]
    Create {
        /// The new tag's name.
        name: String,
        /// The commit to tag: a branch, tag, commit or any reference [default: main].
        #[arg(long, value_name = "REF")]
        from: Option<String>,
    },
    /// Delete a tag.
    #[command(after_help = crate::help::after(&["pangolin tag delete v1"], ""))]
    Delete {
        /// The tag to delete.
        name: String,
    },
}

pub(crate) async fn run(args: TagArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    match args.action.unwrap_or(Action::List { prefix: None }) {
        Action::List { prefix } => refs::list(&ctx, Kind::Tag, prefix.as_deref()).await,
        Action::Create { name, from } => {
            refs::create(&ctx, Kind::Tag, &name, from.as_deref()).await
        }
        Action::Delete { name } => refs::delete(&ctx, Kind::Tag, &name, None).await,
    }
}
