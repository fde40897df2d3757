//! `pangolin show`: one commit, its changes against its first parent, and what changed in
//! each Iceberg table.

use reqwest::Method;
use serde_json::Value;

use crate::changes::render_changes;
use crate::context::Context;
use crate::error::Result;
use crate::log::render_commit;
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin show main                       # the head of main",
        "pangolin show 3fa9c1e2abcd",
        "pangolin show 'main~2'",
        "pangolin show v1 --json",
    ],
    "Changes are against the commit's first parent; for Iceberg tables each change says in\n\
     words what changed in the metadata (snapshots, schema, properties).",
))]
pub(crate) struct ShowArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// A commit hash (at least 8 hex digits) or any reference.
    #[arg(value_name = "HASH|REF")]
    commit: String,
}

pub(crate) async fn run(args: ShowArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let answer = ctx
        .client
        .call(&ctx.client.request(Method::GET, &["commits", &args.commit]))
        .await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let commit = &answer.body;
    print!("{}", render_commit(commit, ctx.style, ctx.now));
    if let Some(properties) = commit
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty())
    {
        println!("\nProperties:");
        for (name, value) in properties {
            println!(
                "    {name} = {}",
                value.as_str().unwrap_or(&value.to_string())
            );
        }
    }
    let changes = commit
        .get("changes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if changes.is_empty() {
        println!("\nNo changes.");
    } else {
        println!("\nChanges ({}):", changes.len());
        print!("{}", render_changes(changes, ctx.style));
    }
    Ok(())
}
