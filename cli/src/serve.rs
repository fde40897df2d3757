//! `pangolin serve`: the server on the embedded default, with nothing to configure.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use pangolin_api::AppState;
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_catalog::iceberg::FileIo;
use pangolin_catalog::{Catalog, CreateError, Warehouse};
use pangolin_store::ObjectCache;

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "PANGOLIN_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Directory for the SQLite database and, unless `--warehouse` says otherwise, table files.
    #[arg(long, env = "PANGOLIN_DATA_DIR", default_value = "./pangolin-data")]
    data_dir: PathBuf,
    /// The catalog clients get when they name no warehouse; created on first start.
    #[arg(long, env = "PANGOLIN_DEFAULT_CATALOG", default_value = "default")]
    default_catalog: String,
    /// Where table data and metadata files go (`file:///...` or an absolute path); defaults to
    /// `<data-dir>/warehouse`.
    #[arg(long, env = "PANGOLIN_WAREHOUSE")]
    warehouse: Option<String>,
    /// Memory for cached catalog objects, in MiB.
    #[arg(long, env = "PANGOLIN_CACHE_MIB", default_value_t = 256)]
    cache_mib: u64,
}

/// How many tables' parsed metadata stay in memory.
const CACHED_TABLES: usize = 10_000;

/// The tenant every request acts in until tenancy arrives.
const TENANT: &str = "default";

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    // There is no authentication yet: refuse to be reachable from other machines.
    if !args.listen.ip().is_loopback() {
        bail!(
            "refusing to listen on {}: this server has no authentication yet, so it only \
             listens on loopback addresses (127.0.0.1, ::1)",
            args.listen
        );
    }
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating the data directory {}", args.data_dir.display()))?;
    let database = args.data_dir.join("pangolin.db");
    let store = Arc::new(
        SqliteBackend::open(&database)
            .await
            .with_context(|| format!("opening the database {}", database.display()))?,
    );
    let cache = Arc::new(ObjectCache::new(args.cache_mib << 20));
    let warehouse = match &args.warehouse {
        Some(location) => location.clone(),
        None => {
            let dir = args.data_dir.join("warehouse");
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating the warehouse directory {}", dir.display()))?;
            let dir = std::fs::canonicalize(&dir)
                .with_context(|| format!("resolving {}", dir.display()))?;
            url::Url::from_directory_path(&dir)
                .map_err(|()| anyhow::anyhow!("{} is not an absolute path", dir.display()))?
                .to_string()
        }
    };
    pangolin_catalog::iceberg::io::location_url(&warehouse)
        .context("the warehouse location is not usable")?;
    match Catalog::create(
        store.clone(),
        cache.clone(),
        TENANT,
        &args.default_catalog,
        "pangolin",
    )
    .await
    {
        Ok(_) => tracing::info!(catalog = %args.default_catalog, "created the default catalog"),
        Err(CreateError::Exists(_)) => {}
        Err(e) => return Err(e).context("creating the default catalog"),
    }
    let state = AppState {
        store,
        cache,
        tenant: TENANT.to_owned(),
        default_catalog: args.default_catalog.clone(),
        warehouse: Warehouse::new(warehouse.clone(), Arc::new(FileIo::new(CACHED_TABLES))),
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    tracing::info!(address = %listener.local_addr()?, data_dir = %args.data_dir.display(), %warehouse, "pangolin is serving");
    axum::serve(listener, pangolin_api::router(state))
        .with_graceful_shutdown(shutdown())
        .await
        .context("serving")?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM: in-flight requests finish, new ones are refused.
async fn shutdown() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}
