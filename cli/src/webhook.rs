//! `pangolin webhook`: a catalog's webhooks, their delivery and their dead letters.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use crate::client::Paging;
use crate::context::{Context, print_json, print_pages};
use crate::error::Result;
use crate::output::{Cell, Paint, Table, relative};
use crate::profile::GlobalArgs;

/// Listing pages of the webhook routes hold at most this many items.
const PAGE: usize = 1000;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin webhook create https://hooks.example.com/lake --type update-table --prefix sales",
        "pangolin webhook                               # list, with where delivery is",
        "pangolin webhook attempts 3f2a... -n 20",
        "pangolin webhook dead-letters 3f2a...",
        "pangolin webhook redeliver 3f2a... 42.0",
        "pangolin webhook disable 3f2a...",
    ],
    "Deliveries are CloudEvents POSTed one at a time in commit order and signed as Standard \
     Webhooks specifies; `create` prints the signing secret, which is not shown again. An event \
     past its last attempt becomes a dead letter; `redeliver` sends it again once the endpoint \
     is fixed.",
))]
pub(crate) struct WebhookArgs {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List the catalog's webhooks (the default).
    List,
    /// Subscribe an endpoint to the catalog's events, from now on.
    Create {
        /// Where deliveries go: an http or https URL without credentials.
        url: String,
        /// Only events of this type (`create-table`, `update-table`, ...); repeat for several.
        #[arg(long = "type", value_name = "TYPE")]
        types: Vec<String>,
        /// Only events about keys at or under this one (dotted: `sales.orders`).
        #[arg(long)]
        prefix: Option<String>,
        /// Only events of this branch or tag.
        #[arg(long = "ref", value_name = "REF")]
        reference: Option<String>,
        /// Attempts at one event before it becomes a dead letter (1 to 30) [default: 10].
        #[arg(long)]
        max_attempts: Option<u32>,
        #[arg(short = 'd', long)]
        description: Option<String>,
    },
    /// Show a webhook and where its delivery is.
    Show { id: String },
    /// Deliver again from where the webhook stopped.
    Enable { id: String },
    /// Stop delivering, keeping the webhook's place.
    Disable { id: String },
    /// Delete a webhook with its delivery log and dead letters.
    Delete { id: String },
    /// A webhook's delivery attempts, newest first.
    Attempts {
        id: String,
        /// At most this many.
        #[arg(short = 'n', long)]
        limit: Option<usize>,
    },
    /// The events a webhook gave up on, oldest first.
    DeadLetters { id: String },
    /// Send a dead letter again; delivered, it is removed.
    Redeliver { id: String, event: String },
}

pub(crate) async fn run(args: WebhookArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    match args.action.unwrap_or(Action::List) {
        Action::List => list(&ctx).await,
        Action::Create {
            url,
            types,
            prefix,
            reference,
            max_attempts,
            description,
        } => {
            let mut filter = json!({});
            if !types.is_empty() {
                filter["types"] = json!(types);
            }
            if let Some(prefix) = prefix {
                filter["prefix"] = json!(crate::key::parse(&prefix)?);
            }
            if let Some(reference) = reference {
                filter["ref"] = json!(reference);
            }
            let mut body = json!({"url": url, "filter": filter});
            if let Some(n) = max_attempts {
                body["max-attempts"] = json!(n);
            }
            if let Some(description) = description {
                body["description"] = json!(description);
            }
            let answer = ctx
                .client
                .call(&ctx.client.request(Method::POST, &["webhooks"]).json(body))
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            println!("Created webhook {}.", text(&answer.body, "id"));
            println!(
                "Signing secret (shown only now): {}",
                text(&answer.body, "secret")
            );
            Ok(())
        }
        Action::Show { id } => {
            let answer = ctx
                .client
                .call(&ctx.client.request(Method::GET, &["webhooks", &id]))
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            show(&ctx, &answer.body);
            Ok(())
        }
        Action::Enable { id } => set_enabled(&ctx, &id, true).await,
        Action::Disable { id } => set_enabled(&ctx, &id, false).await,
        Action::Delete { id } => {
            ctx.client
                .call(&ctx.client.request(Method::DELETE, &["webhooks", &id]))
                .await?;
            if ctx.json {
                print_json(&crate::json::Ordered::parse(
                    &json!({"deleted": id}).to_string(),
                )?);
            } else {
                println!("Deleted webhook {id}.");
            }
            Ok(())
        }
        Action::Attempts { id, limit } => attempts(&ctx, &id, limit).await,
        Action::DeadLetters { id } => dead_letters(&ctx, &id).await,
        Action::Redeliver { id, event } => {
            let request = ctx.client.request(
                Method::POST,
                &["webhooks", &id, "dead-letters", &event, "redeliver"],
            );
            let answer = ctx.client.call(&request).await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            if answer.body.get("delivered").and_then(Value::as_bool) == Some(true) {
                println!("Delivered event {event}; its dead letter is gone.");
                Ok(())
            } else {
                let why = answer
                    .body
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("the endpoint did not accept it");
                Err(crate::error::CliError::conflict(format!(
                    "event {event} was not delivered ({why}); its dead letter stays"
                )))
            }
        }
    }
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or("")
}

fn count(value: &Value, field: &str) -> u64 {
    value.get(field).and_then(Value::as_u64).unwrap_or(0)
}

async fn set_enabled(ctx: &Context, id: &str, enabled: bool) -> Result<()> {
    let answer = ctx
        .client
        .call(
            &ctx.client
                .request(Method::PATCH, &["webhooks", id])
                .json(json!({"enabled": enabled})),
        )
        .await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let state = if enabled { "Enabled" } else { "Disabled" };
    println!("{state} webhook {id}.");
    Ok(())
}

async fn list(ctx: &Context) -> Result<()> {
    let request = ctx.client.request(Method::GET, &["webhooks"]);
    let answers = ctx
        .client
        .pages_with(Paging::KEBAB, &request, "webhooks", None, PAGE, |_| Ok(()))
        .await?;
    if ctx.json {
        return print_pages(&answers, "webhooks", None);
    }
    let mut table = Table::with_header(&["ID", "URL", "ENABLED", "DELIVERED", "DEAD", "AFTER"]);
    for webhook in answers
        .iter()
        .filter_map(|a| a.body.get("webhooks").and_then(Value::as_array))
        .flatten()
    {
        let delivery = webhook.get("delivery").cloned().unwrap_or(Value::Null);
        let enabled = webhook.get("enabled").and_then(Value::as_bool) == Some(true);
        table.row(vec![
            Cell::new(text(webhook, "id")),
            Cell::new(text(webhook, "url")),
            Cell::painted(
                if enabled { "yes" } else { "no" },
                if enabled { Paint::Green } else { Paint::Dim },
            ),
            Cell::number(count(&delivery, "delivered").to_string()),
            Cell::number(count(&delivery, "dead-letters").to_string()),
            Cell::new(text(&delivery, "after")),
        ]);
    }
    if table.is_empty() {
        println!("No webhooks.");
        return Ok(());
    }
    print!("{}", table.render(ctx.style, 0));
    Ok(())
}

fn show(ctx: &Context, webhook: &Value) {
    let delivery = webhook.get("delivery").cloned().unwrap_or(Value::Null);
    println!("Webhook {}", text(webhook, "id"));
    println!("  url          {}", text(webhook, "url"));
    if let Some(description) = webhook.get("description").and_then(Value::as_str) {
        println!("  description  {description}");
    }
    println!(
        "  filter       {}",
        webhook.get("filter").cloned().unwrap_or(Value::Null)
    );
    println!(
        "  enabled      {}, {} attempts at an event before a dead letter",
        webhook.get("enabled").and_then(Value::as_bool) == Some(true),
        count(webhook, "max-attempts")
    );
    println!(
        "  delivered    {} ({} dead letters, {} attempts)",
        count(&delivery, "delivered"),
        count(&delivery, "dead-letters"),
        count(&delivery, "attempts")
    );
    if let Some(after) = delivery.get("after").and_then(Value::as_str) {
        println!("  after        {after}");
    }
    if let Some(at) = delivery.get("last-delivered-at").and_then(Value::as_str) {
        println!("  last         {}", relative(at, ctx.now));
    }
    if let Some(retry) = delivery.get("retry") {
        println!(
            "  retrying     event {} after {} attempts, next {}: {}",
            text(retry, "event"),
            count(retry, "attempts"),
            text(retry, "next-attempt-at"),
            text(retry, "last-error")
        );
    }
}

async fn attempts(ctx: &Context, id: &str, limit: Option<usize>) -> Result<()> {
    let request = ctx
        .client
        .request(Method::GET, &["webhooks", id, "attempts"]);
    let answers = ctx
        .client
        .pages_with(Paging::KEBAB, &request, "attempts", limit, PAGE, |_| Ok(()))
        .await?;
    if ctx.json {
        return print_pages(&answers, "attempts", limit);
    }
    let mut table = Table::with_header(&["#", "EVENT", "TYPE", "TRY", "OUTCOME", "STATUS", "WHEN"]);
    for attempt in answers
        .iter()
        .filter_map(|a| a.body.get("attempts").and_then(Value::as_array))
        .flatten()
        .take(limit.unwrap_or(usize::MAX))
    {
        let outcome = text(attempt, "outcome");
        let paint = match outcome {
            "delivered" => Paint::Green,
            "dead-lettered" => Paint::Red,
            _ => Paint::Yellow,
        };
        table.row(vec![
            Cell::number(count(attempt, "number").to_string()),
            Cell::new(text(attempt, "event")),
            Cell::new(text(attempt, "event-type")),
            Cell::number(count(attempt, "attempt").to_string()),
            Cell::painted(outcome, paint),
            Cell::new(
                attempt
                    .get("status")
                    .and_then(Value::as_u64)
                    .map_or_else(|| "-".to_owned(), |s| s.to_string()),
            ),
            Cell::new(relative(text(attempt, "at"), ctx.now)),
        ]);
    }
    if table.is_empty() {
        println!("No attempts yet.");
        return Ok(());
    }
    print!("{}", table.render(ctx.style, 0));
    Ok(())
}

async fn dead_letters(ctx: &Context, id: &str) -> Result<()> {
    let request = ctx
        .client
        .request(Method::GET, &["webhooks", id, "dead-letters"]);
    let answers = ctx
        .client
        .pages_with(Paging::KEBAB, &request, "dead-letters", None, PAGE, |_| {
            Ok(())
        })
        .await?;
    if ctx.json {
        return print_pages(&answers, "dead-letters", None);
    }
    let mut table = Table::with_header(&["EVENT", "TYPE", "ATTEMPTS", "LAST ERROR", "WHEN"]);
    for letter in answers
        .iter()
        .filter_map(|a| a.body.get("dead-letters").and_then(Value::as_array))
        .flatten()
    {
        table.row(vec![
            Cell::new(text(letter, "event")),
            Cell::new(text(letter, "event-type")),
            Cell::number(count(letter, "attempts").to_string()),
            Cell::new(text(letter, "last-error")),
            Cell::new(relative(text(letter, "at"), ctx.now)),
        ]);
    }
    if table.is_empty() {
        println!("No dead letters.");
        return Ok(());
    }
    print!("{}", table.render(ctx.style, 0));
    Ok(())
}
