//! `pangolin admin key`: a service user's API keys. A key's secret is shown once, when it is
//! created or rotated; the server keeps only its hash.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Admin, AdminOptions, Find};
use crate::error::{CliError, Result};
use crate::output::Paint;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin key create etl",
        "pangolin admin key create etl --expires-in 90d",
        "pangolin admin key list etl",
        "pangolin admin key rotate etl 0123456789abcdef --grace 1h",
        "pangolin admin key revoke etl 0123456789abcdef",
        "PANGOLIN_API_KEY=pgl_… pangolin catalogs",
    ],
    "Needs ManageUsers on the tenant. The key (`pgl_<key id>_<secret>`) is printed once, on\n\
     create and rotate; keep it in a secret store. Lists show key ids, never secrets.\n\
     Durations are seconds or a number with s, m, h or d (90d).",
))]
pub(crate) struct KeyArgs {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Debug, clap::Subcommand)]
enum KeyCommand {
    /// Create an API key for a service user; prints it once.
    Create(CreateArgs),
    /// List a service user's keys (without secrets).
    List(ServiceArgs),
    /// Revoke a key.
    Revoke(KeyIdArgs),
    /// Replace a key with a new one; prints it once. The old key works for the grace period.
    Rotate(RotateArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin key create etl", "pangolin admin key create etl --expires-in 90d --json"],
    "",
))]
struct CreateArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The service user.
    service_user: String,
    /// The key stops working after this long [default: never].
    #[arg(long, value_name = "DURATION", value_parser = seconds)]
    expires_in: Option<u64>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin key list etl"], ""))]
struct ServiceArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The service user.
    service_user: String,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin key revoke etl 0123456789abcdef"], ""))]
struct KeyIdArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The service user.
    service_user: String,
    /// The key's id (as `key list` shows it).
    key: String,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin key rotate etl 0123456789abcdef --grace 1h"],
    "",
))]
struct RotateArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The service user.
    service_user: String,
    /// The key's id.
    key: String,
    /// How long the old key keeps working [default: the server's].
    #[arg(long, value_name = "DURATION", value_parser = seconds)]
    grace: Option<u64>,
}

pub(crate) async fn run(args: KeyArgs) -> Result<()> {
    match args.command {
        KeyCommand::Create(args) => {
            let admin = Admin::new(&args.options)?;
            let mut body = json!({});
            if let Some(seconds) = args.expires_in {
                body["expires-in-seconds"] = seconds.into();
            }
            let request = admin
                .request(Method::POST, &["service-users", &args.service_user, "keys"])
                .json(body);
            let answer = admin.call(&request).await?;
            print_key(
                &admin,
                &answer,
                &format!("Created an API key for {}", args.service_user),
            )
        }
        KeyCommand::List(args) => {
            let admin = Admin::new(&args.options)?;
            admin
                .list(
                    &["service-users", &args.service_user, "keys"],
                    "keys",
                    &[
                        ("KEY ID", Find::At("/id")),
                        ("CREATED", Find::At("/created-at")),
                        ("EXPIRES", Find::At("/expires-at")),
                        ("LAST USED", Find::At("/last-used-at")),
                        ("REVOKED", Find::At("/revoked-at")),
                    ],
                )
                .await
        }
        KeyCommand::Revoke(args) => {
            let admin = Admin::new(&args.options)?;
            let request = admin.request(
                Method::DELETE,
                &["service-users", &args.service_user, "keys", &args.key],
            );
            let answer = admin.call(&request).await?;
            admin.done(
                &answer,
                &format!("Revoked key {} of {}.", args.key, args.service_user),
            )
        }
        KeyCommand::Rotate(args) => {
            let admin = Admin::new(&args.options)?;
            let mut body = json!({});
            if let Some(seconds) = args.grace {
                body["grace-seconds"] = seconds.into();
            }
            let request = admin
                .request(
                    Method::POST,
                    &[
                        "service-users",
                        &args.service_user,
                        "keys",
                        &args.key,
                        "rotate",
                    ],
                )
                .json(body);
            let answer = admin.call(&request).await?;
            print_key(
                &admin,
                &answer,
                &format!("Rotated key {} of {}", args.key, args.service_user),
            )
        }
    }
}

/// The plaintext key in an answer: the string that looks like one, wherever the answer
/// keeps it.
fn plaintext(body: &Value) -> Option<&str> {
    match body {
        Value::String(s) if s.starts_with("pgl_") => Some(s),
        Value::Object(fields) => fields.values().find_map(plaintext),
        _ => None,
    }
}

fn print_key(admin: &Admin, answer: &crate::client::Answer, what: &str) -> Result<()> {
    if admin.ctx.json {
        return admin.ctx.print_answer(answer);
    }
    let key = plaintext(&answer.body)
        .ok_or_else(|| CliError::server("the server's answer holds no API key"))?;
    println!(
        "{what}. It is shown only now; keep it in a secret store:\n\n    {}\n",
        admin.ctx.style.paint(Paint::Bold, key)
    );
    Ok(())
}

/// A duration in seconds: `3600`, `90s`, `30m`, `12h`, `90d`.
fn seconds(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration: write 3600, 90s, 30m, 12h or 90d"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "`{text}` is not a duration: write 3600, 90s, 30m, 12h or 90d"
            ));
        }
    };
    number
        .checked_mul(scale)
        .filter(|s| *s > 0)
        .ok_or_else(|| format!("`{text}` is not a usable duration"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_seconds_or_have_a_unit() {
        assert_eq!(seconds("3600"), Ok(3600));
        assert_eq!(seconds("90d"), Ok(90 * 86_400));
        assert_eq!(seconds("30m"), Ok(1800));
        assert!(seconds("0").is_err());
        assert!(seconds("2w").is_err());
        assert!(seconds("soon").is_err());
    }

    #[test]
    fn the_key_is_found_wherever_the_answer_has_it() {
        let answer = json!({"id": "0123", "key": "pgl_0123_abcd"});
        assert_eq!(plaintext(&answer), Some("pgl_0123_abcd"));
        let nested = json!({"key": {"id": "0123", "api-key": "pgl_0123_abcd"}});
        assert_eq!(plaintext(&nested), Some("pgl_0123_abcd"));
        assert_eq!(plaintext(&json!({"id": "0123"})), None);
    }
}
