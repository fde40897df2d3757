//! `pangolin audit log` and `pangolin audit verify`: the server's hash-chained audit log.

use reqwest::Method;
use serde_json::Value;

use crate::client::{Paging, Request};
use crate::context::{Context, print_json};
use crate::error::{CliError, Result};
use crate::json::join_pages;
use crate::log::parse_time;
use crate::output::{Cell, Paint, Table};
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin audit log",
        "pangolin audit log --action auth.login --from 1d",
        "pangolin audit log --principal user:acme/ana --limit 20 --json",
        "pangolin audit verify",
    ],
    "Every change, sign-in and refusal is an event, chained to the one before by a hash.\n\
     Tenant administrators (and holders of ReadAudit) see their tenant's events; root sees\n\
     all. `audit verify` (root only) exits 1 when the chain is broken.",
))]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AuditCommand {
    /// List audit events, oldest first.
    Log(LogArgs),
    /// Check the whole hash chain (root only); exits 1 when it is broken.
    Verify(VerifyArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin audit log",
        "pangolin audit log --action auth.login --from 1d",
        "pangolin audit log --principal user:acme/ana --resource-type tenant",
        "pangolin audit log --from 2026-05-01 --until 2026-05-02 --limit 500 --json",
    ],
    "Events are shown oldest first, at most --limit of them: narrow with --from to see the\n\
     latest. Times are RFC 3339 (2026-05-01T12:00:00Z), dates (2026-05-01, midnight UTC) or\n\
     ages (30m, 2h, 3d, 1w, `2 days ago`). With --json, the pages read are joined into one\n\
     {\"events\": [...]} answer.",
))]
pub(crate) struct LogArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// Only events of this principal (`user:acme/ana`, `service:acme/etl`).
    #[arg(long)]
    principal: Option<String>,
    /// Only events of this action (`auth.login`, `tenant.create`, `table.commit`).
    #[arg(long)]
    action: Option<String>,
    /// Only events on this kind of resource (`session`, `tenant`, `table`).
    #[arg(long)]
    resource_type: Option<String>,
    /// Root only: one tenant's events (`~` for the deployment's own).
    #[arg(long)]
    tenant: Option<String>,
    /// Only events at or after this time.
    #[arg(long, value_name = "TIME")]
    from: Option<String>,
    /// Only events before this time.
    #[arg(long, value_name = "TIME")]
    until: Option<String>,
    /// Show at most this many events.
    #[arg(long, value_name = "N", default_value_t = 100)]
    limit: usize,
    /// Events asked for per request (for tests of paging).
    #[arg(long, hide = true, default_value_t = 1000,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    page_size: u16,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin audit verify", "pangolin audit verify --json"],
    "Root only. Exits 0 when every event links to the one before and carries the hash its\n\
     contents give, 1 when the chain is broken (the answer says where).",
))]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    global: GlobalArgs,
}

pub(crate) async fn run(args: AuditArgs) -> Result<()> {
    match args.command {
        AuditCommand::Log(args) => log(args).await,
        AuditCommand::Verify(args) => verify(args).await,
    }
}

async fn log(args: LogArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let from = args
        .from
        .as_deref()
        .map(|t| parse_time(t, ctx.now))
        .transpose()?;
    let until = args
        .until
        .as_deref()
        .map(|t| parse_time(t, ctx.now))
        .transpose()?;
    if args.limit == 0 {
        return Err(CliError::usage("--limit must be at least 1"));
    }
    let request = Request::api(Method::GET, &["audit"])
        .query_opt("principal", args.principal)
        .query_opt("action", args.action)
        .query_opt("resource-type", args.resource_type)
        .query_opt("tenant", args.tenant)
        .query_opt("from", from)
        .query_opt("until", until);
    let limit = Some(args.limit);
    let answers = ctx
        .client
        .pages_with(
            Paging::KEBAB,
            &request,
            "events",
            limit,
            args.page_size.into(),
            |_| Ok(()),
        )
        .await?;
    if ctx.json {
        let pages = answers
            .iter()
            .map(|a| a.ordered())
            .collect::<Result<Vec<_>>>()?;
        print_json(&join_pages(pages, "events", limit));
        return Ok(());
    }
    let mut table = Table::with_header(&["TIME", "PRINCIPAL", "ACTION", "RESOURCE", "OUTCOME"]);
    let events = answers
        .iter()
        .filter_map(|a| a.body.get("events").and_then(Value::as_array))
        .flatten()
        .take(args.limit);
    for event in events {
        let field = |name: &str| event.get(name).and_then(Value::as_str).unwrap_or("");
        let outcome = field("outcome");
        let paint = if outcome == "success" {
            Paint::Green
        } else {
            Paint::Red
        };
        table.row(vec![
            Cell::painted(field("time"), Paint::Dim),
            Cell::new(field("principal")),
            Cell::new(field("action")),
            Cell::new(format!(
                "{} {}",
                field("resource-type"),
                field("resource-id")
            )),
            Cell::painted(outcome, paint),
        ]);
    }
    if table.is_empty() {
        println!("No audit events.");
    } else {
        print!("{}", table.render(ctx.style, 0));
    }
    Ok(())
}

async fn verify(args: VerifyArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let answer = ctx
        .client
        .call(&Request::api(Method::GET, &["audit", "verify"]))
        .await?;
    let intact = answer.body.get("intact").and_then(Value::as_bool);
    let checked = answer
        .body
        .get("checked")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let problem = answer
        .body
        .get("problem")
        .and_then(Value::as_str)
        .unwrap_or("no reason given");
    if ctx.json {
        ctx.print_answer(&answer)?;
    }
    match intact {
        Some(true) => {
            if !ctx.json {
                println!("The audit log is intact: {checked} events checked.");
            }
            Ok(())
        }
        Some(false) => Err(CliError::conflict(format!(
            "the audit log's chain is broken after {checked} intact events: {problem}"
        ))),
        None => Err(CliError::server(
            "the server's answer to the audit check has no `intact`",
        )),
    }
}
