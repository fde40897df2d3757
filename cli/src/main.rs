//! `pangolin`: the catalog server (`pangolin serve`) and, later, the git-style client.

mod serve;

use std::io::IsTerminal;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "pangolin",
    version,
    about = "A versioned, multi-tenant Apache Iceberg REST catalog"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the catalog server.
    Serve(serve::ServeArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        // Colour only for a person watching; log files and collectors get plain text.
        .with_ansi(std::io::stdout().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn")),
        )
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Command::Serve(args) => runtime.block_on(serve::run(args)),
    }
}
