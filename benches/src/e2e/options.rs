//! What one run measures: backends, phases, workloads, catalog sizes, history depths and how
//! long each measurement lasts. Parsed from the command line by the `e2e` binary; tests build
//! it with [`Options::smoke`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Serialize;

use super::backend::BackendKind;
use super::workloads;

/// A group of measurements, each on servers of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Every workload on one catalog of `--catalog-tables` tables and `--history` commits.
    Workloads,
    /// A few workloads on catalogs of each `--sizes` (a fresh server per size).
    Scaling,
    /// Reads of old states on histories of each `--depths` commits (one catalog, grown).
    History,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Self::Workloads => "workloads",
            Self::Scaling => "scaling",
            Self::History => "history",
        }
    }
}

/// End-to-end benchmark of the real `pangolin serve` over HTTP on loopback.
#[derive(Debug, Clone, clap::Parser, Serialize)]
#[command(name = "e2e", version)]
pub struct Options {
    /// Backends to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "sqlite,postgres,rocksdb")]
    pub backends: Vec<BackendKind>,
    /// Phases to run, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "workloads,scaling,history"
    )]
    pub phases: Vec<Phase>,
    /// Only these workloads (comma separated, names as in the results); all when absent.
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Catalog sizes (tables) of the scaling phase.
    #[arg(long, value_delimiter = ',', default_value = "100,1000,10000,100000")]
    pub sizes: Vec<u64>,
    /// History depths (commits) of the history phase.
    #[arg(long, value_delimiter = ',', default_value = "100,1000,10000,100000")]
    pub depths: Vec<u64>,
    /// Tables in the catalog of the workloads phase.
    #[arg(long, default_value_t = 10_000)]
    pub catalog_tables: u64,
    /// Commits of history in the catalog of the workloads phase.
    #[arg(long, default_value_t = 1_000)]
    pub history: u64,
    /// How long each measurement lasts (`5s`, `500ms`).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    #[serde(serialize_with = "seconds")]
    pub duration: Duration,
    /// Load before each measurement, not counted (`1s`, `0s`).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    #[serde(serialize_with = "seconds")]
    pub warmup: Duration,
    /// The server binary [default: $CARGO_TARGET_DIR/release/pangolin].
    #[arg(long, env = "PANGOLIN_BIN")]
    pub pangolin_bin: Option<PathBuf>,
    /// PostgreSQL to measure on; each server gets a fresh schema, dropped afterwards.
    #[arg(
        long,
        env = "PANGOLIN_BENCH_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    #[serde(serialize_with = "without_password")]
    pub postgres_url: String,
    /// PostgreSQL servers sharing the database, requests spread over them in turn (other
    /// backends always get one server; their files belong to one).
    #[arg(long, default_value_t = 1, value_parser = parse_replicas)]
    pub replicas: usize,
    /// Where `e2e.json` and the SVG plots go [default: docs/benchmarks of the workspace].
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Leave each server's data directory in place (its path is printed) instead of
    /// deleting it. Deleting thousands of files slows the file creations of the next minutes
    /// on some file systems (ext4 without a journal passes over recently freed inodes when
    /// it allocates one), which would weigh on the next run's commits; delete the kept
    /// directories once the runs being compared are done.
    #[arg(long)]
    pub keep_data: bool,
    /// Print the workloads (and their connections per phase) and exit.
    #[arg(long)]
    #[serde(skip)]
    pub list: bool,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// A database URL as results may show it: a password replaced by `***`.
fn without_password<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact(url))
}

fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_owned(),
    }
}

/// `5s`, `1.5s`, `250ms`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.strip_suffix("ms") {
        Some(n) => (n, 1e-3),
        None => (text.strip_suffix('s').unwrap_or(text), 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| Duration::from_secs_f64(n * unit))
        .ok_or_else(|| format!("`{text}` is not a duration (`5s`, `500ms`)"))
}

fn parse_replicas(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n @ 1..=8) => Ok(n),
        _ => Err(format!("`{text}` is not a number of servers from 1 to 8")),
    }
}

impl Options {
    /// A run that takes seconds: SQLite, the workloads phase, tiny catalog, short timings.
    pub fn smoke(workloads: &[&str]) -> Self {
        Self {
            backends: vec![BackendKind::Sqlite],
            phases: vec![Phase::Workloads],
            workloads: workloads.iter().map(|w| (*w).to_owned()).collect(),
            sizes: vec![100],
            depths: vec![100],
            catalog_tables: 100,
            history: 20,
            duration: Duration::from_millis(300),
            warmup: Duration::ZERO,
            pangolin_bin: None,
            postgres_url: "postgres://postgres@127.0.0.1:5432/test".to_owned(),
            replicas: 1,
            out_dir: None,
            keep_data: false,
            list: false,
        }
    }

    /// Refuses unknown workload names and empty selections.
    pub fn validate(&self) -> anyhow::Result<()> {
        for name in &self.workloads {
            if workloads::find(name).is_none() {
                bail!(
                    "unknown workload `{name}`; known: {}",
                    workloads::DEFS
                        .iter()
                        .map(|d| d.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        if self.backends.is_empty() || self.phases.is_empty() {
            bail!("name at least one backend and one phase");
        }
        if self.sizes.contains(&0) || self.depths.contains(&0) || self.catalog_tables == 0 {
            bail!("catalog sizes and history depths start at 1");
        }
        Ok(())
    }

    /// Whether workload `name` was selected.
    pub fn selected(&self, name: &str) -> bool {
        self.workloads.is_empty() || self.workloads.iter().any(|w| w == name)
    }

    /// The server binary: `--pangolin-bin`, `PANGOLIN_BIN`, or the release build.
    pub fn server_binary(&self) -> anyhow::Result<PathBuf> {
        let path = match &self.pangolin_bin {
            Some(path) => path.clone(),
            None => {
                let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
                    || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
                    PathBuf::from,
                );
                target.join("release").join("pangolin")
            }
        };
        if !path.is_file() {
            bail!(
                "no server binary at {}: run `cargo build --release -p pangolin` (with \
                 `--features rocksdb` to measure RocksDB), or name one with --pangolin-bin",
                path.display()
            );
        }
        std::fs::canonicalize(&path).with_context(|| format!("resolving {}", path.display()))
    }

    /// Where results go: `--out-dir`, else `docs/benchmarks` of the workspace.
    pub fn output_dir(&self) -> PathBuf {
        self.out_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/benchmarks"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            redact("postgres://bench:s3cret@db:5432/test"),
            "postgres://bench:***@db:5432/test"
        );
        let plain = "postgres://postgres@127.0.0.1:5432/test";
        assert_eq!(redact(plain), plain);
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
