//! `pangolin admin role`: roles, their grants and their members.
//!
//! A grant is written `PRIVILEGE:RESOURCE[@BRANCHES]`: `read:catalog:lake`,
//! `write:namespace:lake.sales@dev*`, `read:table:lake.sales.orders`, `manage-users:tenant`.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Admin, AdminOptions, Find, text};
use crate::context::print_json;
use crate::error::{CliError, Result};
use crate::json::Ordered;
use crate::key;
use crate::output::{Cell, Paint, Table};

const GRANT_SYNTAX: &str = "write a grant as PRIVILEGE:RESOURCE[@BRANCHES], where RESOURCE is \
`tenant`, `catalog:CATALOG`, `namespace:CATALOG.NS` or `table:CATALOG.NS.TABLE`: \
read:catalog:lake, write:namespace:lake.sales@dev*";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin role create readers --grant read:catalog:lake",
        "pangolin admin role create writers --grant 'write:namespace:lake.sales@dev*'",
        "pangolin admin role grant readers read:table:lake.sales.orders",
        "pangolin admin role revoke readers read:catalog:lake",
        "pangolin admin role add-member readers user:acme/bob",
        "pangolin admin role add-member readers service:acme/etl",
        "pangolin admin role remove-member readers user:acme/bob",
        "pangolin admin role show readers",
    ],
    "A grant is PRIVILEGE:RESOURCE[@BRANCHES]. Privileges: read, write, create, drop,\n\
     manage-refs, manage-grants, manage-catalogs, manage-users, read-audit. Resources:\n\
     tenant, catalog:CATALOG, namespace:CATALOG.NS (levels dotted), table:CATALOG.NS.TABLE.\n\
     Branches (data privileges only): a pattern such as main, release/*, dev* [default: *].\n\
     You may only grant what you hold yourself, where you hold ManageGrants.",
))]
pub(crate) struct RoleArgs {
    #[command(subcommand)]
    command: RoleCommand,
}

#[derive(Debug, clap::Subcommand)]
enum RoleCommand {
    /// Create a role with grants.
    Create(CreateArgs),
    /// List the tenant's roles.
    List(NoArgs),
    /// Show a role's grants and members.
    Show(NameArgs),
    /// Delete a role.
    Delete(NameArgs),
    /// Add grants to a role.
    Grant(GrantArgs),
    /// Take grants from a role.
    Revoke(GrantArgs),
    /// Give a principal the role (`user:TENANT/NAME`, `service:TENANT/NAME`).
    AddMember(MemberArgs),
    /// Take the role from a principal.
    RemoveMember(MemberArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin role create readers --grant read:catalog:lake --grant read:catalog:sea"],
    "",
))]
struct CreateArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The role's name.
    name: String,
    /// A grant, PRIVILEGE:RESOURCE[@BRANCHES] (repeatable).
    #[arg(long = "grant", value_name = "GRANT")]
    grants: Vec<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin role list --json"], ""))]
struct NoArgs {
    #[command(flatten)]
    options: AdminOptions,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin role show readers", "pangolin admin role delete readers"],
    "",
))]
struct NameArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The role's name.
    name: String,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin role grant readers read:catalog:lake 'read:namespace:sea.public@main'",
        "pangolin admin role revoke readers read:catalog:lake",
    ],
    "",
))]
struct GrantArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The role's name.
    name: String,
    /// Grants, PRIVILEGE:RESOURCE[@BRANCHES].
    #[arg(required = true, value_name = "GRANT")]
    grants: Vec<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin role add-member readers user:acme/bob",
        "pangolin admin role remove-member readers service:acme/etl",
    ],
    "",
))]
struct MemberArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The role's name.
    name: String,
    /// The principal: user:TENANT/NAME or service:TENANT/NAME.
    principal: String,
}

pub(crate) async fn run(args: RoleArgs) -> Result<()> {
    match args.command {
        RoleCommand::Create(args) => {
            let admin = Admin::new(&args.options)?;
            let grants = args
                .grants
                .iter()
                .map(|g| parse_grant(g))
                .collect::<Result<Vec<_>>>()?;
            let body = json!({ "name": args.name, "grants": grants });
            let answer = admin
                .call(&admin.request(Method::POST, &["roles"]).json(body))
                .await?;
            admin.done(
                &answer,
                &format!("Created role {} with {} grants.", args.name, grants.len()),
            )
        }
        RoleCommand::List(args) => {
            let admin = Admin::new(&args.options)?;
            admin
                .list(
                    &["roles"],
                    "roles",
                    &[
                        ("NAME", Find::At("/name")),
                        ("DISABLED", Find::At("/disabled")),
                        ("GRANTS", Find::From(grants_of)),
                    ],
                )
                .await
        }
        RoleCommand::Show(args) => show(args).await,
        RoleCommand::Delete(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(&admin.request(Method::DELETE, &["roles", &args.name]))
                .await?;
            admin.done(&answer, &format!("Deleted role {}.", args.name))
        }
        RoleCommand::Grant(args) => change_grants(args, true).await,
        RoleCommand::Revoke(args) => change_grants(args, false).await,
        RoleCommand::AddMember(args) => {
            let admin = Admin::new(&args.options)?;
            let request = admin.request(
                Method::PUT,
                &["roles", &args.name, "members", &args.principal],
            );
            let answer = admin.call(&request).await?;
            admin.done(
                &answer,
                &format!("{} now has role {}.", args.principal, args.name),
            )
        }
        RoleCommand::RemoveMember(args) => {
            let admin = Admin::new(&args.options)?;
            let request = admin.request(
                Method::DELETE,
                &["roles", &args.name, "members", &args.principal],
            );
            let answer = admin.call(&request).await?;
            admin.done(
                &answer,
                &format!("{} no longer has role {}.", args.principal, args.name),
            )
        }
    }
}

async fn show(args: NameArgs) -> Result<()> {
    let admin = Admin::new(&args.options)?;
    let role = admin
        .call(&admin.request(Method::GET, &["roles", &args.name]))
        .await?;
    let members = admin
        .call(&admin.request(Method::GET, &["roles", &args.name, "members"]))
        .await?;
    if admin.ctx.json {
        let mut both = role.ordered()?;
        let listed = members
            .ordered()?
            .get("members")
            .cloned()
            .unwrap_or(Ordered::Array(Vec::new()));
        both.set("members", listed);
        print_json(&both);
        return Ok(());
    }
    let style = admin.ctx.style;
    println!("{} {}", style.paint(Paint::Bold, "role"), args.name);
    let mut table = Table::without_header();
    for grant in role
        .body
        .get("grants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        table.row(vec![Cell::new("grant"), Cell::new(show_grant(grant))]);
    }
    for member in members
        .body
        .get("members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = member
            .as_str()
            .map(str::to_owned)
            .or_else(|| member.get("principal").map(text))
            .unwrap_or_else(|| member.to_string());
        table.row(vec![Cell::new("member"), Cell::new(name)]);
    }
    print!("{}", table.render(style, 2));
    Ok(())
}

/// Reads the role, adds or removes grants, and writes it back at the version read: a
/// concurrent change makes the server answer 409 (exit 1) rather than be lost.
async fn change_grants(args: GrantArgs, add: bool) -> Result<()> {
    let admin = Admin::new(&args.options)?;
    let changes = args
        .grants
        .iter()
        .map(|g| parse_grant(g))
        .collect::<Result<Vec<_>>>()?;
    let role = admin
        .call(&admin.request(Method::GET, &["roles", &args.name]))
        .await?;
    let mut grants: Vec<Value> = role
        .body
        .get("grants")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for change in &changes {
        let position = grants.iter().position(|g| same_grant(g, change));
        match (add, position) {
            (true, None) => grants.push(change.clone()),
            (false, Some(i)) => {
                grants.remove(i);
            }
            (true, Some(_)) => {}
            (false, None) => {
                return Err(CliError::not_found(format!(
                    "role {} has no grant {}",
                    args.name,
                    show_grant(change)
                )));
            }
        }
    }
    let mut body = json!({ "grants": grants });
    for kept in ["disabled", "version"] {
        if let Some(value) = role.body.get(kept) {
            body[kept] = value.clone();
        }
    }
    let answer = admin
        .call(
            &admin
                .request(Method::PUT, &["roles", &args.name])
                .json(body),
        )
        .await?;
    let done = if add { "Granted" } else { "Revoked" };
    let what: Vec<String> = changes.iter().map(show_grant).collect();
    admin.done(
        &answer,
        &format!("{done} {} on role {}.", what.join(", "), args.name),
    )
}

/// Two grants are the same when privilege, resource and branches are (a missing pattern is
/// `*`).
fn same_grant(a: &Value, b: &Value) -> bool {
    let branches = |g: &Value| {
        g.get("branches")
            .and_then(Value::as_str)
            .unwrap_or("*")
            .to_owned()
    };
    a.get("privilege") == b.get("privilege")
        && a.get("resource") == b.get("resource")
        && branches(a) == branches(b)
}

/// `PRIVILEGE:RESOURCE[@BRANCHES]` as the API's grant.
fn parse_grant(text: &str) -> Result<Value> {
    let bad = || CliError::usage(format!("`{text}` is not a grant: {GRANT_SYNTAX}"));
    let (grant, branches) = match text.split_once('@') {
        Some((grant, branches)) if !branches.is_empty() => (grant, Some(branches)),
        Some(_) => return Err(bad()),
        None => (text, None),
    };
    let (privilege, resource) = grant.split_once(':').ok_or_else(bad)?;
    if privilege.is_empty() {
        return Err(bad());
    }
    let (kind, path) = match resource.split_once(':') {
        Some((kind, path)) => (kind, Some(path)),
        None => (resource, None),
    };
    let resource = match (kind, path) {
        ("tenant", None) => json!({ "type": "tenant" }),
        ("catalog", Some(catalog)) if !catalog.is_empty() && !catalog.contains('.') => {
            json!({ "type": "catalog", "catalog": catalog })
        }
        ("namespace", Some(path)) => {
            let mut levels = key::parse(path).map_err(|_| bad())?;
            if levels.len() < 2 {
                return Err(bad());
            }
            let catalog = levels.remove(0);
            json!({ "type": "namespace", "catalog": catalog, "namespace": levels })
        }
        ("table", Some(path)) => {
            let mut levels = key::parse(path).map_err(|_| bad())?;
            if levels.len() < 3 {
                return Err(bad());
            }
            let catalog = levels.remove(0);
            let name = levels.pop().ok_or_else(bad)?;
            json!({ "type": "table", "catalog": catalog, "namespace": levels, "name": name })
        }
        _ => return Err(bad()),
    };
    let mut grant = json!({ "privilege": privilege.to_ascii_lowercase(), "resource": resource });
    if let Some(branches) = branches {
        grant["branches"] = Value::String(branches.to_owned());
    }
    Ok(grant)
}

/// A role's grants, comma-separated, in the syntax `parse_grant` reads.
fn grants_of(role: &Value) -> String {
    role.get("grants")
        .and_then(Value::as_array)
        .map(|grants| grants.iter().map(show_grant).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// A grant from the server in the syntax `parse_grant` reads.
fn show_grant(grant: &Value) -> String {
    let privilege = grant.get("privilege").map(text).unwrap_or_default();
    let resource = grant.get("resource").unwrap_or(&Value::Null);
    let field = |name: &str| resource.get(name).map(text).unwrap_or_default();
    let levels = resource
        .get("namespace")
        .map(key::display)
        .unwrap_or_default();
    let place = match field("type").as_str() {
        "tenant" => "tenant".to_owned(),
        "catalog" => format!("catalog:{}", field("catalog")),
        "namespace" => format!("namespace:{}.{levels}", field("catalog")),
        "table" | "view" => format!(
            "{}:{}.{levels}.{}",
            field("type"),
            field("catalog"),
            field("name")
        ),
        _ => resource.to_string(),
    };
    match grant.get("branches").and_then(Value::as_str) {
        Some(branches) if branches != "*" => format!("{privilege}:{place}@{branches}"),
        _ => format!("{privilege}:{place}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_parse_and_print_back() {
        for text in [
            "read:catalog:lake",
            "write:namespace:lake.sales@dev*",
            "read:namespace:lake.sales.eu",
            "drop:table:lake.sales.orders",
            "manage-users:tenant",
        ] {
            let grant = parse_grant(text).unwrap();
            assert_eq!(show_grant(&grant), text, "{grant}");
        }
        assert_eq!(
            parse_grant("write:table:lake.sales.orders@main").unwrap(),
            json!({"privilege": "write", "branches": "main",
                   "resource": {"type": "table", "catalog": "lake", "namespace": ["sales"], "name": "orders"}})
        );
    }

    #[test]
    fn malformed_grants_are_refused_with_the_syntax() {
        for bad in [
            "read",
            "read:",
            ":catalog:lake",
            "read:catalog",
            "read:catalog:",
            "read:namespace:lake",
            "read:table:lake.orders",
            "read:bucket:lake",
            "read:catalog:lake@",
            "read:tenant:acme",
        ] {
            let error = parse_grant(bad).unwrap_err();
            assert!(
                error.message.contains("PRIVILEGE:RESOURCE"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn grants_are_the_same_whatever_the_default_branches() {
        let a = parse_grant("read:catalog:lake").unwrap();
        let b = parse_grant("read:catalog:lake@*").unwrap();
        assert!(same_grant(&a, &b));
        assert!(!same_grant(
            &a,
            &parse_grant("read:catalog:lake@main").unwrap()
        ));
    }
}
