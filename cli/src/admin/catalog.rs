//! `pangolin admin catalog`: the tenant's catalogs.

use reqwest::Method;
use serde_json::{Map, Value, json};

use super::{Admin, AdminOptions, Find};
use crate::error::{CliError, Result};

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin catalog create sales --warehouse lake",
        "pangolin admin catalog create sales --warehouse lake --property owner=finance",
        "pangolin admin catalog list",
        "pangolin admin catalog delete sales",
    ],
    "Creating and deleting need ManageCatalogs on the tenant; the list shows the catalogs you\n\
     may read something in.",
))]
pub(crate) struct CatalogArgs {
    #[command(subcommand)]
    command: CatalogCommand,
}

#[derive(Debug, clap::Subcommand)]
enum CatalogCommand {
    /// Create a catalog in a warehouse.
    Create(CreateArgs),
    /// List the catalogs you may read something in.
    List(NoArgs),
    /// Delete a catalog.
    Delete(NameArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin catalog create sales --warehouse lake --property owner=finance"],
    "",
))]
struct CreateArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The catalog's name.
    name: String,
    /// The warehouse its files go to.
    #[arg(long, value_name = "WAREHOUSE")]
    warehouse: String,
    /// A catalog property, `KEY=VALUE` (repeatable).
    #[arg(long = "property", value_name = "KEY=VALUE")]
    properties: Vec<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin catalog list --json"], ""))]
struct NoArgs {
    #[command(flatten)]
    options: AdminOptions,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin catalog delete sales"], ""))]
struct NameArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The catalog's name.
    name: String,
}

pub(crate) async fn run(args: CatalogArgs) -> Result<()> {
    match args.command {
        CatalogCommand::Create(args) => create(args).await,
        CatalogCommand::List(args) => {
            let admin = Admin::new(&args.options)?;
            admin
                .list(
                    &["catalogs"],
                    "catalogs",
                    &[
                        ("NAME", Find::At("/name")),
                        ("WAREHOUSE", Find::At("/warehouse")),
                        ("DEFAULT BRANCH", Find::At("/default-branch")),
                    ],
                )
                .await
        }
        CatalogCommand::Delete(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(&admin.request(Method::DELETE, &["catalogs", &args.name]))
                .await?;
            admin.done(&answer, &format!("Deleted catalog {}.", args.name))
        }
    }
}

/// `KEY=VALUE` options as an object.
fn properties(pairs: &[String]) -> Result<Map<String, Value>> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_owned(), Value::String(value.to_owned())))
            }
            _ => Err(CliError::usage(format!(
                "`{pair}` is not a property: write KEY=VALUE"
            ))),
        })
        .collect()
}

async fn create(args: CreateArgs) -> Result<()> {
    let admin = Admin::new(&args.options)?;
    let mut body = json!({ "name": args.name, "warehouse": args.warehouse });
    if !args.properties.is_empty() {
        body["properties"] = Value::Object(properties(&args.properties)?);
    }
    let answer = admin
        .call(&admin.request(Method::POST, &["catalogs"]).json(body))
        .await?;
    admin.done(
        &answer,
        &format!(
            "Created catalog {} in warehouse {}.",
            args.name, args.warehouse
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_key_equals_value() {
        let parsed = properties(&["owner=finance".into(), "note=a=b".into()]).unwrap();
        assert_eq!(
            Value::Object(parsed),
            json!({"owner": "finance", "note": "a=b"})
        );
        assert!(properties(&["novalue".into()]).is_err());
        assert!(properties(&["=x".into()]).is_err());
    }
}
