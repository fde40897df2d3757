//! The results of a run: a table on stdout as measurements complete, and `e2e.json`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use super::options::Options;
use super::stats::Figures;

/// One measurement: a workload on one backend, at one connection count, catalog size and
/// history depth.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// `sqlite`, `postgres`, `rocksdb`, or `baseline`.
    pub backend: String,
    /// `workloads`, `scaling`, `history`, or `baseline`.
    pub phase: String,
    pub workload: String,
    pub connections: usize,
    /// Bulk tables in the catalog.
    pub catalog_tables: u64,
    /// Commits of history the loader wrote.
    pub history_depth: u64,
    #[serde(flatten)]
    pub figures: Figures,
    /// Commits acknowledged but not in the table (commit workloads; 0 expected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<i64>,
    /// Throughput over the baseline's at the same number of connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<f64>,
}

/// Something that was not measured, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub backend: String,
    pub phase: String,
    pub workload: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub os: &'static str,
    pub arch: &'static str,
}

/// Everything a run measured, as written to `e2e.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Version of this file's layout.
    pub format: u32,
    pub started_unix_s: u64,
    pub machine: Machine,
    pub server_binary: PathBuf,
    pub options: Options,
    pub baseline: Vec<Measurement>,
    pub results: Vec<Measurement>,
    /// Backends this build or machine cannot measure.
    pub skipped: Vec<Problem>,
    /// Phases or workloads that failed (the rest of the run went on).
    pub failures: Vec<Problem>,
}

const HEADER: &str = "| backend | phase | workload | conns | tables | depth | ops/s | p50 ms | \
                      p99 ms | vs baseline | conflicts | retries | errors | lost |\n\
                      |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";

impl Report {
    pub fn new(options: &Options, server_binary: &Path) -> Self {
        println!("{HEADER}");
        Self {
            format: 1,
            started_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            machine: Machine {
                cpus: std::thread::available_parallelism().map_or(0, usize::from),
                os: std::env::consts::OS,
                arch: std::env::consts::ARCH,
            },
            server_binary: server_binary.to_owned(),
            options: options.clone(),
            baseline: Vec::new(),
            results: Vec::new(),
            skipped: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// The baseline's throughput at `connections`.
    pub fn baseline_throughput(&self, connections: usize) -> Option<f64> {
        self.baseline
            .iter()
            .find(|b| b.connections == connections)
            .map(|b| b.figures.throughput)
    }

    pub fn add_baseline(&mut self, measurement: Measurement) {
        print_row(&measurement);
        self.baseline.push(measurement);
    }

    /// Adds a measurement (its ratio to the baseline filled in) and prints its row.
    pub fn add(&mut self, mut measurement: Measurement) {
        measurement.vs_baseline = self
            .baseline_throughput(measurement.connections)
            .filter(|b| *b > 0.0)
            .map(|b| measurement.figures.throughput / b);
        print_row(&measurement);
        if let Some(error) = &measurement.figures.first_error {
            eprintln!(
                "!! {} errors in {} on {}; the first: {error}",
                measurement.figures.errors, measurement.workload, measurement.backend
            );
        }
        if measurement.lost.is_some_and(|l| l != 0) {
            eprintln!(
                "!! {} on {}: {} acknowledged commits are not in the table",
                measurement.workload,
                measurement.backend,
                measurement.lost.unwrap_or_default()
            );
        }
        self.results.push(measurement);
    }

    pub fn skip(&mut self, problem: Problem) {
        eprintln!("-- skipped {}: {}", problem.backend, problem.reason);
        self.skipped.push(problem);
    }

    pub fn fail(&mut self, problem: Problem) {
        eprintln!(
            "!! {} {} {}: {}",
            problem.backend,
            problem.phase,
            problem.workload.as_deref().unwrap_or(""),
            problem.reason
        );
        self.failures.push(problem);
    }

    /// Writes `e2e.json` into `dir`.
    pub fn write_json(&self, dir: &Path) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("e2e.json");
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}

fn print_row(m: &Measurement) {
    let f = &m.figures;
    println!(
        "| {} | {} | {} | {} | {} | {} | {:.0} | {:.3} | {:.3} | {} | {} | {} | {} | {} |",
        m.backend,
        m.phase,
        m.workload,
        m.connections,
        m.catalog_tables,
        m.history_depth,
        f.throughput,
        f.p50_ms,
        f.p99_ms,
        m.vs_baseline.map_or("1".to_owned(), |r| format!("{r:.3}")),
        f.conflicts,
        f.retries,
        f.errors,
        m.lost.map_or(String::new(), |l| l.to_string()),
    );
}
