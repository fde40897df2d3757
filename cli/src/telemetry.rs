//! The server's log subscriber and metrics recorder: installed here, in the binary, and
//! nowhere else (libraries only report).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// For people: one line per event, with the request's span (method, path, id).
    Text,
    /// For collectors: one JSON object per line, with the current span's fields.
    Json,
}

/// Installs the log subscriber (filter from `RUST_LOG`).
pub(crate) fn logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        // Colour only for a person watching; log files and collectors get plain text.
        LogFormat::Text => builder.with_ansi(std::io::stdout().is_terminal()).init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}

/// Latency buckets, in seconds: sub-millisecond commits to slow object stores.
const SECONDS: &[f64] = &[
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];
/// Commits per publish.
const BATCH: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

/// Installs the Prometheus recorder and has `/metrics` render it; histograms have buckets
/// (which sum across replicas, unlike quantiles). Runs its upkeep on the current runtime.
pub(crate) fn metrics() -> anyhow::Result<()> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), SECONDS)
        .context("metrics buckets")?
        .set_buckets_for_metric(
            Matcher::Full(pangolin_catalog::telemetry::PUBLISH_BATCH.to_owned()),
            BATCH,
        )
        .context("metrics buckets")?
        .install_recorder()
        .context("installing the metrics recorder")?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });
    pangolin_api::observe::set_exporter(move || handle.render());
    Ok(())
}

/// Samples the database pool every few seconds into `pangolin_db_connections{state}`: a pool
/// whose connections are all in use makes requests wait (and fail after its acquire timeout).
pub(crate) fn pool_gauges(sample: impl Fn() -> (u32, usize) + Send + 'static) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            let (size, idle) = sample();
            let idle = idle as f64;
            metrics::gauge!("pangolin_db_connections", "state" => "idle").set(idle);
            metrics::gauge!("pangolin_db_connections", "state" => "in-use")
                .set((f64::from(size) - idle).max(0.0));
        }
    });
}
