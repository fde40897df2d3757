//! `pangolin admin tenant`: the deployment's tenants (root only).

use reqwest::Method;
use serde_json::{Value, json};

use super::{Admin, AdminOptions, Find};
use crate::error::Result;
use crate::secret;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin tenant create acme --description 'Acme analytics' --admin ana",
        "pangolin admin tenant list",
        "pangolin admin tenant show acme --json",
        "pangolin admin tenant delete acme",
    ],
    "Root only. The first administrator's password is read from the terminal without echo,\n\
     from standard input with --admin-password-stdin (or when it is not a terminal), or from\n\
     PANGOLIN_ADMIN_PASSWORD.",
))]
pub(crate) struct TenantArgs {
    #[command(subcommand)]
    command: TenantCommand,
}

#[derive(Debug, clap::Subcommand)]
enum TenantCommand {
    /// Create a tenant, optionally with its first administrator.
    Create(CreateArgs),
    /// List the tenants.
    List(NoArgs),
    /// Show a tenant.
    Show(NameArgs),
    /// Delete a tenant.
    Delete(NameArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin tenant create acme",
        "pangolin admin tenant create acme --description 'Acme analytics' --admin ana",
        "printf '%s\\n' \"$PASSWORD\" | pangolin admin tenant create acme --admin ana --admin-password-stdin",
    ],
    "",
))]
struct CreateArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The tenant's name.
    name: String,
    /// What the tenant is for.
    #[arg(long)]
    description: Option<String>,
    /// Also create this administrator of the tenant.
    #[arg(long, value_name = "USERNAME")]
    admin: Option<String>,
    /// Read the administrator's password from the first line of standard input.
    #[arg(long, requires = "admin")]
    admin_password_stdin: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin tenant list --json"], ""))]
struct NoArgs {
    #[command(flatten)]
    options: AdminOptions,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin tenant show acme", "pangolin admin tenant delete acme"],
    "",
))]
struct NameArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The tenant's name.
    name: String,
}

pub(crate) async fn run(args: TenantArgs) -> Result<()> {
    match args.command {
        TenantCommand::Create(args) => create(args).await,
        TenantCommand::List(args) => {
            let admin = Admin::new(&args.options)?;
            admin
                .list(
                    &["tenants"],
                    "tenants",
                    &[
                        ("NAME", Find::At("/name")),
                        ("DESCRIPTION", Find::At("/description")),
                        ("CREATED", Find::At("/created-at")),
                    ],
                )
                .await
        }
        TenantCommand::Show(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(&admin.request(Method::GET, &["tenants", &args.name]))
                .await?;
            admin.show(&answer)
        }
        TenantCommand::Delete(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(&admin.request(Method::DELETE, &["tenants", &args.name]))
                .await?;
            admin.done(&answer, &format!("Deleted tenant {}.", args.name))
        }
    }
}

async fn create(args: CreateArgs) -> Result<()> {
    let admin = Admin::new(&args.options)?;
    let mut body = json!({ "name": args.name });
    if let Some(description) = &args.description {
        body["description"] = Value::String(description.clone());
    }
    if let Some(username) = &args.admin {
        let password = secret::read(
            &format!("Password for {username}: "),
            args.admin_password_stdin,
            "PANGOLIN_ADMIN_PASSWORD",
        )?;
        body["admin"] = json!({ "username": username, "password": password });
    }
    let answer = admin
        .call(&admin.request(Method::POST, &["tenants"]).json(body))
        .await?;
    let with = args.admin.as_ref().map_or_else(String::new, |user| {
        format!(
            " with administrator {user}; sign in with `pangolin login --tenant {} --user {user}`",
            args.name
        )
    });
    admin.done(&answer, &format!("Created tenant {}{with}.", args.name))
}
