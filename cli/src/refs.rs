//! What `pangolin branch` and `pangolin tag` share: listing, creating, looking up and deleting
//! references.

use reqwest::Method;
use serde_json::{Value, json};

use crate::client::MAX_PAGE;
use crate::context::{Context, print_json};
use crate::error::{CliError, Result};
use crate::json::{Ordered, join_pages};
use crate::output::{Cell, Paint, Table};

/// A kind of reference, as the API names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Branch,
    Tag,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Branch => "branch",
            Self::Tag => "tag",
        }
    }
}

/// Lists branches or tags, every page.
pub(crate) async fn list(ctx: &Context, kind: Kind, prefix: Option<&str>) -> Result<()> {
    let request = ctx
        .client
        .request(Method::GET, &["refs"])
        .query("type", kind.name())
        .query_opt("prefix", prefix);
    let answers = ctx
        .client
        .pages(&request, "refs", None, MAX_PAGE, |_| Ok(()))
        .await?;
    if ctx.json {
        let pages = answers
            .iter()
            .map(|a| a.ordered())
            .collect::<Result<Vec<_>>>()?;
        print_json(&join_pages(pages, "refs", None));
        return Ok(());
    }
    let mut table = match kind {
        Kind::Branch => Table::with_header(&["NAME", "HASH", "AHEAD", "BEHIND"]),
        Kind::Tag => Table::with_header(&["NAME", "HASH"]),
    };
    let refs = answers
        .iter()
        .filter_map(|a| a.body.get("refs").and_then(Value::as_array))
        .flatten();
    for reference in refs {
        let field = |name: &str| reference.get(name).and_then(Value::as_str).unwrap_or("");
        let count = |name: &str| {
            reference
                .get(name)
                .and_then(Value::as_u64)
                .map_or_else(|| "-".to_owned(), |n| n.to_string())
        };
        let mut cells = vec![
            Cell::new(field("name")),
            Cell::painted(crate::output::short(field("hash")), Paint::Yellow),
        ];
        if kind == Kind::Branch {
            cells.push(Cell::number(count("ahead")));
            cells.push(Cell::number(count("behind")));
        }
        table.row(cells);
    }
    if table.is_empty() {
        let what = match kind {
            Kind::Branch => "branches",
            Kind::Tag => "tags",
        };
        match prefix {
            Some(prefix) => println!("No {what} starting with `{prefix}`."),
            None => println!("No {what}."),
        }
        return Ok(());
    }
    print!("{}", table.render(ctx.style, 0));
    Ok(())
}

/// Creates a branch or tag at `from` (the server's default when absent).
pub(crate) async fn create(
    ctx: &Context,
    kind: Kind,
    name: &str,
    from: Option<&str>,
) -> Result<()> {
    let mut body = json!({"name": name, "type": kind.name()});
    if let Some(from) = from {
        body["from"] = json!(from);
    }
    let answer = ctx
        .client
        .call(&ctx.client.request(Method::POST, &["refs"]).json(body))
        .await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let hash = answer
        .body
        .get("hash")
        .and_then(Value::as_str)
        .unwrap_or("");
    let from = from.map_or_else(String::new, |from| format!(" from {from}"));
    println!(
        "Created {} {name} at {}{from}.",
        kind.name(),
        ctx.style.hash(hash)
    );
    Ok(())
}

/// The hash a branch or tag points to; an error naming what it is when it is not a `kind`.
pub(crate) async fn lookup(ctx: &Context, kind: Kind, name: &str) -> Result<String> {
    let answer = ctx
        .client
        .call(&ctx.client.request(Method::GET, &["refs", name]))
        .await?;
    let field = |f: &str| answer.body.get(f).and_then(Value::as_str).unwrap_or("");
    let actual = field("type");
    if actual != kind.name() {
        let hint = match actual {
            "tag" => " (use `pangolin tag`)",
            "branch" => " (use `pangolin branch`)",
            _ => "",
        };
        return Err(CliError::usage(format!(
            "`{name}` is a {actual}, not a {}{hint}",
            kind.name()
        )));
    }
    Ok(field("hash").to_owned())
}

/// Deletes a branch or tag, only if it still points where it did (`expect`, else what it
/// pointed to when looked up).
pub(crate) async fn delete(
    ctx: &Context,
    kind: Kind,
    name: &str,
    expect: Option<&str>,
) -> Result<()> {
    let seen = lookup(ctx, kind, name).await?;
    let expected = expect.unwrap_or(&seen);
    ctx.client
        .call(
            &ctx.client
                .request(Method::DELETE, &["refs", name])
                .query("expected-hash", expected),
        )
        .await?;
    if ctx.json {
        // The server answers 204 with no body: say what was deleted.
        let deleted = json!({"name": name, "type": kind.name(), "hash": seen});
        print_json(&Ordered::parse(&deleted.to_string())?);
    } else {
        println!(
            "Deleted {} {name} (was {}).",
            kind.name(),
            ctx.style.hash(&seen)
        );
    }
    Ok(())
}
