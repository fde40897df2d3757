//! `pangolin serve`: the server on the embedded default, with nothing to configure.
//!
//! Every setting comes, in order of precedence, from a flag, an environment variable, the
//! configuration file (`--config`), or its default.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use pangolin_api::AppState;
use pangolin_backend_postgres::{PoolSettings, PostgresBackend};
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_catalog::iceberg::FileIo;
use pangolin_catalog::{Catalog, CreateError, Store, Warehouse};
use pangolin_store::ObjectCache;
use serde::Deserialize;

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// A TOML file with any of the settings below (keys as the flags, with `_`: `data_dir`).
    #[arg(long, env = "PANGOLIN_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "PANGOLIN_LISTEN")]
    listen: Option<SocketAddr>,
    /// Directory for the SQLite database and, unless `--warehouse` says otherwise, table files
    /// [default: ./pangolin-data].
    #[arg(long, env = "PANGOLIN_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Where catalog state is kept: `postgres://user@host:port/db` for PostgreSQL, or
    /// `sqlite://path`; the SQLite file `<data-dir>/pangolin.db` when absent.
    #[arg(long, env = "PANGOLIN_DATABASE_URL")]
    database_url: Option<String>,
    /// PostgreSQL schema to keep the tables in (created if missing) [default: public].
    #[arg(long, env = "PANGOLIN_DATABASE_SCHEMA")]
    database_schema: Option<String>,
    /// Where table data and metadata files go (`file:///...` or an absolute path)
    /// [default: <data-dir>/warehouse].
    #[arg(long, env = "PANGOLIN_WAREHOUSE")]
    warehouse: Option<String>,
    /// The catalog clients get when they name no warehouse; created on first start
    /// [default: default].
    #[arg(long, env = "PANGOLIN_DEFAULT_CATALOG")]
    default_catalog: Option<String>,
    /// Memory for cached catalog objects, in MiB [default: 256].
    #[arg(long, env = "PANGOLIN_CACHE_MIB")]
    cache_mib: Option<u64>,
}

/// The configuration file: the same settings as the flags.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<SocketAddr>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    database_schema: Option<String>,
    warehouse: Option<String>,
    default_catalog: Option<String>,
    cache_mib: Option<u64>,
}

/// Settings after flags, environment, file and defaults are combined.
#[derive(Debug)]
struct Settings {
    listen: SocketAddr,
    data_dir: PathBuf,
    database_url: Option<String>,
    database_schema: Option<String>,
    warehouse: Option<String>,
    default_catalog: String,
    cache_mib: u64,
}

fn settings(args: ServeArgs) -> anyhow::Result<Settings> {
    let file = match &args.config {
        None => FileConfig::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the configuration file {}", path.display()))?;
            toml::from_str(&text)
                .with_context(|| format!("in the configuration file {}", path.display()))?
        }
    };
    Ok(Settings {
        listen: args
            .listen
            .or(file.listen)
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
        data_dir: args
            .data_dir
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from("./pangolin-data")),
        database_url: args.database_url.or(file.database_url),
        database_schema: args.database_schema.or(file.database_schema),
        warehouse: args.warehouse.or(file.warehouse),
        default_catalog: args
            .default_catalog
            .or(file.default_catalog)
            .unwrap_or_else(|| "default".to_owned()),
        cache_mib: args.cache_mib.or(file.cache_mib).unwrap_or(256),
    })
}

/// How many tables' parsed metadata stay in memory.
const CACHED_TABLES: usize = 10_000;

/// The tenant every request acts in until tenancy arrives.
const TENANT: &str = "default";

async fn open_store(settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
    match settings.database_url.as_deref() {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            let pool = PoolSettings {
                schema: settings.database_schema.clone(),
                ..PoolSettings::default()
            };
            let store = PostgresBackend::connect(url, &pool)
                .await
                .context("connecting to PostgreSQL")?;
            Ok(Arc::new(store))
        }
        Some(url) if url.starts_with("sqlite:") => Ok(Arc::new(
            SqliteBackend::open_url(url)
                .await
                .with_context(|| format!("opening the database {url}"))?,
        )),
        Some(other) => bail!("unsupported database URL `{other}`: use postgres:// or sqlite://"),
        None => {
            let database = settings.data_dir.join("pangolin.db");
            Ok(Arc::new(
                SqliteBackend::open(&database)
                    .await
                    .with_context(|| format!("opening the database {}", database.display()))?,
            ))
        }
    }
}

/// The warehouse location: as configured, or a directory under the data directory.
fn warehouse_location(settings: &Settings) -> anyhow::Result<String> {
    let location = match &settings.warehouse {
        Some(location) => location.clone(),
        None => local_warehouse(&settings.data_dir.join("warehouse"))?,
    };
    pangolin_catalog::iceberg::io::location_url(&location)
        .context("the warehouse location is not usable")?;
    Ok(location)
}

fn local_warehouse(dir: &Path) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the warehouse directory {}", dir.display()))?;
    let dir = std::fs::canonicalize(dir).with_context(|| format!("resolving {}", dir.display()))?;
    Ok(url::Url::from_directory_path(&dir)
        .map_err(|()| anyhow::anyhow!("{} is not an absolute path", dir.display()))?
        .to_string())
}

/// `pangolin serve`: installs the log subscriber (nothing else does), then serves until
/// stopped.
pub(crate) fn main(args: ServeArgs) -> ExitCode {
    tracing_subscriber::fmt()
        // Colour only for a person watching; log files and collectors get plain text.
        .with_ansi(std::io::stdout().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn")),
        )
        .init();
    let served = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(run(args)));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // As `main` returning the error would print it.
            eprintln!("Error: {error:?}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let settings = settings(args)?;
    // There is no authentication yet: refuse to be reachable from other machines.
    if !settings.listen.ip().is_loopback() {
        bail!(
            "refusing to listen on {}: this server has no authentication yet, so it only \
             listens on loopback addresses (127.0.0.1, ::1)",
            settings.listen
        );
    }
    std::fs::create_dir_all(&settings.data_dir).with_context(|| {
        format!(
            "creating the data directory {}",
            settings.data_dir.display()
        )
    })?;
    let store = open_store(&settings).await?;
    let warehouse = warehouse_location(&settings)?;
    let cache = Arc::new(ObjectCache::new(settings.cache_mib << 20));
    match Catalog::create(
        store.clone(),
        cache.clone(),
        TENANT,
        &settings.default_catalog,
        "pangolin",
    )
    .await
    {
        Ok(_) => tracing::info!(catalog = %settings.default_catalog, "created the default catalog"),
        Err(CreateError::Exists(_)) => {}
        Err(e) => return Err(e).context("creating the default catalog"),
    }
    let state = AppState {
        store,
        cache,
        tenant: TENANT.to_owned(),
        default_catalog: settings.default_catalog.clone(),
        warehouse: Warehouse::new(warehouse.clone(), Arc::new(FileIo::new(CACHED_TABLES))),
    };
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("listening on {}", settings.listen))?;
    tracing::info!(
        address = %listener.local_addr()?,
        data_dir = %settings.data_dir.display(),
        %warehouse,
        database = if settings.database_url.is_some() { "configured" } else { "sqlite" },
        "pangolin is serving"
    );
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn parse(flags: &[&str]) -> ServeArgs {
        Wrapper::try_parse_from(std::iter::once("serve").chain(flags.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn flags_win_over_the_file_which_wins_over_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pangolin.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9999\"\ncache_mib = 64\ndefault_catalog = \"lake\"\n",
        )
        .unwrap();
        let config = file.to_str().unwrap();
        let s = settings(parse(&["--config", config, "--cache-mib", "32"])).unwrap();
        assert_eq!(s.cache_mib, 32, "the flag wins");
        assert_eq!(s.listen.port(), 9999, "the file wins over the default");
        assert_eq!(s.default_catalog, "lake");
        assert_eq!(s.data_dir, PathBuf::from("./pangolin-data"), "default");
    }

    #[test]
    fn unknown_keys_in_the_file_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pangolin.toml");
        std::fs::write(&file, "listne = \"127.0.0.1:9999\"\n").unwrap();
        let error = settings(parse(&["--config", file.to_str().unwrap()])).unwrap_err();
        assert!(format!("{error:#}").contains("listne"), "{error:#}");
    }
}
