//! `pangolin remote`, `fetch`, `push`, `pull` and `clone`: history exchanged with a catalog
//! on another Pangolin server, as git exchanges it between repositories.
//!
//! This client carries every transfer: it asks one server for a pack (naming the commits the
//! other holds, so only what is missing is sent), keeps it in a temporary file while checking
//! it, and hands it to the other server, which checks it again and moves refs only once all
//! of it arrived whole. Each server authorizes the credentials this client holds for it.

use std::collections::BTreeSet;

use pangolin_catalog::bundle::verify;
use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::bundle::{self, receive};
use crate::client::{Client, MAX_PAGE};
use crate::context::Context;
use crate::error::{CliError, Exit, Result};
use crate::merge::{Operation, submit};
use crate::output::short;
use crate::profile::{self, GlobalArgs, Profiles};

/// The answer header naming the sender's warehouse.
const WAREHOUSE_HEADER: &str = "pangolin-warehouse";

const TRANSFER: &str = "\
Table files are not copied: table metadata keeps the locations it has, so a remote whose
warehouse differs is warned about. The remote server is signed in to with --remote-api-key,
else with --remote-profile, else with the saved profile whose server is the remote's URL.";

/// How this client signs in to the remote server.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct RemoteAuth {
    /// A service user's API key on the remote server.
    #[arg(
        long,
        env = "PANGOLIN_REMOTE_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    remote_api_key: Option<String>,
    /// The saved profile to sign in to the remote server with.
    #[arg(long, env = "PANGOLIN_REMOTE_PROFILE", value_name = "NAME")]
    remote_profile: Option<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin remote add origin http://lake.example:8080 --remote-catalog lake",
        "pangolin remote list",
        "pangolin remote show origin",
        "pangolin remote remove origin",
    ],
    "A remote names a catalog on another Pangolin server; `fetch`, `push` and `pull` use it.\n\
     Adding and removing one needs the right to manage the catalog. Credentials for the\n\
     remote server stay with this client, never in the catalog.",
))]
pub(crate) struct RemoteArgs {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: RemoteCommand,
}

#[derive(Debug, clap::Subcommand)]
enum RemoteCommand {
    /// Add a remote.
    Add {
        name: String,
        /// The remote server, http://host:port.
        url: String,
        /// The catalog on the remote server [default: this catalog's name].
        #[arg(long, value_name = "NAME")]
        remote_catalog: Option<String>,
    },
    /// List the remotes.
    List,
    /// Show a remote and its branches and tags as of the last fetch.
    Show { name: String },
    /// Remove a remote and its tracking refs.
    Remove { name: String },
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin fetch origin"],
    &format!(
        "Brings the remote catalog's commits this catalog lacks and records where its\n\
         branches and tags are (shown by `remote show`; merge them with `pull`). Needs read on\n\
         the remote catalog and write on this one.\n\n{TRANSFER}"
    ),
))]
pub(crate) struct FetchArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The remote.
    remote: String,
    #[command(flatten)]
    auth: RemoteAuth,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin push origin dev", "pangolin push origin main --force"],
    &format!(
        "Sends the branch's commits the remote lacks and moves the remote's branch of the same\n\
         name from where it was to this branch's head, only when that is a fast-forward\n\
         (exit 1 otherwise: pull, then push again). --force moves it anyway, dropping the\n\
         remote's commits from the branch; the remote audits it. Needs write on the remote\n\
         branch, and the right to manage refs there to create it or force it.\n\n{TRANSFER}"
    ),
))]
pub(crate) struct PushArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The remote.
    remote: String,
    /// The branch to push.
    branch: String,
    /// Move the remote branch even when this is not a fast-forward.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    auth: RemoteAuth,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin pull origin main",
        "pangolin pull origin main --into staging --table-merge auto",
    ],
    &format!(
        "Fetches, then merges the remote's branch into the branch of the same name (or\n\
         --into): a fast-forward when this branch has nothing of its own, else a merge commit,\n\
         with conflicts as `merge` prints them.\n\n{TRANSFER}"
    ),
))]
pub(crate) struct PullArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The remote.
    remote: String,
    /// The remote's branch.
    branch: String,
    /// The branch to merge into [default: the remote branch's name].
    #[arg(long, value_name = "BRANCH")]
    into: Option<String>,
    /// `auto`: merge a table both sides changed when the changes commute [default: the
    /// catalog's].
    #[arg(long, value_parser = ["auto", "off"])]
    table_merge: Option<String>,
    #[command(flatten)]
    auth: RemoteAuth,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin catalog create lake --warehouse files",
        "pangolin clone http://lake.example:8080 --catalog lake --from lake",
    ],
    &format!(
        "Copies every branch, tag and commit of the remote catalog into this catalog, which\n\
         must be new (nothing but its first, empty commit), and adds the remote (`origin`\n\
         unless --remote) with its tracking refs. Commits keep their hashes. Needs read on\n\
         the remote catalog and the right to manage this one.\n\n{TRANSFER}"
    ),
))]
pub(crate) struct CloneArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The remote server, http://host:port.
    url: String,
    /// The catalog on the remote server [default: this catalog's name].
    #[arg(long, value_name = "NAME")]
    from: Option<String>,
    /// The name to give the remote.
    #[arg(long, default_value = "origin", value_name = "NAME")]
    remote: String,
    #[command(flatten)]
    auth: RemoteAuth,
}

/// A remote as this catalog records it.
struct RemoteInfo {
    name: String,
    url: String,
    catalog: String,
    /// Tracking refs: (type, name, hash).
    refs: Vec<(String, String, String)>,
}

impl RemoteInfo {
    fn from_json(body: &Value) -> Result<Self> {
        let text = |field: &str| {
            body.get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| CliError::server(format!("the remote has no `{field}`")))
        };
        Ok(Self {
            name: text("name")?,
            url: text("url")?,
            catalog: text("catalog")?,
            refs: ref_triples(body.get("refs")),
        })
    }

    fn head(&self, kind: &str, name: &str) -> Option<&str> {
        self.refs
            .iter()
            .find(|(k, n, _)| k == kind && n == name)
            .map(|(_, _, h)| h.as_str())
    }
}

/// `[{"type", "name", "hash"}]` as triples.
fn ref_triples(refs: Option<&Value>) -> Vec<(String, String, String)> {
    refs.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let field = |f: &str| r.get(f).and_then(Value::as_str).map(str::to_owned);
            Some((field("type")?, field("name")?, field("hash")?))
        })
        .collect()
}

async fn remote_info(ctx: &Context, name: &str) -> Result<RemoteInfo> {
    let answer = ctx
        .client
        .call(&ctx.client.request(Method::GET, &["remotes", name]))
        .await?;
    RemoteInfo::from_json(&answer.body)
}

/// A client of the remote server, signed in as `auth` says. The credentials of this
/// catalog's server never go to the remote.
fn remote_client(url: &str, catalog: &str, auth: &RemoteAuth) -> Result<Client> {
    let path = profile::file_path().ok();
    let profiles = match &path {
        Some(path) => Profiles::load(path)?,
        None => Profiles::default(),
    };
    let server = profile::parse_server(url)?;
    let named = auth.remote_profile.clone().filter(|p| !p.trim().is_empty());
    let chosen = named.clone().or_else(|| {
        profiles
            .profiles
            .iter()
            .find(|(_, p)| profile::parse_server(&p.server).is_ok_and(|s| s == server))
            .map(|(name, _)| name.clone())
    });
    let args = GlobalArgs {
        server: Some(url.to_owned()),
        catalog: Some(catalog.to_owned()),
        profile: chosen,
        api_key: auth.remote_api_key.clone(),
        json: false,
    };
    let settings = profile::resolve(&args, &profiles, path.as_deref(), None)?;
    if let Some(name) = named
        && settings.token.is_none()
    {
        return Err(CliError::usage(format!(
            "profile `{name}` is not signed in to {url}; sign in with `pangolin login \
             --profile {name} --server {url}`"
        )));
    }
    Client::new(&settings)
}

/// Every branch and tag of the client's catalog: (type, name, hash).
async fn all_refs(client: &Client) -> Result<Vec<(String, String, String)>> {
    let request = client.request(Method::GET, &["refs"]);
    let answers = client
        .pages(&request, "refs", None, MAX_PAGE, |_| Ok(()))
        .await?;
    Ok(answers
        .iter()
        .flat_map(|a| ref_triples(a.body.get("refs")))
        .collect())
}

/// A pack received into a temporary file and checked.
struct Spooled {
    file: tempfile::NamedTempFile,
    objects: u64,
    /// The sender's warehouse, when it said.
    warehouse: Option<String>,
}

/// Asks `client` for a pack of `want` (every ref when `None`) beyond `have`, and keeps it.
async fn download(
    client: &Client,
    want: Option<&[String]>,
    have: &BTreeSet<String>,
) -> Result<Spooled> {
    let mut body = json!({ "have": have });
    if let Some(want) = want {
        body["want"] = json!(want);
    }
    let request = client.request(Method::POST, &["pack"]).json(body);
    let mut response = client.open(&request, || Ok(None)).await?;
    let warehouse = response
        .headers()
        .get(WAREHOUSE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let spool = tempfile::NamedTempFile::new()
        .map_err(|e| CliError::server(format!("creating a temporary file: {e}")))?;
    let mut file = spool
        .reopen()
        .map_err(|e| CliError::server(format!("opening the temporary file: {e}")))?;
    receive(&mut response, &mut file).await?;
    let read = spool
        .reopen()
        .map_err(|e| CliError::server(format!("reading the temporary file: {e}")))?;
    let verified = verify(std::io::BufReader::new(read), |_| {}).map_err(|e| {
        CliError::new(
            Exit::Conflict,
            format!("{} sent a damaged pack: {e}", client.server()),
        )
    })?;
    Ok(Spooled {
        file: spool,
        objects: verified.objects,
        warehouse,
    })
}

/// Sends a kept pack to `client`'s route `segments` (with `query`) and returns the answer.
async fn upload(
    client: &Client,
    segments: &[&str],
    query: &[(&str, String)],
    pack: &Spooled,
) -> Result<Value> {
    let mut request = client.request(Method::POST, segments);
    for (name, value) in query {
        request = request.query(name, value.clone());
    }
    bundle::upload_file(client, &request, pack.file.path()).await
}

fn print_value(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

/// Warns when table metadata moved (`pack` held objects) between catalogs keeping their
/// files in different places: it keeps the sender's locations.
fn warn_warehouses(pack: &Spooled, to: Option<&str>) {
    if let (Some(from), Some(to)) = (pack.warehouse.as_deref(), to)
        && pack.objects > 0
        && from != to
    {
        eprintln!(
            "warning: the sending catalog keeps its files in {from}, the receiving one in {to}: \
             table metadata keeps the sender's locations, and table files were not copied"
        );
    }
}

pub(crate) async fn run(args: RemoteArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    match args.command {
        RemoteCommand::Add {
            name,
            url,
            remote_catalog,
        } => {
            let mut body = json!({ "name": name, "url": url });
            if let Some(catalog) = remote_catalog {
                body["catalog"] = json!(catalog);
            }
            let answer = ctx
                .client
                .call(&ctx.client.request(Method::POST, &["remotes"]).json(body))
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            let remote = RemoteInfo::from_json(&answer.body)?;
            println!(
                "Added remote {}: catalog {} on {}.",
                remote.name, remote.catalog, remote.url
            );
        }
        RemoteCommand::List => {
            let answer = ctx
                .client
                .call(&ctx.client.request(Method::GET, &["remotes"]))
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            let mut table = crate::output::Table::with_header(&["NAME", "URL", "CATALOG"]);
            for remote in answer
                .body
                .get("remotes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let field = |f: &str| remote.get(f).and_then(Value::as_str).unwrap_or("");
                table.row(vec![
                    crate::output::Cell::new(field("name")),
                    crate::output::Cell::new(field("url")),
                    crate::output::Cell::new(field("catalog")),
                ]);
            }
            print!("{}", table.render(ctx.style, 0));
        }
        RemoteCommand::Show { name } => {
            let answer = ctx
                .client
                .call(&ctx.client.request(Method::GET, &["remotes", &name]))
                .await?;
            if ctx.json {
                return ctx.print_answer(&answer);
            }
            let remote = RemoteInfo::from_json(&answer.body)?;
            println!("remote   {}", remote.name);
            println!("url      {}", remote.url);
            println!("catalog  {}", remote.catalog);
            match answer.body.get("fetched-at").and_then(Value::as_str) {
                Some(at) => println!("fetched  {at}"),
                None => println!("fetched  never"),
            }
            for (kind, name, hash) in &remote.refs {
                println!("  {kind} {}/{name} {}", remote.name, short(hash));
            }
        }
        RemoteCommand::Remove { name } => {
            ctx.client
                .call(&ctx.client.request(Method::DELETE, &["remotes", &name]))
                .await?;
            if !ctx.json {
                println!("Removed remote {name}.");
            }
        }
    }
    Ok(())
}

/// Fetches from remote `name`; returns the answer of this catalog's server.
async fn fetch_from(ctx: &Context, name: &str, auth: &RemoteAuth) -> Result<(RemoteInfo, Value)> {
    let remote = remote_info(ctx, name).await?;
    let sender = remote_client(&remote.url, &remote.catalog, auth)?;
    let mut have: BTreeSet<String> = remote.refs.iter().map(|(_, _, h)| h.clone()).collect();
    have.extend(all_refs(&ctx.client).await?.into_iter().map(|(_, _, h)| h));
    let pack = download(&sender, None, &have).await?;
    let answer = upload(&ctx.client, &["remotes", name, "fetched"], &[], &pack).await?;
    warn_warehouses(&pack, answer.get("warehouse").and_then(Value::as_str));
    let remote = RemoteInfo::from_json(answer.get("remote").unwrap_or(&Value::Null))?;
    Ok((remote, answer))
}

/// Prints what a fetch changed, as `git fetch` does.
fn print_fetched(remote: &RemoteInfo, answer: &Value) {
    let objects = answer.get("objects").and_then(Value::as_u64).unwrap_or(0);
    let bytes = answer.get("bytes").and_then(Value::as_u64).unwrap_or(0);
    println!(
        "From {} (catalog {}): {objects} objects, {bytes} bytes",
        remote.url, remote.catalog
    );
    let changes: Vec<&Value> = answer
        .get("changes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    if changes.is_empty() {
        println!("Already up to date with {}.", remote.name);
    }
    for change in changes {
        let field = |f: &str| change.get(f).and_then(Value::as_str);
        let name = field("name").unwrap_or("?");
        let kind = field("type").unwrap_or("ref");
        let tracking = format!("{}/{name}", remote.name);
        match (field("old"), field("new")) {
            (None, Some(_)) => println!(" * [new {kind}]  {name} -> {tracking}"),
            (Some(_), None) => println!(" - [deleted]  {name} -> {tracking}"),
            (Some(old), Some(new)) => {
                if change.get("forced").and_then(Value::as_bool) == Some(true) {
                    println!(
                        " + {}...{}  {name} -> {tracking} (forced update)",
                        short(old),
                        short(new)
                    );
                } else {
                    println!("   {}..{}  {name} -> {tracking}", short(old), short(new));
                }
            }
            (None, None) => {}
        }
    }
}

pub(crate) async fn fetch(args: FetchArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let (remote, answer) = fetch_from(&ctx, &args.remote, &args.auth).await?;
    if ctx.json {
        print_value(&answer);
        return Ok(());
    }
    print_fetched(&remote, &answer);
    Ok(())
}

pub(crate) async fn push(args: PushArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let remote = remote_info(&ctx, &args.remote).await?;
    let receiver = remote_client(&remote.url, &remote.catalog, &args.auth)?;
    let theirs = all_refs(&receiver).await?;
    let expected = theirs
        .iter()
        .find(|(k, n, _)| k == "branch" && *n == args.branch)
        .map(|(_, _, h)| h.clone());
    let have: BTreeSet<String> = theirs.into_iter().map(|(_, _, h)| h).collect();
    let pack = download(&ctx.client, Some(std::slice::from_ref(&args.branch)), &have).await?;
    let mut query = vec![
        ("branch", args.branch.clone()),
        (
            "origin",
            format!("{}/{}", ctx.client.server(), ctx.client.catalog()),
        ),
    ];
    if let Some(expected) = &expected {
        query.push(("expected-head", expected.clone()));
    }
    if args.force {
        query.push(("force", "true".to_owned()));
    }
    let answer = upload(&receiver, &["push"], &query, &pack).await?;
    warn_warehouses(&pack, answer.get("warehouse").and_then(Value::as_str));
    // Where the remote is now, as a fetch would record it; nothing new to send.
    let tracked = fetch_from(&ctx, &args.remote, &args.auth).await;
    if ctx.json {
        print_value(&answer);
        return Ok(());
    }
    let field = |f: &str| answer.get(f).and_then(Value::as_str).unwrap_or("");
    let head = short(field("head"));
    let line = match (
        field("result"),
        answer.get("previous").and_then(Value::as_str),
    ) {
        ("created", _) => format!(" * [new branch]  {} -> {}", args.branch, args.branch),
        ("up-to-date", _) => format!("   {} is up to date", args.branch),
        ("forced", Some(previous)) => format!(
            " + {}...{head}  {} -> {} (forced update)",
            short(previous),
            args.branch,
            args.branch
        ),
        (_, Some(previous)) => format!(
            "   {}..{head}  {} -> {}",
            short(previous),
            args.branch,
            args.branch
        ),
        (_, None) => format!("   {head}  {} -> {}", args.branch, args.branch),
    };
    println!(
        "To {} (catalog {}): {} objects",
        remote.url,
        remote.catalog,
        answer.get("objects").and_then(Value::as_u64).unwrap_or(0)
    );
    println!("{line}");
    if let Err(error) = tracked {
        eprintln!(
            "warning: pushed, but {}'s tracking refs were not updated: {error}",
            args.remote
        );
    }
    Ok(())
}

pub(crate) async fn pull(args: PullArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let (remote, answer) = fetch_from(&ctx, &args.remote, &args.auth).await?;
    if !ctx.json {
        print_fetched(&remote, &answer);
    }
    let head = remote.head("branch", &args.branch).ok_or_else(|| {
        CliError::not_found(format!(
            "{} has no branch named `{}`",
            remote.name, args.branch
        ))
    })?;
    let target = args.into.clone().unwrap_or_else(|| args.branch.clone());
    let mut body = Map::new();
    body.insert("source".into(), json!(head));
    body.insert("target".into(), json!(target));
    body.insert(
        "message".into(),
        json!(format!(
            "Merge {}/{} ({} of {}) into {target}",
            remote.name, args.branch, remote.catalog, remote.url
        )),
    );
    if let Some(mode) = &args.table_merge {
        body.insert("table-merge".into(), json!(mode));
    }
    let source = format!("{}/{}", remote.name, args.branch);
    submit(
        &ctx,
        "merge",
        body,
        &Operation::Merge { source: &source },
        &target,
    )
    .await
}

pub(crate) async fn clone(args: CloneArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let catalog = args
        .from
        .clone()
        .unwrap_or_else(|| ctx.client.catalog().to_owned());
    let sender = remote_client(&args.url, &catalog, &args.auth)?;
    let pack = download(&sender, None, &BTreeSet::new()).await?;
    let imported = upload(&ctx.client, &["import"], &[], &pack).await?;
    let add = json!({ "name": args.remote, "url": args.url, "catalog": catalog });
    let added = ctx
        .client
        .send(&ctx.client.request(Method::POST, &["remotes"]).json(add))
        .await?;
    // A remote of that name already there (an earlier clone that stopped after importing)
    // is used as it is.
    if !added.status.is_success() && added.status != reqwest::StatusCode::CONFLICT {
        return Err(crate::client::status_error(&added));
    }
    let (remote, fetched) = fetch_from(&ctx, &args.remote, &args.auth).await?;
    warn_warehouses(&pack, fetched.get("warehouse").and_then(Value::as_str));
    if ctx.json {
        print_value(&json!({ "import": imported, "fetch": fetched }));
        return Ok(());
    }
    println!(
        "Cloned catalog {} of {} into {}: {} objects, {} branches and tags; remote {} tracks it.",
        remote.catalog,
        remote.url,
        ctx.client.catalog(),
        pack.objects,
        remote.refs.len(),
        remote.name
    );
    Ok(())
}
