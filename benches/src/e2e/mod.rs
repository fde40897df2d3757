//! End-to-end benchmark: the real `pangolin serve` over HTTP on loopback, driven by a fixed
//! number of concurrent connections, against a minimal axum baseline measured in the same run.
//!
//! Three phases, each on servers of its own (a fresh data directory and database each):
//!
//! - `workloads`: every workload on one catalog (`--catalog-tables`, `--history`).
//! - `scaling`: loadTable, commit, create-branch and merge on catalogs of each `--sizes`.
//! - `history`: log paging and time travel on histories of each `--depths` (one catalog,
//!   grown between measurements with the server stopped).
//!
//! Catalogs and histories are bulk loaded through the catalog layer before the server starts
//! ([`fixture`]). [`run`] is the whole run; the `e2e` binary parses [`Options`] from the
//! command line and writes `e2e.json` and the SVG plots.

pub mod api;
pub mod backend;
pub mod baseline;
pub mod driver;
pub mod fixture;
pub mod options;
pub mod plot;
pub mod report;
pub mod server;
pub mod stats;
pub mod workloads;

use std::collections::BTreeSet;
use std::path::Path;

use backend::{BackendKind, Instance};
use baseline::{Baseline, BaselineWorker};
use driver::{Timing, drive};
pub use options::{Options, Phase};
pub use report::{Measurement, Problem, Report};
use server::Server;
use stats::Basis;
use workloads::{DEFS, Env};

/// Tables in the catalog of the history phase.
pub const HISTORY_TABLES: u64 = 100;

/// Runs everything `options` selects. Failures of one backend, phase or workload are recorded
/// in the report and the run goes on; only bad options or a missing server binary fail it.
pub async fn run(options: &Options) -> anyhow::Result<Report> {
    options.validate()?;
    let binary = options.server_binary()?;
    let mut report = Report::new(options, &binary);
    let timing = Timing {
        warmup: options.warmup,
        duration: options.duration,
    };
    measure_baseline(options, timing, &mut report).await?;
    for &kind in &options.backends {
        if let Some(why) = Instance::unavailable(kind) {
            report.skip(problem(kind, "", None, why));
            continue;
        }
        if let Err(e) = probe(kind, options).await {
            report.skip(problem(kind, "", None, format!("{e:#}")));
            continue;
        }
        for &phase in &options.phases {
            let ran = match phase {
                Phase::Workloads => {
                    workloads_phase(kind, options, &binary, timing, &mut report).await
                }
                Phase::Scaling => scaling_phase(kind, options, &binary, timing, &mut report).await,
                Phase::History => history_phase(kind, options, &binary, timing, &mut report).await,
            };
            if let Err(e) = ran {
                report.fail(problem(kind, phase.name(), None, format!("{e:#}")));
            }
        }
    }
    Ok(report)
}

fn problem(
    kind: BackendKind,
    phase: &str,
    workload: Option<&str>,
    reason: impl Into<String>,
) -> Problem {
    Problem {
        backend: kind.name().to_owned(),
        phase: phase.to_owned(),
        workload: workload.map(str::to_owned),
        reason: reason.into(),
    }
}

/// Whether the backend's database can be opened (PostgreSQL may not be running).
async fn probe(kind: BackendKind, options: &Options) -> anyhow::Result<()> {
    let instance = Instance::create(kind, &options.postgres_url, false)?;
    let opened = instance.open().await?;
    opened.close().await;
    instance.dispose().await;
    Ok(())
}

/// The connection counts the selected workloads use, so the baseline is measured at each.
fn connection_counts(options: &Options) -> BTreeSet<usize> {
    DEFS.iter()
        .filter(|d| options.selected(d.name))
        .flat_map(|d| options.phases.iter().flat_map(|p| d.connections(*p)))
        .copied()
        .collect()
}

async fn measure_baseline(
    options: &Options,
    timing: Timing,
    report: &mut Report,
) -> anyhow::Result<()> {
    let baseline = Baseline::start()?;
    for connections in connection_counts(options) {
        let api = api::Api::new(&[baseline.base_url()], connections)?;
        let workers = (0..connections)
            .map(|_| BaselineWorker { api: api.clone() })
            .collect();
        let (figures, _) = drive(workers, timing, Basis::Wall).await?;
        report.add_baseline(Measurement {
            backend: "baseline".to_owned(),
            phase: "baseline".to_owned(),
            workload: "fixed-json".to_owned(),
            connections,
            catalog_tables: 0,
            history_depth: 0,
            figures,
            lost: None,
            vs_baseline: None,
        });
    }
    Ok(())
}

/// Runs the workloads of `phase` against a started server and records them.
async fn run_workloads(
    kind: BackendKind,
    label: &str,
    phase: Phase,
    options: &Options,
    env: &Env,
    report: &mut Report,
) {
    for def in DEFS.iter().filter(|d| options.selected(d.name)) {
        for &connections in def.connections(phase) {
            match workloads::run(def.name, connections, env).await {
                Ok(sample) => report.add(Measurement {
                    backend: label.to_owned(),
                    phase: phase.name().to_owned(),
                    workload: def.name.to_owned(),
                    connections,
                    catalog_tables: env.tables,
                    history_depth: env.depth,
                    figures: sample.figures,
                    lost: sample.lost,
                    vs_baseline: None,
                }),
                Err(e) => report.fail(problem(
                    kind,
                    phase.name(),
                    Some(def.name),
                    format!("{e:#}"),
                )),
            }
        }
    }
}

fn wants(options: &Options, phase: Phase) -> bool {
    DEFS.iter()
        .any(|d| options.selected(d.name) && !d.connections(phase).is_empty())
}

/// Loads a catalog of `tables` tables and `history` commits into a fresh instance.
async fn loaded_instance(
    kind: BackendKind,
    options: &Options,
    tables: u64,
    history: u64,
) -> anyhow::Result<Instance> {
    let instance = Instance::create(kind, &options.postgres_url, options.keep_data)?;
    let opened = instance.open().await?;
    let loaded = async {
        fixture::load_catalog(&opened, instance.data_dir(), tables).await?;
        fixture::grow_history(&opened, instance.data_dir(), 0, history).await
    }
    .await;
    opened.close().await;
    match loaded {
        Ok(()) => Ok(instance),
        Err(e) => {
            instance.dispose().await;
            Err(e)
        }
    }
}

/// Servers started on one instance: several only on PostgreSQL, which servers can share.
fn replicas(kind: BackendKind, options: &Options) -> usize {
    match kind {
        BackendKind::Postgres => options.replicas,
        _ => 1,
    }
}

/// The backend as results name it: `postgres-3-replicas` when several servers share it.
fn label(kind: BackendKind, replicas: usize) -> String {
    match replicas {
        1 => kind.name().to_owned(),
        n => format!("{}-{n}-replicas", kind.name()),
    }
}

/// Starts the server(s) on `instance`, runs the phase's workloads, stops them.
async fn serve_and_run(
    instance: &Instance,
    binary: &Path,
    phase: Phase,
    options: &Options,
    env: Env,
    report: &mut Report,
) -> anyhow::Result<()> {
    let count = replicas(instance.kind, options);
    let mut servers = Vec::with_capacity(count);
    for _ in 0..count {
        match Server::start(binary, instance.data_dir(), &instance.server_args()).await {
            Ok(server) => servers.push(server),
            Err(e) => {
                for server in servers {
                    let _ = server.stop().await;
                }
                return Err(e);
            }
        }
    }
    let env = Env {
        bases: servers.iter().map(|s| s.base_url().to_owned()).collect(),
        ..env
    };
    let label = label(instance.kind, count);
    run_workloads(instance.kind, &label, phase, options, &env, report).await;
    let mut stopped = Ok(());
    for server in servers {
        let result = server.stop().await;
        if stopped.is_ok() {
            stopped = result;
        }
    }
    stopped
}

async fn workloads_phase(
    kind: BackendKind,
    options: &Options,
    binary: &Path,
    timing: Timing,
    report: &mut Report,
) -> anyhow::Result<()> {
    if !wants(options, Phase::Workloads) {
        return Ok(());
    }
    eprintln!("== {} workloads", kind.name());
    let (tables, depth) = (options.catalog_tables, options.history);
    let instance = loaded_instance(kind, options, tables, depth).await?;
    let env = Env {
        bases: Vec::new(),
        timing,
        tables,
        depth,
        back: depth / 2,
    };
    let ran = serve_and_run(&instance, binary, Phase::Workloads, options, env, report).await;
    instance.dispose().await;
    ran
}

async fn scaling_phase(
    kind: BackendKind,
    options: &Options,
    binary: &Path,
    timing: Timing,
    report: &mut Report,
) -> anyhow::Result<()> {
    if !wants(options, Phase::Scaling) {
        return Ok(());
    }
    let sizes: BTreeSet<u64> = options.sizes.iter().copied().collect();
    for tables in sizes {
        eprintln!("== {} scaling: {tables} tables", kind.name());
        let instance = loaded_instance(kind, options, tables, 0).await?;
        let env = Env {
            bases: Vec::new(),
            timing,
            tables,
            depth: 0,
            back: 0,
        };
        let ran = serve_and_run(&instance, binary, Phase::Scaling, options, env, report).await;
        instance.dispose().await;
        ran?;
    }
    Ok(())
}

async fn history_phase(
    kind: BackendKind,
    options: &Options,
    binary: &Path,
    timing: Timing,
    report: &mut Report,
) -> anyhow::Result<()> {
    if !wants(options, Phase::History) {
        return Ok(());
    }
    let depths: BTreeSet<u64> = options.depths.iter().copied().collect();
    let instance = loaded_instance(kind, options, HISTORY_TABLES, 0).await?;
    let mut grown = 0;
    let mut ran = Ok(());
    for depth in depths {
        eprintln!("== {} history: {depth} commits", kind.name());
        let step = async {
            let opened = instance.open().await?;
            let grew = fixture::grow_history(&opened, instance.data_dir(), grown, depth).await;
            opened.close().await;
            grew
        };
        if let Err(e) = step.await {
            ran = Err(e);
            break;
        }
        grown = depth;
        let env = Env {
            bases: Vec::new(),
            timing,
            tables: HISTORY_TABLES,
            depth,
            // Deep in the history, but after the tables were loaded.
            back: (depth * 9 / 10).max(1),
        };
        if let Err(e) = serve_and_run(&instance, binary, Phase::History, options, env, report).await
        {
            ran = Err(e);
            break;
        }
    }
    instance.dispose().await;
    ran
}
