//! `pangolin admin service-user`: the tenant's programs, which sign in with API keys.

use reqwest::Method;
use serde_json::json;

use super::{Admin, AdminOptions, Find};
use crate::error::Result;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin service-user create etl",
        "pangolin admin key create etl",
        "pangolin admin service-user list",
        "pangolin admin service-user delete etl",
    ],
    "Needs ManageUsers on the tenant. A service user signs in with an API key (`pangolin\n\
     admin key create`); give it roles with `pangolin admin role add-member ROLE\n\
     service:TENANT/NAME`.",
))]
pub(crate) struct ServiceUserArgs {
    #[command(subcommand)]
    command: ServiceUserCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ServiceUserCommand {
    /// Create a service user.
    Create(NameArgs),
    /// List the tenant's service users.
    List(NoArgs),
    /// Delete a service user and its keys.
    Delete(NameArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin service-user list --json"], ""))]
struct NoArgs {
    #[command(flatten)]
    options: AdminOptions,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin service-user create etl", "pangolin admin service-user delete etl"],
    "",
))]
struct NameArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The service user's name.
    name: String,
}

pub(crate) async fn run(args: ServiceUserArgs) -> Result<()> {
    match args.command {
        ServiceUserCommand::Create(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(
                    &admin
                        .request(Method::POST, &["service-users"])
                        .json(json!({ "name": args.name })),
                )
                .await?;
            admin.done(
                &answer,
                &format!(
                    "Created service user {0}; give it a key with `pangolin admin key create {0}`.",
                    args.name
                ),
            )
        }
        ServiceUserCommand::List(args) => {
            let admin = Admin::new(&args.options)?;
            admin
                .list(
                    &["service-users"],
                    "service-users",
                    &[
                        ("NAME", Find::At("/name")),
                        ("ID", Find::At("/id")),
                        ("DISABLED", Find::At("/disabled")),
                    ],
                )
                .await
        }
        ServiceUserCommand::Delete(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(&admin.request(Method::DELETE, &["service-users", &args.name]))
                .await?;
            admin.done(&answer, &format!("Deleted service user {}.", args.name))
        }
    }
}
