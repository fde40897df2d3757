//! `pangolin admin user`: the tenant's people.

use reqwest::Method;
use serde_json::json;

use super::{Admin, AdminOptions, Find};
use crate::error::Result;
use crate::secret;

/// Where a new password comes from when it is not typed or piped.
const PASSWORD_ENV: &str = "PANGOLIN_NEW_PASSWORD";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin user create bob",
        "pangolin admin user create carol --admin",
        "pangolin admin user list",
        "pangolin admin user reset-password bob",
        "pangolin admin user disable bob",
        "pangolin admin user enable bob",
        "pangolin admin user delete bob",
    ],
    "Needs ManageUsers on the tenant; only a tenant administrator (or root) creates another\n\
     administrator. A new password (at least 12 characters) is read from the terminal\n\
     without echo, from standard input with --password-stdin (or when it is not a terminal),\n\
     or from PANGOLIN_NEW_PASSWORD. Disabling a user ends its sessions at once.",
))]
pub(crate) struct UserArgs {
    #[command(subcommand)]
    command: UserCommand,
}

#[derive(Debug, clap::Subcommand)]
enum UserCommand {
    /// Create a user with a password.
    Create(CreateArgs),
    /// List the tenant's users.
    List(NoArgs),
    /// Delete a user.
    Delete(NameArgs),
    /// Give a user a new password.
    ResetPassword(PasswordArgs),
    /// Stop a user from signing in; its tokens stop working.
    Disable(NameArgs),
    /// Let a disabled user sign in again.
    Enable(NameArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin user create bob",
        "printf '%s\\n' \"$PASSWORD\" | pangolin admin user create bob --password-stdin",
        "pangolin admin user create carol --admin",
    ],
    "",
))]
struct CreateArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The user's name.
    name: String,
    /// Make the user an administrator of the tenant.
    #[arg(long)]
    admin: bool,
    /// Read the password from the first line of standard input.
    #[arg(long)]
    password_stdin: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin user reset-password bob", "pangolin admin user reset-password bob --password-stdin"],
    "",
))]
struct PasswordArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The user's name.
    name: String,
    /// Read the new password from the first line of standard input.
    #[arg(long)]
    password_stdin: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin user list --json"], ""))]
struct NoArgs {
    #[command(flatten)]
    options: AdminOptions,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin user disable bob",
        "pangolin admin user enable bob",
        "pangolin admin user delete bob",
    ],
    "",
))]
struct NameArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The user's name.
    name: String,
}

pub(crate) async fn run(args: UserArgs) -> Result<()> {
    match args.command {
        UserCommand::Create(args) => {
            let admin = Admin::new(&args.options)?;
            let password = secret::read(
                &format!("Password for {}: ", args.name),
                args.password_stdin,
                PASSWORD_ENV,
            )?;
            let body = json!({ "username": args.name, "password": password, "admin": args.admin });
            let answer = admin
                .call(&admin.request(Method::POST, &["users"]).json(body))
                .await?;
            let what = if args.admin { "administrator" } else { "user" };
            admin.done(&answer, &format!("Created {what} {}.", args.name))
        }
        UserCommand::List(args) => {
            let admin = Admin::new(&args.options)?;
            admin
                .list(
                    &["users"],
                    "users",
                    &[
                        ("NAME", Find::At("/username")),
                        ("ADMIN", Find::At("/admin")),
                        ("DISABLED", Find::At("/disabled")),
                    ],
                )
                .await
        }
        UserCommand::Delete(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(&admin.request(Method::DELETE, &["users", &args.name]))
                .await?;
            admin.done(&answer, &format!("Deleted user {}.", args.name))
        }
        UserCommand::ResetPassword(args) => {
            let admin = Admin::new(&args.options)?;
            let password = secret::read(
                &format!("New password for {}: ", args.name),
                args.password_stdin,
                PASSWORD_ENV,
            )?;
            let answer = admin
                .call(
                    &admin
                        .request(Method::PUT, &["users", &args.name, "password"])
                        .json(json!({ "password": password })),
                )
                .await?;
            admin.done(
                &answer,
                &format!(
                    "Changed the password of {}; its earlier sessions are over.",
                    args.name
                ),
            )
        }
        UserCommand::Disable(args) => set_disabled(args, true).await,
        UserCommand::Enable(args) => set_disabled(args, false).await,
    }
}

async fn set_disabled(args: NameArgs, disabled: bool) -> Result<()> {
    let admin = Admin::new(&args.options)?;
    let answer = admin
        .call(
            &admin
                .request(Method::PUT, &["users", &args.name, "disabled"])
                .json(json!({ "disabled": disabled })),
        )
        .await?;
    let done = if disabled { "Disabled" } else { "Enabled" };
    admin.done(&answer, &format!("{done} user {}.", args.name))
}
