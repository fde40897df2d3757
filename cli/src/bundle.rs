//! `pangolin export`, `pangolin import` and `pangolin bundle verify`: a catalog as a bundle
//! file, to back it up, move it to another server or backend, or restore it.

use std::fs::File;
use std::io::{BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use pangolin_catalog::bundle::{Base, Verified, verify};
use reqwest::Method;
use serde_json::{Value, json};

use crate::client::{Client, Request};
use crate::context::Context;
use crate::error::{CliError, Exit, Result};
use crate::profile::GlobalArgs;

pub(crate) const BUNDLE_TYPE: &str = "application/vnd.pangolin.bundle";

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin export --out lake.bundle",
        "pangolin export --catalog lake --out lake-2.bundle --since lake.bundle",
    ],
    "Writes every branch and tag of the catalog and every commit and tree they reach, checked\n\
     as it arrives; the file appears only once the whole bundle was received. With --since,\n\
     only what the earlier bundle's refs do not reach is written (an incremental bundle).\n\
     Table files are not in a bundle: their locations are kept as they are. Needs the right\n\
     to manage the catalog.",
))]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The file to write.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// An earlier bundle of this catalog: write only what is new since.
    #[arg(long, value_name = "BUNDLE")]
    since: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin admin catalog create lake2 --warehouse files",
        "pangolin import --catalog lake2 lake.bundle",
        "pangolin import --catalog lake2 lake-2.bundle   # then the increment",
    ],
    "A full bundle is imported only into a new, empty catalog; an incremental one only into\n\
     the catalog whose branches and tags are exactly those of the bundle it continues. The\n\
     bundle is checked here first, then again by the server, which moves the refs only once\n\
     all of it arrived whole. Commits keep their hashes. Needs the right to manage the\n\
     catalog.",
))]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The bundle file.
    bundle: PathBuf,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin bundle verify lake.bundle"],
    "Works without a server. Exits 0 when the bundle reads back whole (every object hashes\n\
     to what it is pointed to by, the bundle to the hash it ends with), 1 when it does not.",
))]
pub(crate) struct BundleArgs {
    #[command(subcommand)]
    command: BundleCommand,
}

#[derive(Debug, clap::Subcommand)]
enum BundleCommand {
    /// Check a bundle file and say what it holds.
    Verify {
        /// The bundle file.
        bundle: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Checks the bundle in `path`, with progress on a terminal.
fn check(path: &Path) -> Result<Verified> {
    let file = File::open(path)
        .map_err(|e| CliError::usage(format!("opening {}: {e}", path.display())))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut progress = Progress::new("checking", total);
    let verified = verify(BufReader::new(file), |read| progress.show(read)).map_err(|e| {
        CliError::new(
            Exit::Conflict,
            format!("{} is not a whole bundle: {e}", path.display()),
        )
    });
    progress.done();
    verified
}

fn summary(verified: &Verified) -> Value {
    json!({
        "bundle": verified.id.to_string(),
        "base": verified.header.base.as_ref().map(|b| b.bundle.to_string()),
        "tenant": verified.header.tenant,
        "catalog": verified.header.catalog,
        "exported-at": verified.header.exported_at,
        "objects": verified.objects,
        "bytes": verified.bytes,
        "refs": verified.header.refs,
        "objects-from-base": verified.missing.len(),
    })
}

fn print_summary(verified: &Verified) {
    let header = &verified.header;
    println!("bundle   {}", verified.id);
    println!(
        "catalog  {}/{} as of {}",
        header.tenant, header.catalog, header.exported_at
    );
    match &header.base {
        Some(base) => println!(
            "base     {} ({} objects come from it)",
            base.bundle,
            verified.missing.len()
        ),
        None => println!("base     none (a full bundle)"),
    }
    println!("objects  {} ({} bytes)", verified.objects, verified.bytes);
    for r in &header.refs {
        println!("  {} {} {}", r.kind.as_str(), r.name.as_str(), r.hash);
    }
}

pub(crate) fn verify_command(args: BundleArgs) -> Result<()> {
    let BundleCommand::Verify { bundle, json } = args.command;
    let verified = check(&bundle)?;
    if verified.header.base.is_none() && !verified.self_contained() {
        return Err(CliError::new(
            Exit::Conflict,
            format!(
                "{} is a full bundle but points to {} objects it does not hold",
                bundle.display(),
                verified.missing.len() + verified.outside.len()
            ),
        ));
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary(&verified)).unwrap_or_default()
        );
    } else {
        print_summary(&verified);
    }
    Ok(())
}

pub(crate) async fn export(args: ExportArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let base = match &args.since {
        Some(path) => {
            let earlier = check(path)?;
            Some(Base {
                bundle: earlier.id,
                refs: earlier.header.refs,
            })
        }
        None => None,
    };
    let request = ctx
        .client
        .request(Method::POST, &["export"])
        .json(json!({ "base": base }));
    let mut response = ctx.client.open(&request, || Ok(None)).await?;
    let partial = partial_path(&args.out);
    let mut file = File::create(&partial)
        .map_err(|e| CliError::usage(format!("creating {}: {e}", partial.display())))?;
    let received = receive(&mut response, &mut file).await;
    let written = received.and_then(|()| {
        file.sync_all()
            .map_err(|e| CliError::server(format!("writing {}: {e}", partial.display())))
    });
    drop(file);
    let verified = written.and_then(|()| check(&partial));
    let verified = match verified {
        Ok(verified) => verified,
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            return Err(error);
        }
    };
    std::fs::rename(&partial, &args.out)
        .map_err(|e| CliError::server(format!("renaming to {}: {e}", args.out.display())))?;
    if ctx.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary(&verified)).unwrap_or_default()
        );
    } else {
        println!("Exported to {}:", args.out.display());
        print_summary(&verified);
    }
    Ok(())
}

/// Writes the answer's body to `file` as it arrives.
pub(crate) async fn receive(response: &mut reqwest::Response, file: &mut File) -> Result<()> {
    let total = response.content_length().unwrap_or(0);
    let mut progress = Progress::new("receiving", total);
    let mut received = 0u64;
    loop {
        let chunk = response.chunk().await.map_err(|e| {
            CliError::server(format!(
                "the transfer was cut short after {received} bytes: {e}"
            ))
        })?;
        let Some(chunk) = chunk else { break };
        file.write_all(&chunk)
            .map_err(|e| CliError::server(format!("writing the bundle: {e}")))?;
        received += chunk.len() as u64;
        progress.show(received);
    }
    progress.done();
    Ok(())
}

fn partial_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    out.with_file_name(name)
}

pub(crate) async fn import(args: ImportArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let verified = check(&args.bundle)?;
    if verified.header.base.is_none() && !verified.self_contained() {
        return Err(CliError::new(
            Exit::Conflict,
            format!(
                "{} is a full bundle but points to objects it does not hold",
                args.bundle.display()
            ),
        ));
    }
    let request = ctx.client.request(Method::POST, &["import"]);
    let answer = upload_file(&ctx.client, &request, &args.bundle).await?;
    if ctx.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&answer).unwrap_or_default()
        );
        return Ok(());
    }
    println!(
        "Imported bundle {} into {}: {} objects, {} branches and tags created, moved or deleted.",
        answer["bundle"].as_str().unwrap_or("?"),
        ctx.client.catalog(),
        answer["objects"],
        answer["changed-refs"],
    );
    Ok(())
}

/// Sends the bundle or pack at `path` as `request`'s body and reads the server's JSON answer.
/// The file is opened again for each attempt the client makes (after a refreshed sign-in).
pub(crate) async fn upload_file(client: &Client, request: &Request, path: &Path) -> Result<Value> {
    let response = client
        .open(request, || {
            let file = File::open(path)
                .map_err(|e| CliError::usage(format!("opening {}: {e}", path.display())))?;
            Ok(Some((
                BUNDLE_TYPE,
                reqwest::Body::wrap_stream(chunks(file)),
            )))
        })
        .await?;
    let text = response
        .text()
        .await
        .map_err(|e| CliError::server(format!("reading the server's answer: {e}")))?;
    serde_json::from_str(&text)
        .map_err(|e| CliError::server(format!("the server answered with invalid JSON: {e}")))
}

/// The file's bytes as a stream of pieces, for an upload.
pub(crate) fn chunks(
    file: File,
) -> impl futures::Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static {
    futures::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buffer = vec![0; 1 << 20];
        match file.read(&mut buffer) {
            Ok(0) => None,
            Ok(n) => {
                buffer.truncate(n);
                Some((Ok(buffer), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

/// Bytes done out of a total, on stderr when it is a terminal.
struct Progress {
    what: &'static str,
    total: u64,
    shown: bool,
    terminal: bool,
}

impl Progress {
    fn new(what: &'static str, total: u64) -> Self {
        Self {
            what,
            total,
            shown: false,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn show(&mut self, done: u64) {
        if !self.terminal {
            return;
        }
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        if self.total > 0 {
            eprint!(
                "\r{} {:.1} of {:.1} MiB",
                self.what,
                mib(done),
                mib(self.total)
            );
        } else {
            eprint!("\r{} {:.1} MiB", self.what, mib(done));
        }
        self.shown = true;
    }

    fn done(&mut self) {
        if self.shown {
            eprintln!();
            self.shown = false;
        }
    }
}
