//! `pangolin admin`: tenants, warehouses, catalogs, users, service users, API keys and roles,
//! through the admin API (`docs/management-api.md`).

mod catalog;
mod key;
mod role;
mod service_user;
mod tenant;
mod user;
mod warehouse;

use reqwest::Method;
use serde_json::Value;

use crate::client::{Answer, Paging, Request};
use crate::context::{Context, print_json};
use crate::error::Result;
use crate::json::{Ordered, join_pages};
use crate::output::{Cell, Paint, Table};
use crate::profile::GlobalArgs;

/// Root chooses the tenant it acts in with this header; the server ignores it for others.
const TENANT_HEADER: &str = "x-pangolin-tenant";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin tenant create acme --admin ana",
        "pangolin login --tenant acme --user ana --profile acme",
        "pangolin admin warehouse create lake --root /srv/lake --profile acme",
        "pangolin admin catalog create sales --warehouse lake --profile acme",
        "pangolin admin user create bob --profile acme",
        "pangolin admin role create readers --grant read:catalog:sales --profile acme",
        "pangolin admin role add-member readers user:acme/bob --profile acme",
        "pangolin admin service-user create etl --profile acme",
        "pangolin admin key create etl --profile acme",
    ],
    "Each command acts in the tenant of whoever is signed in; root acts in the default tenant\n\
     unless given --tenant. Tenants are root's; users, service users and keys need\n\
     ManageUsers; warehouses and catalogs ManageCatalogs; roles ManageGrants, and nobody\n\
     grants what it does not hold itself.",
))]
pub(crate) struct AdminArgs {
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AdminCommand {
    /// Create, list, show or delete tenants (root only).
    Tenant(tenant::TenantArgs),
    /// Create, list, show or delete the tenant's warehouses.
    Warehouse(warehouse::WarehouseArgs),
    /// Create, list or delete the tenant's catalogs.
    Catalog(catalog::CatalogArgs),
    /// Create, list, delete, disable or enable users, or reset their passwords.
    User(user::UserArgs),
    /// Create, list or delete service users (programs that sign in with API keys).
    ServiceUser(service_user::ServiceUserArgs),
    /// Create, list, revoke or rotate a service user's API keys.
    Key(key::KeyArgs),
    /// Create, show or delete roles, change their grants and members.
    Role(role::RoleArgs),
}

pub(crate) async fn run(args: AdminArgs) -> Result<()> {
    match args.command {
        AdminCommand::Tenant(args) => tenant::run(args).await,
        AdminCommand::Warehouse(args) => warehouse::run(args).await,
        AdminCommand::Catalog(args) => catalog::run(args).await,
        AdminCommand::User(args) => user::run(args).await,
        AdminCommand::ServiceUser(args) => service_user::run(args).await,
        AdminCommand::Key(args) => key::run(args).await,
        AdminCommand::Role(args) => role::run(args).await,
    }
}

/// The options every admin command takes.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AdminOptions {
    #[command(flatten)]
    global: GlobalArgs,
    /// Root only: act in this tenant instead of the default one.
    #[arg(long, global = true, value_name = "TENANT")]
    tenant: Option<String>,
}

/// What an admin command works with: the client, how to print, the tenant to act in.
#[derive(Debug)]
pub(crate) struct Admin {
    ctx: Context,
    tenant: Option<String>,
}

/// A column of a list: its header and how to find its text in each item.
type Column = (&'static str, Find);

/// How a column finds its text: at a JSON pointer, or worked out from the whole item.
#[derive(Debug, Clone, Copy)]
enum Find {
    At(&'static str),
    From(fn(&Value) -> String),
}

impl Admin {
    fn new(options: &AdminOptions) -> Result<Self> {
        Ok(Self {
            ctx: Context::new(&options.global)?,
            tenant: options.tenant.clone().filter(|t| !t.trim().is_empty()),
        })
    }

    /// A request under `/api/v1/`, in the chosen tenant.
    fn request(&self, method: Method, segments: &[&str]) -> Request {
        Request::api(method, segments).header_opt(TENANT_HEADER, self.tenant.clone())
    }

    /// Sends a request that must succeed.
    async fn call(&self, request: &Request) -> Result<Answer> {
        self.ctx.client.call(request).await
    }

    /// Every page of a list, as a table of `columns` or, with `--json`, one joined answer.
    async fn list(&self, segments: &[&str], field: &str, columns: &[Column]) -> Result<()> {
        let request = self.request(Method::GET, segments);
        let answers = self
            .ctx
            .client
            .pages_with(
                Paging::KEBAB,
                &request,
                field,
                None,
                crate::client::MAX_PAGE,
                |_| Ok(()),
            )
            .await?;
        if self.ctx.json {
            let pages = answers
                .iter()
                .map(|a| a.ordered())
                .collect::<Result<Vec<_>>>()?;
            print_json(&join_pages(pages, field, None));
            return Ok(());
        }
        let headers: Vec<&str> = columns.iter().map(|(header, _)| *header).collect();
        let mut table = Table::with_header(&headers);
        let items = answers
            .iter()
            .filter_map(|a| a.body.get(field).and_then(Value::as_array))
            .flatten();
        for item in items {
            table.row(
                columns
                    .iter()
                    .enumerate()
                    .map(|(i, (_, how))| {
                        let text = match how {
                            Find::At(pointer) => {
                                text(item.pointer(pointer).unwrap_or(&Value::Null))
                            }
                            Find::From(render) => render(item),
                        };
                        if i == 0 {
                            Cell::painted(text, Paint::Bold)
                        } else {
                            Cell::new(text)
                        }
                    })
                    .collect(),
            );
        }
        if table.is_empty() {
            println!("None.");
        } else {
            print!("{}", table.render(self.ctx.style, 0));
        }
        Ok(())
    }

    /// One record: its JSON with `--json`, else one `field: value` line per field set, in
    /// the server's order, nested fields dotted (`storage.root`).
    fn show(&self, answer: &Answer) -> Result<()> {
        if self.ctx.json {
            return self.ctx.print_answer(answer);
        }
        let mut lines = Vec::new();
        flatten("", &answer.ordered()?, &mut lines);
        let mut table = Table::without_header();
        for (name, value) in lines {
            table.row(vec![
                Cell::painted(format!("{name}:"), Paint::Bold),
                Cell::new(value),
            ]);
        }
        print!("{}", table.render(self.ctx.style, 0));
        Ok(())
    }

    /// After a change: the server's answer with `--json` (`{}` when it sent none), else
    /// the sentence.
    fn done(&self, answer: &Answer, sentence: &str) -> Result<()> {
        if self.ctx.json {
            match answer.ordered()? {
                Ordered::Null => println!("{{}}"),
                body => print_json(&body),
            }
        } else {
            println!("{sentence}");
        }
        Ok(())
    }
}

/// The fields of `value` as `(dotted name, text)`, leaving out those not set.
fn flatten(prefix: &str, value: &Ordered, out: &mut Vec<(String, String)>) {
    match value {
        Ordered::Null => {}
        Ordered::Object(fields) => {
            for (name, field) in fields {
                let name = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                flatten(&name, field, out);
            }
        }
        Ordered::String(s) => out.push((prefix.to_owned(), s.clone())),
        Ordered::Bool(b) => out.push((prefix.to_owned(), text(&Value::Bool(*b)))),
        Ordered::Number(n) => out.push((prefix.to_owned(), n.to_string())),
        Ordered::Array(items) => {
            let texts: Vec<String> = items
                .iter()
                .map(|item| match item {
                    Ordered::String(s) => s.clone(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                })
                .collect();
            out.push((prefix.to_owned(), texts.join(", ")));
        }
    }
}

/// A JSON value as people read it in a cell.
fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        Value::Array(items) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_read_as_text() {
        assert_eq!(text(&json!(null)), "");
        assert_eq!(text(&json!("lake")), "lake");
        assert_eq!(text(&json!(true)), "yes");
        assert_eq!(text(&json!(["a", "b"])), "a, b");
        assert_eq!(text(&json!(3)), "3");
        assert_eq!(text(&json!({"type": "local"})), r#"{"type":"local"}"#);
    }

    #[test]
    fn records_show_their_fields_dotted_in_the_servers_order() {
        let record = Ordered::parse(
            r#"{"name": "lake", "storage": {"type": "local", "root": "/srv"},
                "credentials": null, "tags": ["a", "b"], "version": 2, "disabled": false}"#,
        )
        .unwrap();
        let mut lines = Vec::new();
        flatten("", &record, &mut lines);
        let expected = [
            ("name", "lake"),
            ("storage.type", "local"),
            ("storage.root", "/srv"),
            ("tags", "a, b"),
            ("version", "2"),
            ("disabled", "no"),
        ];
        let lines: Vec<(&str, &str)> = lines
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(lines, expected);
    }
}
