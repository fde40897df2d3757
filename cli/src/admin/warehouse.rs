//! `pangolin admin warehouse`: where the tenant's catalogs keep their files.

use reqwest::Method;
use serde_json::{Map, Value, json};

use super::{Admin, AdminOptions, Find};
use crate::error::{CliError, Result};
use crate::secret;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin warehouse create lake --root /srv/pangolin/lake",
        "pangolin admin warehouse create s3lake --s3-bucket analytics --prefix lake --region eu-west-1",
        "pangolin admin warehouse list",
        "pangolin admin warehouse show lake --json",
        "pangolin admin warehouse delete lake",
    ],
    "Needs ManageCatalogs on the tenant. Credentials are never shown back: only which fields\n\
     are set.",
))]
pub(crate) struct WarehouseArgs {
    #[command(subcommand)]
    command: WarehouseCommand,
}

#[derive(Debug, clap::Subcommand)]
enum WarehouseCommand {
    /// Create a warehouse on a local directory, an S3 bucket, an Azure container or a GCS
    /// bucket.
    Create(Box<CreateArgs>),
    /// List the tenant's warehouses.
    List(NoArgs),
    /// Show a warehouse (credentials only as the fields that are set).
    Show(NameArgs),
    /// Delete a warehouse.
    Delete(NameArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin warehouse create lake --root /srv/pangolin/lake",
        "pangolin admin warehouse create s3lake --s3-bucket analytics --prefix lake \\\n      --endpoint http://127.0.0.1:9000 --path-style --access-key-id minio",
        "pangolin admin warehouse create vended --s3-bucket analytics --region eu-west-1 \\\n      --access-key-id AKIA... --role-arn arn:aws:iam::123456789012:role/lake-access \\\n      --external-id acme --credential-lifetime 1800",
        "pangolin admin warehouse create adls --azure-account acme --azure-container lake \\\n      --prefix warehouse --azure-account-key --sas-lifetime 1800",
        "pangolin admin warehouse create gcs --gcs-bucket analytics --prefix lake \\\n      --service-account-key lake-sa.json --downscope",
    ],
    "With --access-key-id, the secret access key is read from the terminal without echo, from\n\
     standard input with --secret-access-key-stdin (or when it is not a terminal), or from\n\
     PANGOLIN_S3_SECRET_ACCESS_KEY.",
))]
struct CreateArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The warehouse's name.
    name: String,
    /// A directory on the server: an absolute path or a file:// URL.
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with_all = ["s3_bucket", "azure_account", "gcs_bucket"],
        required_unless_present_any = ["s3_bucket", "azure_account", "gcs_bucket"]
    )]
    root: Option<String>,
    /// An S3 (or S3-compatible) bucket.
    #[arg(long, value_name = "BUCKET", conflicts_with_all = ["azure_account", "gcs_bucket"])]
    s3_bucket: Option<String>,
    /// A Google Cloud Storage bucket.
    #[arg(long, value_name = "BUCKET", conflicts_with = "azure_account")]
    gcs_bucket: Option<String>,
    /// The JSON key file of the Google service account the server uses for the bucket (and
    /// downscopes tokens from); without one, the machine's own credentials.
    #[arg(
        long,
        value_name = "FILE",
        requires = "gcs_bucket",
        conflicts_with_all = ["root", "s3_bucket", "azure_account"]
    )]
    service_account_key: Option<std::path::PathBuf>,
    /// Vend clients OAuth tokens downscoped to each table's prefixes (needs the service
    /// account's key). Tried once before the warehouse is created.
    #[arg(long, requires = "service_account_key")]
    downscope: bool,
    /// The token exchange that downscopes tokens [default: Google's].
    #[arg(long, value_name = "URL", requires = "downscope")]
    token_exchange: Option<String>,
    /// An Azure storage account (ADLS Gen2), with --azure-container.
    #[arg(long, value_name = "ACCOUNT", requires = "azure_container")]
    azure_account: Option<String>,
    /// The container of that account.
    #[arg(long, value_name = "CONTAINER", requires = "azure_account")]
    azure_container: Option<String>,
    /// The account's key (read like the S3 secret: terminal, --account-key-stdin or
    /// PANGOLIN_AZURE_ACCOUNT_KEY).
    #[arg(long, requires = "azure_account")]
    azure_account_key: bool,
    /// Read the account key from the first line of standard input.
    #[arg(long, requires = "azure_account_key")]
    account_key_stdin: bool,
    /// Vend clients SAS tokens scoped to each table's directory, living this many seconds
    /// (needs the account key).
    #[arg(long, value_name = "SECONDS", requires = "azure_account_key")]
    sas_lifetime: Option<u64>,
    /// The folder inside the bucket or container.
    #[arg(long, conflicts_with = "root")]
    prefix: Option<String>,
    /// The bucket's region.
    #[arg(long, requires = "s3_bucket")]
    region: Option<String>,
    /// An S3-compatible server's URL, or an Azure account's or GCS's URL other than the
    /// provider's own (an emulator).
    #[arg(long, value_name = "URL", conflicts_with = "root")]
    endpoint: Option<String>,
    /// Address the bucket in the path, as most S3-compatible servers want.
    #[arg(long, requires = "s3_bucket")]
    path_style: bool,
    /// Hand clients the warehouse's own keys in every table's config. Prefer --role-arn.
    #[arg(long, requires = "s3_bucket")]
    hand_out_credentials: bool,
    /// Vend clients short-lived credentials scoped to each table, from this role
    /// (arn:aws:iam::<account>:role/<name>), assumed with the warehouse's keys. Tried once
    /// before the warehouse is created.
    #[arg(long, value_name = "ARN", requires_all = ["s3_bucket", "access_key_id"])]
    role_arn: Option<String>,
    /// The external id the role's trust policy asks for.
    #[arg(long, value_name = "ID", requires = "role_arn")]
    external_id: Option<String>,
    /// The STS endpoint [default: --endpoint, else AWS's].
    #[arg(long, value_name = "URL", requires = "role_arn")]
    sts_endpoint: Option<String>,
    /// The STS region [default: --region].
    #[arg(long, value_name = "REGION", requires = "role_arn")]
    sts_region: Option<String>,
    /// How long vended credentials live, in seconds (AWS: 900 to 43200) [default: 900].
    #[arg(long, value_name = "SECONDS", requires = "role_arn")]
    credential_lifetime: Option<u64>,
    /// Sign clients' requests for a table's files when they ask for remote signing.
    #[arg(long, requires_all = ["s3_bucket", "access_key_id"])]
    remote_signing: bool,
    /// A static access key id for the bucket.
    #[arg(long, value_name = "ID", requires = "s3_bucket")]
    access_key_id: Option<String>,
    /// Read the secret access key from the first line of standard input.
    #[arg(long, requires = "access_key_id")]
    secret_access_key_stdin: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(&["pangolin admin warehouse list --json"], ""))]
struct NoArgs {
    #[command(flatten)]
    options: AdminOptions,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin admin warehouse show lake", "pangolin admin warehouse delete lake"],
    "",
))]
struct NameArgs {
    #[command(flatten)]
    options: AdminOptions,
    /// The warehouse's name.
    name: String,
}

pub(crate) async fn run(args: WarehouseArgs) -> Result<()> {
    match args.command {
        WarehouseCommand::Create(args) => create(*args).await,
        WarehouseCommand::List(args) => {
            let admin = Admin::new(&args.options)?;
            admin
                .list(
                    &["warehouses"],
                    "warehouses",
                    &[
                        ("NAME", Find::At("/name")),
                        ("STORAGE", Find::At("/storage/type")),
                        ("LOCATION", Find::From(location)),
                        ("CREDENTIALS", Find::At("/credentials/fields-set")),
                    ],
                )
                .await
        }
        WarehouseCommand::Show(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(&admin.request(Method::GET, &["warehouses", &args.name]))
                .await?;
            admin.show(&answer)
        }
        WarehouseCommand::Delete(args) => {
            let admin = Admin::new(&args.options)?;
            let answer = admin
                .call(&admin.request(Method::DELETE, &["warehouses", &args.name]))
                .await?;
            admin.done(&answer, &format!("Deleted warehouse {}.", args.name))
        }
    }
}

/// Where a warehouse's files are, as a URL-like text: the local root, `s3://bucket/prefix`.
fn location(warehouse: &Value) -> String {
    let storage = &warehouse["storage"];
    let field = |name: &str| storage.get(name).and_then(Value::as_str).unwrap_or("");
    match field("type") {
        "local" => field("root").to_owned(),
        "s3" | "gcs" => {
            let scheme = if field("type") == "s3" { "s3" } else { "gs" };
            let prefix = field("prefix").trim_matches('/');
            if prefix.is_empty() {
                format!("{scheme}://{}", field("bucket"))
            } else {
                format!("{scheme}://{}/{prefix}", field("bucket"))
            }
        }
        "azure" => {
            let root = format!(
                "abfss://{}@{}.dfs.core.windows.net",
                field("container"),
                field("account")
            );
            match field("prefix").trim_matches('/') {
                "" => root,
                prefix => format!("{root}/{prefix}"),
            }
        }
        _ => String::new(),
    }
}

/// The request body's `storage` and `credentials` from the options.
fn body(args: &CreateArgs, secret_access_key: Option<String>) -> Result<Value> {
    let storage = match (&args.root, &args.s3_bucket) {
        (Some(root), None) => json!({ "type": "local", "root": root }),
        (None, Some(bucket)) => {
            let mut s3 = Map::new();
            s3.insert("type".into(), "s3".into());
            s3.insert("bucket".into(), bucket.clone().into());
            for (name, value) in [
                ("prefix", &args.prefix),
                ("region", &args.region),
                ("endpoint", &args.endpoint),
            ] {
                if let Some(value) = value {
                    s3.insert(name.into(), value.clone().into());
                }
            }
            if args.path_style {
                s3.insert("path-style".into(), true.into());
            }
            if args.hand_out_credentials {
                s3.insert("hand-out-credentials".into(), true.into());
            }
            if let Some(role_arn) = &args.role_arn {
                let mut sts = Map::new();
                sts.insert("role-arn".into(), role_arn.clone().into());
                for (name, value) in [
                    ("external-id", &args.external_id),
                    ("endpoint", &args.sts_endpoint),
                    ("region", &args.sts_region),
                ] {
                    if let Some(value) = value {
                        sts.insert(name.into(), value.clone().into());
                    }
                }
                if let Some(seconds) = args.credential_lifetime {
                    sts.insert("lifetime-seconds".into(), seconds.into());
                }
                s3.insert("sts".into(), Value::Object(sts));
            }
            if args.remote_signing {
                s3.insert("remote-signing".into(), true.into());
            }
            Value::Object(s3)
        }
        (None, None) if args.azure_account.is_some() => {
            let mut azure = Map::new();
            azure.insert("type".into(), "azure".into());
            for (name, value) in [
                ("account", &args.azure_account),
                ("container", &args.azure_container),
                ("prefix", &args.prefix),
                ("endpoint", &args.endpoint),
            ] {
                if let Some(value) = value {
                    azure.insert(name.into(), value.clone().into());
                }
            }
            if let Some(seconds) = args.sas_lifetime {
                azure.insert("sas".into(), json!({ "lifetime-seconds": seconds }));
            }
            Value::Object(azure)
        }
        (None, None) if args.gcs_bucket.is_some() => {
            let mut gcs = Map::new();
            gcs.insert("type".into(), "gcs".into());
            for (name, value) in [
                ("bucket", &args.gcs_bucket),
                ("prefix", &args.prefix),
                ("endpoint", &args.endpoint),
            ] {
                if let Some(value) = value {
                    gcs.insert(name.into(), value.clone().into());
                }
            }
            if args.downscope {
                let mut downscope = Map::new();
                if let Some(url) = &args.token_exchange {
                    downscope.insert("token-exchange".into(), url.clone().into());
                }
                gcs.insert("downscope".into(), Value::Object(downscope));
            }
            Value::Object(gcs)
        }
        _ => {
            return Err(CliError::usage(
                "give the warehouse's storage: --root PATH, --s3-bucket BUCKET, \
                 --azure-account ACCOUNT --azure-container CONTAINER or --gcs-bucket BUCKET",
            ));
        }
    };
    let mut body = json!({ "name": args.name, "storage": storage });
    if args.gcs_bucket.is_some() {
        if let Some(key) = secret_access_key {
            body["credentials"] = json!({ "type": "gcs", "service-account-key": key });
        }
        return Ok(body);
    }
    if args.azure_account.is_some() {
        if let Some(key) = secret_access_key {
            body["credentials"] = json!({ "type": "azure", "account-key": key });
        }
        return Ok(body);
    }
    if let (Some(id), Some(secret)) = (&args.access_key_id, secret_access_key) {
        body["credentials"] = json!({
            "type": "s3",
            "access-key-id": id,
            "secret-access-key": secret,
        });
    }
    Ok(body)
}

async fn create(args: CreateArgs) -> Result<()> {
    let admin = Admin::new(&args.options)?;
    let secret_access_key = match (&args.access_key_id, &args.azure_account) {
        (Some(id), _) => Some(secret::read(
            &format!("Secret access key for {id}: "),
            args.secret_access_key_stdin,
            "PANGOLIN_S3_SECRET_ACCESS_KEY",
        )?),
        (None, Some(account)) if args.azure_account_key => Some(secret::read(
            &format!("Account key for {account}: "),
            args.account_key_stdin,
            "PANGOLIN_AZURE_ACCOUNT_KEY",
        )?),
        _ => match &args.service_account_key {
            Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
                CliError::usage(format!(
                    "cannot read the service account key {}: {e}",
                    path.display()
                ))
            })?),
            None => None,
        },
    };
    let body = body(&args, secret_access_key)?;
    let answer = admin
        .call(&admin.request(Method::POST, &["warehouses"]).json(body))
        .await?;
    admin.done(&answer, &format!("Created warehouse {}.", args.name))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: CreateArgs,
    }

    fn parse(args: &[&str]) -> CreateArgs {
        let mut all = vec!["create"];
        all.extend_from_slice(args);
        Wrapper::try_parse_from(all).unwrap().args
    }

    #[test]
    fn locations_read_like_urls() {
        let local = json!({"storage": {"type": "local", "root": "/srv/lake"}});
        assert_eq!(location(&local), "/srv/lake");
        let s3 = json!({"storage": {"type": "s3", "bucket": "b", "prefix": "/lake/"}});
        assert_eq!(location(&s3), "s3://b/lake");
        assert_eq!(
            location(&json!({"storage": {"type": "s3", "bucket": "b"}})),
            "s3://b"
        );
        let azure = json!({"storage": {"type": "azure", "account": "a", "container": "c",
                                       "prefix": "wh"}});
        assert_eq!(location(&azure), "abfss://c@a.dfs.core.windows.net/wh");
        let gcs = json!({"storage": {"type": "gcs", "bucket": "b", "prefix": "wh"}});
        assert_eq!(location(&gcs), "gs://b/wh");
    }

    #[test]
    fn storage_comes_from_the_options() {
        let local = parse(&["lake", "--root", "/srv/lake"]);
        assert_eq!(
            body(&local, None).unwrap(),
            json!({"name": "lake", "storage": {"type": "local", "root": "/srv/lake"}})
        );
        let s3 = parse(&[
            "lake",
            "--s3-bucket",
            "b",
            "--region",
            "eu",
            "--path-style",
            "--access-key-id",
            "id",
        ]);
        assert_eq!(
            body(&s3, Some("shh".into())).unwrap(),
            json!({"name": "lake",
                   "storage": {"type": "s3", "bucket": "b", "region": "eu", "path-style": true},
                   "credentials": {"type": "s3", "access-key-id": "id", "secret-access-key": "shh"}})
        );
        let vended = parse(&[
            "lake",
            "--s3-bucket",
            "b",
            "--access-key-id",
            "id",
            "--role-arn",
            "arn:aws:iam::1:role/r",
            "--external-id",
            "acme",
            "--sts-endpoint",
            "http://127.0.0.1:9000",
            "--credential-lifetime",
            "1800",
            "--remote-signing",
        ]);
        assert_eq!(
            body(&vended, Some("shh".into())).unwrap()["storage"],
            json!({"type": "s3", "bucket": "b", "remote-signing": true,
                   "sts": {"role-arn": "arn:aws:iam::1:role/r", "external-id": "acme",
                           "endpoint": "http://127.0.0.1:9000", "lifetime-seconds": 1800}})
        );
        let azure = parse(&[
            "lake",
            "--azure-account",
            "acct",
            "--azure-container",
            "lake",
            "--prefix",
            "wh",
            "--azure-account-key",
            "--sas-lifetime",
            "1800",
        ]);
        assert_eq!(
            body(&azure, Some("a2V5".into())).unwrap(),
            json!({"name": "lake",
                   "storage": {"type": "azure", "account": "acct", "container": "lake",
                               "prefix": "wh", "sas": {"lifetime-seconds": 1800}},
                   "credentials": {"type": "azure", "account-key": "a2V5"}})
        );
        let gcs = parse(&[
            "lake",
            "--gcs-bucket",
            "b",
            "--prefix",
            "wh",
            "--endpoint",
            "http://127.0.0.1:4443",
            "--service-account-key",
            "sa.json",
            "--downscope",
            "--token-exchange",
            "http://127.0.0.1:4443/v1/token",
        ]);
        assert_eq!(
            body(&gcs, Some("{}".into())).unwrap(),
            json!({"name": "lake",
                   "storage": {"type": "gcs", "bucket": "b", "prefix": "wh",
                               "endpoint": "http://127.0.0.1:4443",
                               "downscope": {"token-exchange": "http://127.0.0.1:4443/v1/token"}},
                   "credentials": {"type": "gcs", "service-account-key": "{}"}})
        );
        let plain = parse(&["lake", "--gcs-bucket", "b"]);
        assert_eq!(
            body(&plain, None).unwrap(),
            json!({"name": "lake", "storage": {"type": "gcs", "bucket": "b"}})
        );
        // Vending and signing use the warehouse's keys, so they need them.
        for flags in [
            &["lake", "--gcs-bucket", "b", "--downscope"][..],
            &["lake", "--gcs-bucket", "b", "--s3-bucket", "c"],
            &["lake", "--root", "/a", "--service-account-key", "sa.json"],
            &[
                "lake",
                "--s3-bucket",
                "b",
                "--service-account-key",
                "sa.json",
            ],
            &[
                "lake",
                "--s3-bucket",
                "b",
                "--role-arn",
                "arn:aws:iam::1:role/r",
            ][..],
            &["lake", "--s3-bucket", "b", "--remote-signing"],
            &["lake", "--root", "/a", "--external-id", "x"],
            &[
                "lake",
                "--azure-account",
                "a",
                "--azure-container",
                "c",
                "--sas-lifetime",
                "60",
            ],
            &["lake", "--azure-account", "a"],
            &[
                "lake",
                "--azure-account",
                "a",
                "--azure-container",
                "c",
                "--s3-bucket",
                "b",
            ],
        ] {
            let mut all = vec!["create"];
            all.extend_from_slice(flags);
            assert!(Wrapper::try_parse_from(all).is_err(), "{flags:?}");
        }
        assert!(Wrapper::try_parse_from(["create", "lake"]).is_err());
        assert!(
            Wrapper::try_parse_from(["create", "lake", "--root", "/a", "--s3-bucket", "b"])
                .is_err()
        );
    }
}
