//! End-to-end benchmark of the real server over HTTP: see `docs/benchmarks.md`.
//!
//! ```sh
//! cargo build --release -p pangolin --features rocksdb
//! cargo run --release -p pangolin-benches --features rocksdb --bin e2e -- --help
//! ```

use std::process::ExitCode;

use clap::Parser;
use pangolin_benches::e2e::{self, Options};

#[tokio::main]
async fn main() -> ExitCode {
    let options = Options::parse();
    if options.list {
        println!("{}", e2e::workloads::describe());
        return ExitCode::SUCCESS;
    }
    let report = match e2e::run(&options).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("Error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let dir = options.output_dir();
    let written = report.write_json(&dir).and_then(|json| {
        let mut files = vec![json];
        files.extend(e2e::plot::write_plots(&report, &dir)?);
        Ok(files)
    });
    match written {
        Ok(files) => {
            for file in files {
                eprintln!("wrote {}", file.display());
            }
        }
        Err(e) => {
            eprintln!("Error: {e:#}");
            return ExitCode::FAILURE;
        }
    }
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "{} failures: see `failures` in e2e.json",
            report.failures.len()
        );
        ExitCode::FAILURE
    }
}
