//! `pangolin`: the catalog server (`pangolin serve`) and the git-style client that talks to
//! it over the management API (`docs/management-api.md`).

mod admin;
mod audit;
mod branch;
mod bundle;
mod catalogs;
mod changes;
mod client;
mod context;
mod diff;
mod error;
mod events;
mod help;
mod json;
mod key;
mod log;
mod login;
mod login_oidc;
mod ls;
mod maintenance;
mod merge;
mod mr;
mod output;
mod profile;
mod refs;
mod remote;
mod secret;
mod serve;
mod session;
mod show;
mod tag;
mod telemetry;
mod webhook;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::{CliError, Result};
use crate::output::{Paint, Style};

#[derive(Debug, Parser)]
#[command(
    name = "pangolin",
    version,
    about = "A versioned, multi-tenant Apache Iceberg REST catalog: the server, and git-style \
             commands for its branches, tags, history and merges",
    after_help = help::top(),
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the catalog server.
    Serve(Box<serve::ServeArgs>),
    /// Sign in and save a profile (server, catalog, tokens) for later commands.
    Login(login::LoginArgs),
    /// Revoke the profile's tokens and forget them.
    Logout(session::LogoutArgs),
    /// Show who the server sees you as.
    Whoami(session::WhoamiArgs),
    /// List the server's catalogs.
    Catalogs(catalogs::CatalogsArgs),
    /// List, create, delete or move branches.
    Branch(branch::BranchArgs),
    /// List, create or delete tags.
    Tag(tag::TagArgs),
    /// Show the history of a branch, tag or commit, newest first.
    Log(log::LogArgs),
    /// Show a commit and what it changed.
    Show(show::ShowArgs),
    /// Show what changed between two references.
    Diff(diff::DiffArgs),
    /// Show the catalog's change events after a cursor, or follow them as they land.
    Events(events::EventsArgs),
    /// List the namespaces, tables and views at a reference.
    Ls(ls::LsArgs),
    /// Merge a branch, tag or commit into a branch.
    Merge(merge::MergeArgs),
    /// Replay commits onto a branch.
    CherryPick(merge::CherryPickArgs),
    /// Undo a commit on a branch with a new commit.
    Revert(merge::RevertArgs),
    /// Open, check, merge and close merge requests.
    Mr(mr::MrArgs),
    /// Subscribe endpoints to the catalog's events; see their delivery and dead letters.
    Webhook(webhook::WebhookArgs),
    /// Read and verify the audit log.
    Audit(audit::AuditArgs),
    /// Administer tenants, warehouses, catalogs, users, service users, API keys and roles.
    Admin(admin::AdminArgs),
    /// Write a catalog's branches, tags and history to a bundle file.
    Export(bundle::ExportArgs),
    /// Restore a bundle file into a new catalog (or continue one with an incremental bundle).
    Import(bundle::ImportArgs),
    /// Check a bundle file without a server.
    Bundle(bundle::BundleArgs),
    /// Table maintenance: expire old snapshots on a branch.
    Maintenance(maintenance::MaintenanceArgs),
    /// Add, list, show and remove remotes: catalogs on other Pangolin servers.
    Remote(remote::RemoteArgs),
    /// Bring a remote's new commits and record where its branches and tags are.
    Fetch(remote::FetchArgs),
    /// Send a branch to a remote and move the remote's branch (fast-forward unless forced).
    Push(remote::PushArgs),
    /// Fetch, then merge a remote's branch into a branch.
    Pull(remote::PullArgs),
    /// Copy a remote catalog, with all of its history, into a new catalog.
    Clone(remote::CloneArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Serve(args) => serve::main(*args),
        command => client(command),
    }
}

/// Runs a client command; a failure is one line on stderr and its exit code.
fn client(command: Command) -> ExitCode {
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::server(format!("starting the runtime: {e}")))
        .and_then(|runtime| runtime.block_on(run(command)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let style = Style::with_colour(output::colour_for(std::io::stderr().is_terminal()));
            eprintln!("{} {error}", style.paint(Paint::Red, "error:"));
            error.exit_code()
        }
    }
}

async fn run(command: Command) -> Result<()> {
    match command {
        Command::Serve(_) => unreachable!("served by serve::main"),
        Command::Login(args) => login::run(args).await,
        Command::Logout(args) => session::logout(args).await,
        Command::Whoami(args) => session::whoami(args).await,
        Command::Audit(args) => audit::run(args).await,
        Command::Admin(args) => admin::run(args).await,
        Command::Catalogs(args) => catalogs::run(args).await,
        Command::Branch(args) => branch::run(args).await,
        Command::Tag(args) => tag::run(args).await,
        Command::Log(args) => log::run(args).await,
        Command::Show(args) => show::run(args).await,
        Command::Diff(args) => diff::run(args).await,
        Command::Events(args) => events::run(args).await,
        Command::Ls(args) => ls::run(args).await,
        Command::Merge(args) => merge::merge(args).await,
        Command::CherryPick(args) => merge::cherry_pick(args).await,
        Command::Revert(args) => merge::revert(args).await,
        Command::Mr(args) => mr::run(args).await,
        Command::Webhook(args) => webhook::run(args).await,
        Command::Export(args) => bundle::export(args).await,
        Command::Import(args) => bundle::import(args).await,
        Command::Bundle(args) => bundle::verify_command(args),
        Command::Maintenance(args) => maintenance::run(args).await,
        Command::Remote(args) => remote::run(args).await,
        Command::Fetch(args) => remote::fetch(args).await,
        Command::Push(args) => remote::push(args).await,
        Command::Pull(args) => remote::pull(args).await,
        Command::Clone(args) => remote::clone(args).await,
    }
}
