//! `pangolin catalogs`: the server's catalogs.

use serde_json::Value;

use crate::client::Client;
use crate::context::Context;
use crate::error::Result;
use crate::output::{Cell, Paint, Table};
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin catalogs", "pangolin catalogs --json"],
    "The catalog commands work in is marked with `*`.",
))]
pub(crate) struct CatalogsArgs {
    #[command(flatten)]
    global: GlobalArgs,
}

pub(crate) async fn run(args: CatalogsArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let answer = ctx.client.call(&Client::catalogs_request()).await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let mut table = Table::with_header(&["", "NAME", "DEFAULT BRANCH"]);
    let catalogs = answer.body.get("catalogs").and_then(Value::as_array);
    for catalog in catalogs.into_iter().flatten() {
        let name = catalog.get("name").and_then(Value::as_str).unwrap_or("?");
        let current = name == ctx.client.catalog();
        table.row(vec![
            Cell::painted(if current { "*" } else { "" }, Paint::Green),
            if current {
                Cell::painted(name, Paint::Green)
            } else {
                Cell::new(name)
            },
            Cell::new(
                catalog
                    .get("default-branch")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
        ]);
    }
    print!("{}", table.render(ctx.style, 0));
    Ok(())
}
