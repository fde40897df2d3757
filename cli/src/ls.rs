//! `pangolin ls`: the entries of a catalog at a reference.

use reqwest::Method;
use serde_json::Value;

use crate::changes::{entry_detail, entry_type};
use crate::client::MAX_PAGE;
use crate::context::{Context, print_json};
use crate::error::Result;
use crate::json::join_pages;
use crate::key;
use crate::output::{Cell, Paint, Table};
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin ls                              # everything on main",
        "pangolin ls dev sales                    # under the namespace sales, on dev",
        "pangolin ls 'main#2026-05-01T00:00:00Z'  # main as it was then",
    ],
    "",
))]
pub(crate) struct LsArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// A branch, tag, commit or any reference [default: main].
    #[arg(value_name = "REF")]
    reference: Option<String>,
    /// Only entries under this namespace (dotted: `sales.eu`).
    #[arg(value_name = "PREFIX")]
    prefix: Option<String>,
}

pub(crate) async fn run(args: LsArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let prefix = args.prefix.as_deref().map(key::parse).transpose()?;
    let request = ctx
        .client
        .request(Method::GET, &["entries"])
        .query_opt("ref", args.reference.as_deref())
        .query_opt("prefix", prefix.as_deref().map(key::query_value));
    let answers = ctx
        .client
        .pages(&request, "entries", None, MAX_PAGE, |_| Ok(()))
        .await?;
    if ctx.json {
        let pages = answers
            .iter()
            .map(|a| a.ordered())
            .collect::<Result<Vec<_>>>()?;
        print_json(&join_pages(pages, "entries", None));
        return Ok(());
    }
    let mut table = Table::with_header(&["KEY", "TYPE", "DETAIL"]);
    let entries = answers
        .iter()
        .filter_map(|a| a.body.get("entries").and_then(Value::as_array))
        .flatten();
    for item in entries {
        let entry = item.get("entry").unwrap_or(&Value::Null);
        let kind = entry_type(entry);
        let key = key::display(item.get("key").unwrap_or(&Value::Null));
        table.row(vec![
            if kind == "namespace" {
                Cell::painted(key, Paint::Cyan)
            } else {
                Cell::new(key)
            },
            Cell::new(kind),
            Cell::new(entry_detail(entry).unwrap_or_default()),
        ]);
    }
    if table.is_empty() {
        println!("No entries.");
    } else {
        print!("{}", table.render(ctx.style, 0));
    }
    Ok(())
}
