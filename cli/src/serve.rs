//! `pangolin serve`: the server on the embedded default, with nothing to configure.
//!
//! Every setting comes, in order of precedence, from a flag, an environment variable, the
//! configuration file (`--config`), or its default.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use pangolin_api::directory::CatalogDirectory;
use pangolin_api::security::Security;
use pangolin_api::security::external::{ProviderConfig, Providers};
use pangolin_api::{AppState, SharedState};
use pangolin_backend_postgres::{PoolSettings, PostgresBackend};
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_catalog::iceberg::metadata_cache::DEFAULT_CAPACITY_BYTES;
use pangolin_catalog::iceberg::{MetadataCache, S3Settings, Secret};
use pangolin_catalog::tenancy::{
    Credentials, DefaultSetup, SecretKey, StorageConfig, StsSettings, Tenancy,
    UpdateWarehouseError, WarehouseSpec, WarehouseUpdate,
};
use pangolin_catalog::{SoleWriterRefCache, Store};
use pangolin_identity::{Identity, IdentityConfig, Password, SigningKey, SystemClock};
use pangolin_records::{AuditLog, RecordStore};
use pangolin_store::ObjectCache;
use serde::Deserialize;

use crate::telemetry::LogFormat;

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// A TOML file with any of the settings below (keys as the flags, with `_`: `data_dir`).
    #[arg(long, env = "PANGOLIN_CONFIG")]
    config: Option<PathBuf>,
    /// How log lines are written: `text` for people, `json` (one object per line, with the
    /// request's id) for collectors. A flag or the environment only: logging starts before
    /// the configuration file is read.
    #[arg(long, env = "PANGOLIN_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "PANGOLIN_LISTEN")]
    listen: Option<SocketAddr>,
    /// Directory for the SQLite database and, unless `--warehouse` says otherwise, table files
    /// [default: ./pangolin-data].
    #[arg(long, env = "PANGOLIN_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Where catalog state is kept: `postgres://user@host:port/db` for PostgreSQL,
    /// `sqlite://path`, or `rocksdb://path` (builds with the `rocksdb` feature); the SQLite
    /// file `<data-dir>/pangolin.db` when absent.
    #[arg(long, env = "PANGOLIN_DATABASE_URL")]
    database_url: Option<String>,
    /// PostgreSQL schema to keep the tables in (created if missing) [default: public].
    #[arg(long, env = "PANGOLIN_DATABASE_SCHEMA")]
    database_schema: Option<String>,
    /// Where table data and metadata files go (`file:///...`, an absolute path, or
    /// `s3://bucket/prefix` with the `--s3-*` settings) [default: <data-dir>/warehouse].
    #[arg(long, env = "PANGOLIN_WAREHOUSE")]
    warehouse: Option<String>,
    /// The catalog clients get when they name no warehouse; created on first start
    /// [default: default].
    #[arg(long, env = "PANGOLIN_DEFAULT_CATALOG")]
    default_catalog: Option<String>,
    /// Memory for cached catalog objects, in MiB [default: 256].
    #[arg(long, env = "PANGOLIN_CACHE_MIB")]
    cache_mib: Option<u64>,
    /// Memory for parsed table metadata files, in MiB, shared by every warehouse; a file is
    /// taken to need seven times its size [default: 512].
    #[arg(long, env = "PANGOLIN_METADATA_CACHE_MIB")]
    metadata_cache_mib: Option<u64>,
    /// How long, in milliseconds, this server trusts what it read of catalogs, callers and
    /// roles: the longest a change made through another server sharing the database (a
    /// revoked grant, a disabled user, a rebound catalog) takes to apply here. Changes made
    /// through this server apply at once. 0 reads them on every request [default: 2000].
    #[arg(long, env = "PANGOLIN_SHARED_STATE_TTL_MS")]
    shared_state_ttl_ms: Option<u64>,
    /// How often, in milliseconds, this server offers to run the background jobs (expiring
    /// idempotency keys); of the servers sharing a database one runs each job per period
    /// [default: 300000].
    #[arg(long, env = "PANGOLIN_JOBS_PERIOD_MS", value_parser = clap::value_parser!(u64).range(1..))]
    jobs_period_ms: Option<u64>,
    /// Endpoint of an S3-compatible server for `s3://` warehouses (`http://127.0.0.1:9000`)
    /// [default: AWS].
    #[arg(long, env = "PANGOLIN_S3_ENDPOINT")]
    s3_endpoint: Option<String>,
    /// Region of the S3 buckets [default: us-east-1].
    #[arg(long, env = "PANGOLIN_S3_REGION")]
    s3_region: Option<String>,
    /// Static S3 access key id, with `--s3-secret-access-key` [default: the instance's role].
    #[arg(long, env = "PANGOLIN_S3_ACCESS_KEY_ID")]
    s3_access_key_id: Option<String>,
    /// The secret of that key. Prefer the environment variable or the file: others on the
    /// machine can read a process's flags.
    #[arg(long, env = "PANGOLIN_S3_SECRET_ACCESS_KEY", hide_env_values = true)]
    s3_secret_access_key: Option<Secret>,
    /// Path-style S3 requests (`<endpoint>/<bucket>/<key>`); `--s3-path-style=false` for
    /// virtual-hosted ones [default: path style with `--s3-endpoint`].
    #[arg(
        long,
        env = "PANGOLIN_S3_PATH_STYLE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    s3_path_style: Option<bool>,
    /// Give clients the static S3 keys in a table's `config`, so that they need none of their
    /// own. Every client then holds the server's keys [default: false].
    #[arg(
        long,
        env = "PANGOLIN_S3_HAND_OUT_CREDENTIALS",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    s3_hand_out_credentials: Option<bool>,
    /// Vend clients short-lived credentials scoped to each table, from this role
    /// (`arn:aws:iam::<account>:role/<name>`), assumed with the static S3 keys.
    #[arg(long, env = "PANGOLIN_S3_ROLE_ARN")]
    s3_role_arn: Option<String>,
    /// The external id the role's trust policy asks for.
    #[arg(long, env = "PANGOLIN_S3_EXTERNAL_ID", requires = "s3_role_arn")]
    s3_external_id: Option<String>,
    /// The STS endpoint [default: `--s3-endpoint`, else AWS's].
    #[arg(long, env = "PANGOLIN_S3_STS_ENDPOINT", requires = "s3_role_arn")]
    s3_sts_endpoint: Option<String>,
    /// How long vended credentials live, in seconds (AWS: 900 or more) [default: 900].
    #[arg(
        long,
        env = "PANGOLIN_S3_CREDENTIAL_LIFETIME",
        requires = "s3_role_arn"
    )]
    s3_credential_lifetime: Option<u64>,
    /// Sign clients' S3 requests for a table's files when they ask for remote signing
    /// [default: false].
    #[arg(
        long,
        env = "PANGOLIN_S3_REMOTE_SIGNING",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    s3_remote_signing: Option<bool>,
    /// Serve without authentication: every request acts as root of the default tenant. For
    /// local evaluation only: the server then refuses to listen beyond loopback.
    #[arg(
        long,
        env = "PANGOLIN_NO_AUTH",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    no_auth: Option<bool>,
    /// The password of `root`, used only when root is first created; when absent on first
    /// start, one is generated and printed once.
    #[arg(long, env = "PANGOLIN_ROOT_PASSWORD", hide_env_values = true)]
    root_password: Option<Secret>,
    /// The key that encrypts warehouse credentials at rest (64 hex characters). Give every
    /// replica the same one; when absent, one is kept in `<data-dir>/secret.key`.
    #[arg(long, env = "PANGOLIN_SECRET_KEY", hide_env_values = true)]
    secret_key: Option<Secret>,
    /// The key that signs access tokens (32 to 128 bytes). Give every replica the same one;
    /// when absent, one is generated on first start and kept in the database.
    #[arg(long, env = "PANGOLIN_JWT_SECRET", hide_env_values = true)]
    jwt_secret: Option<Secret>,
    /// A JSON file listing the identity providers (OpenID Connect) whose tokens callers may
    /// sign in with: `[{"tenant", "name", "settings": {"issuer", "audiences", ...}}]` (see
    /// docs/security.md).
    #[arg(long, env = "PANGOLIN_OIDC_PROVIDERS", value_name = "FILE")]
    oidc_providers: Option<PathBuf>,
    /// The bcrypt cost of new password and API key hashes (4 to 31) [default: 12]. Hidden:
    /// lower costs only make sense for tests, whose debug builds hash slowly.
    #[arg(
        long,
        env = "PANGOLIN_BCRYPT_COST",
        hide = true,
        value_parser = clap::value_parser!(u32).range(4..=31),
    )]
    bcrypt_cost: Option<u32>,
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
    metadata_cache_mib: Option<u64>,
    shared_state_ttl_ms: Option<u64>,
    jobs_period_ms: Option<u64>,
    s3_endpoint: Option<String>,
    s3_region: Option<String>,
    s3_access_key_id: Option<String>,
    s3_secret_access_key: Option<Secret>,
    s3_path_style: Option<bool>,
    s3_hand_out_credentials: Option<bool>,
    s3_role_arn: Option<String>,
    s3_external_id: Option<String>,
    s3_sts_endpoint: Option<String>,
    s3_credential_lifetime: Option<u64>,
    s3_remote_signing: Option<bool>,
    no_auth: Option<bool>,
    root_password: Option<Secret>,
    jwt_secret: Option<Secret>,
    secret_key: Option<Secret>,
    oidc_providers: Option<PathBuf>,
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
    metadata_cache_mib: u64,
    /// How long answers read from shared records are trusted (see the flag).
    shared_state_ttl: std::time::Duration,
    /// How often the background jobs are offered to this server.
    jobs_period: std::time::Duration,
    /// For `s3://` locations; redacts its secret when shown.
    s3: S3Settings,
    /// How an `s3://` default warehouse delegates access to clients.
    s3_delegation: S3Delegation,
    no_auth: bool,
    root_password: Option<Secret>,
    jwt_secret: Option<Secret>,
    secret_key: Option<Secret>,
    bcrypt_cost: Option<u32>,
    /// Identity providers whose tokens callers may sign in with.
    oidc_providers: Vec<ProviderConfig>,
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
    let s3 = S3Settings {
        endpoint: args.s3_endpoint.or(file.s3_endpoint),
        region: args.s3_region.or(file.s3_region),
        path_style: args.s3_path_style.or(file.s3_path_style),
        access_key_id: args.s3_access_key_id.or(file.s3_access_key_id),
        secret_access_key: args.s3_secret_access_key.or(file.s3_secret_access_key),
        hand_out_credentials: args
            .s3_hand_out_credentials
            .or(file.s3_hand_out_credentials)
            .unwrap_or(false),
    };
    s3.validate().map_err(anyhow::Error::msg)?;
    let s3_delegation = S3Delegation {
        sts: args
            .s3_role_arn
            .or(file.s3_role_arn)
            .map(|role_arn| StsSettings {
                role_arn,
                external_id: args.s3_external_id.or(file.s3_external_id),
                endpoint: args.s3_sts_endpoint.or(file.s3_sts_endpoint),
                region: None,
                lifetime_seconds: args
                    .s3_credential_lifetime
                    .or(file.s3_credential_lifetime)
                    .unwrap_or(900),
            }),
        remote_signing: args
            .s3_remote_signing
            .or(file.s3_remote_signing)
            .unwrap_or(false),
    };
    let oidc_providers = match args.oidc_providers.or(file.oidc_providers) {
        None => Vec::new(),
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading the identity providers {}", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("in the identity providers {}", path.display()))?
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
        metadata_cache_mib: args
            .metadata_cache_mib
            .or(file.metadata_cache_mib)
            .unwrap_or(DEFAULT_CAPACITY_BYTES >> 20),
        shared_state_ttl: args
            .shared_state_ttl_ms
            .or(file.shared_state_ttl_ms)
            .map_or(
                pangolin_api::SHARED_STATE_TTL,
                std::time::Duration::from_millis,
            ),
        jobs_period: args.jobs_period_ms.or(file.jobs_period_ms).map_or(
            pangolin_api::jobs::DEFAULT_PERIOD,
            std::time::Duration::from_millis,
        ),
        s3,
        s3_delegation,
        no_auth: args.no_auth.or(file.no_auth).unwrap_or(false),
        root_password: args.root_password.or(file.root_password),
        jwt_secret: args.jwt_secret.or(file.jwt_secret),
        secret_key: args.secret_key.or(file.secret_key),
        bcrypt_cost: args.bcrypt_cost,
        oidc_providers,
    })
}

/// The tenant of the default catalog, and of every request without authentication.
const TENANT: &str = "default";

/// The default tenant's warehouse, as the flags describe it.
const DEFAULT_WAREHOUSE: &str = "default";

/// The catalog store. PostgreSQL may be shared by several servers, so its refs are always read
/// from the database; an SQLite file or a RocksDB directory belongs to this server alone, which
/// lets branch heads be answered from memory ([`SoleWriterRefCache`]). The store is also the
/// audit log: commits append their events through it, so every other event must go there too.
async fn open_store(settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
    let store = open_database(settings).await?;
    let shared = settings
        .database_url
        .as_deref()
        .is_some_and(|url| url.starts_with("postgres://") || url.starts_with("postgresql://"));
    let store: Arc<dyn Store> = if shared {
        store
    } else {
        Arc::new(SoleWriterRefCache::new(store))
    };
    Ok(store)
}

/// An SQLite database, its connections sampled for the metrics.
fn sqlite(backend: SqliteBackend) -> Arc<dyn Store> {
    let sampled = backend.pool().clone();
    crate::telemetry::pool_gauges(move || (sampled.size(), sampled.num_idle()));
    Arc::new(backend)
}

async fn open_database(settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
    match settings.database_url.as_deref() {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            let pool = PoolSettings {
                schema: settings.database_schema.clone(),
                ..PoolSettings::default()
            };
            let store = PostgresBackend::connect(url, &pool)
                .await
                .context("connecting to PostgreSQL")?;
            let sampled = store.pool().clone();
            crate::telemetry::pool_gauges(move || (sampled.size(), sampled.num_idle()));
            Ok(Arc::new(store))
        }
        Some(url) if url.starts_with("sqlite:") => Ok(sqlite(
            SqliteBackend::open_url(url)
                .await
                .with_context(|| format!("opening the database {url}"))?,
        )),
        #[cfg(feature = "rocksdb")]
        Some(url) if url.starts_with("rocksdb://") => {
            let path = &url["rocksdb://".len()..];
            Ok(Arc::new(
                pangolin_backend_rocksdb::RocksBackend::open(path)
                    .with_context(|| format!("opening the RocksDB database {path}"))?,
            ))
        }
        #[cfg(not(feature = "rocksdb"))]
        Some(url) if url.starts_with("rocksdb://") => {
            bail!("this build has no RocksDB support: build it with `--features rocksdb`")
        }
        Some(other) => bail!("unsupported database URL `{other}`: use postgres:// or sqlite://"),
        None => {
            let database = settings.data_dir.join("pangolin.db");
            Ok(sqlite(SqliteBackend::open(&database).await.with_context(
                || format!("opening the database {}", database.display()),
            )?))
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
    crate::telemetry::logs(args.log_format);
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
    crate::telemetry::metrics()?;
    // Without authentication anyone who reaches the port is root: only this machine may.
    if settings.no_auth && !settings.listen.ip().is_loopback() {
        bail!(
            "refusing to listen on {} without authentication: --no-auth only listens on \
             loopback addresses (127.0.0.1, ::1)",
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
    let security = security(&settings, &store)
        .await?
        .with_cache_ttl(settings.shared_state_ttl);
    let warehouse = warehouse_location(&settings)?;
    let cache = Arc::new(ObjectCache::new(settings.cache_mib << 20));
    let metadata = Arc::new(MetadataCache::new(settings.metadata_cache_mib << 20));
    let tenancy = Tenancy::new(store.clone(), cache.clone(), server_key(&settings)?)
        .with_metadata_cache(metadata);
    default_catalog(&tenancy, &settings, &warehouse).await?;
    let state = AppState::from(SharedState {
        store,
        cache,
        commits: Default::default(),
        events: Default::default(),
        staged: Default::default(),
        security: Arc::new(security),
        tenant: TENANT.to_owned(),
        default_catalog: settings.default_catalog.clone(),
        catalogs: Arc::new(CatalogDirectory::new(tenancy).with_ttl(settings.shared_state_ttl)),
    });
    pangolin_api::jobs::Jobs::new(state.store.clone(), settings.jobs_period).spawn();
    pangolin_api::webhooks::Deliverer::new(state.clone(), Default::default()).spawn();
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("listening on {}", settings.listen))?;
    tracing::info!(
        address = %listener.local_addr()?,
        data_dir = %settings.data_dir.display(),
        %warehouse,
        s3_endpoint = settings.s3.endpoint.as_deref().unwrap_or("-"),
        database = if settings.database_url.is_some() { "configured" } else { "sqlite" },
        "pangolin is serving"
    );
    let security = state.security.clone();
    let app = pangolin_api::router(state).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown())
        .await
        .context("serving")?;
    // Audit events of the last refused requests may still be queued.
    security.audit_writer.flush().await;
    tracing::info!("stopped");
    Ok(())
}

/// How the default warehouse delegates access to its files (the `--s3-role-arn` and
/// `--s3-remote-signing` settings).
#[derive(Debug, Clone, Default)]
struct S3Delegation {
    sts: Option<StsSettings>,
    remote_signing: bool,
}

/// The warehouse the flags describe (`--warehouse` and the `--s3-*` settings).
fn warehouse_spec(location: &str, s3: &S3Settings, delegation: &S3Delegation) -> WarehouseSpec {
    let Some(rest) = location.strip_prefix("s3://") else {
        return WarehouseSpec {
            storage: StorageConfig::Local {
                root: location.to_owned(),
            },
            credentials: None,
        };
    };
    let (bucket, prefix) = match rest.split_once('/') {
        Some((bucket, prefix)) => (bucket, Some(prefix.trim_matches('/').to_owned())),
        None => (rest, None),
    };
    WarehouseSpec {
        storage: StorageConfig::S3 {
            bucket: bucket.to_owned(),
            prefix: prefix.filter(|p| !p.is_empty()),
            region: s3.region.clone(),
            endpoint: s3.endpoint.clone(),
            path_style: s3.path_style,
            hand_out_credentials: s3.hand_out_credentials,
            sts: delegation.sts.clone(),
            remote_signing: delegation.remote_signing,
        },
        credentials: match (&s3.access_key_id, &s3.secret_access_key) {
            (Some(id), Some(secret)) => Some(Credentials::S3 {
                access_key_id: id.clone(),
                secret_access_key: secret.clone(),
                session_token: None,
            }),
            _ => None,
        },
    }
}

/// The default tenant with its warehouse `default` and the default catalog, created on first
/// start (an existing catalog is adopted with its history). The flags own that warehouse:
/// when they describe it differently than its record does, the record follows them.
async fn default_catalog(
    tenancy: &Tenancy,
    settings: &Settings,
    location: &str,
) -> anyhow::Result<()> {
    let spec = warehouse_spec(location, &settings.s3, &settings.s3_delegation);
    let outcome = tenancy
        .ensure_default(DefaultSetup {
            tenant: TENANT.to_owned(),
            warehouse: DEFAULT_WAREHOUSE.to_owned(),
            warehouse_spec: spec.clone(),
            catalog: settings.default_catalog.clone(),
            principal: "pangolin".to_owned(),
        })
        .await
        .context("setting up the default catalog")?;
    if outcome.created_catalog {
        tracing::info!(catalog = %settings.default_catalog, "created the default catalog");
    }
    let current = tenancy
        .warehouse(TENANT, DEFAULT_WAREHOUSE)
        .await
        .context("reading the default warehouse")?;
    // Compared decrypted, so an unchanged start writes nothing and credentials dropped from
    // the flags are dropped from the record too.
    let stored_credentials = current.value.credentials(tenancy.key()).ok().flatten();
    if !outcome.created_warehouse
        && (current.value.storage != spec.storage || stored_credentials != spec.credentials)
    {
        let update = WarehouseUpdate {
            storage: Some(spec.storage),
            credentials: Some(spec.credentials),
        };
        match tenancy
            .update_warehouse(TENANT, DEFAULT_WAREHOUSE, current.version, update)
            .await
        {
            Ok(_) => {}
            // Another server starting at the same moment updated it first.
            Err(UpdateWarehouseError::Conflict { .. }) => {}
            Err(e) => return Err(e).context("updating the default warehouse"),
        }
    }
    Ok(())
}

/// The key that encrypts warehouse credentials at rest: configured (64 hex characters), or
/// kept in `<data-dir>/secret.key`, generated (readable by this user only) on first start.
/// Servers sharing a database must share the key: configure it for them.
fn server_key(settings: &Settings) -> anyhow::Result<SecretKey> {
    if let Some(hex) = &settings.secret_key {
        return SecretKey::from_hex(hex.expose()).context("the server secret key");
    }
    let path = settings.data_dir.join("secret.key");
    match std::fs::read_to_string(&path) {
        Ok(text) => SecretKey::from_hex(text.trim())
            .with_context(|| format!("the key in {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = SecretKey::generate();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options
                .open(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            std::io::Write::write_all(&mut file, key.reveal_hex().as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            tracing::info!(path = %path.display(), "generated the server secret key");
            Ok(key)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Identity, authorization and audit: off with `--no-auth`; otherwise users sign in, and on
/// first start `root` is created (its generated password printed once).
async fn security(settings: &Settings, store: &Arc<dyn Store>) -> anyhow::Result<Security> {
    let records: Arc<dyn RecordStore> = store.clone();
    let audit: Arc<dyn AuditLog> = store.clone();
    if settings.no_auth {
        anyhow::ensure!(
            settings.oidc_providers.is_empty(),
            "identity providers sign callers in: they cannot be used with --no-auth"
        );
        tracing::warn!("authentication is off: every request acts as root");
        return Ok(Security::disabled(records, audit));
    }
    let providers = Providers::new(settings.oidc_providers.clone()).map_err(anyhow::Error::msg)?;
    let signing_key = settings
        .jwt_secret
        .as_ref()
        .map(|secret| SigningKey::new(secret.expose().as_bytes().to_vec()))
        .transpose()
        .context("the JWT secret")?;
    let defaults = IdentityConfig::default();
    let config = IdentityConfig {
        signing_key,
        bcrypt_cost: settings.bcrypt_cost.unwrap_or(defaults.bcrypt_cost),
        api_key_record_ttl: settings.shared_state_ttl,
        ..defaults
    };
    let identity = Identity::open(records.clone(), config, Arc::new(SystemClock))
        .await
        .context("opening the identity store")?;
    let configured = settings
        .root_password
        .as_ref()
        .map(|p| Password::new(p.expose()));
    if let Some(generated) = identity
        .bootstrap_root(configured.as_ref())
        .await
        .context("creating the root user")?
    {
        // Printed, not logged: log collectors keep what they are given.
        eprintln!(
            "\n  Created the administrator `root` with the password\n\n      {}\n\n  It is shown \
             only now. Sign in with `pangolin login` and change it.\n",
            generated.expose()
        );
    }
    Ok(Security::required(identity, records, audit).with_external(providers))
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
            "listen = \"127.0.0.1:9999\"\ncache_mib = 64\nmetadata_cache_mib = 48\n\
             default_catalog = \"lake\"\n",
        )
        .unwrap();
        let config = file.to_str().unwrap();
        let s = settings(parse(&["--config", config, "--cache-mib", "32"])).unwrap();
        assert_eq!(s.cache_mib, 32, "the flag wins");
        assert_eq!(s.metadata_cache_mib, 48);
        assert_eq!(s.listen.port(), 9999, "the file wins over the default");
        assert_eq!(s.default_catalog, "lake");
        assert_eq!(s.data_dir, PathBuf::from("./pangolin-data"), "default");
    }

    #[test]
    fn s3_settings_come_from_flags_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pangolin.toml");
        std::fs::write(
            &file,
            "s3_endpoint = \"http://127.0.0.1:9000\"\ns3_region = \"eu-west-1\"\n\
             s3_access_key_id = \"id\"\ns3_secret_access_key = \"hidden\"\n\
             s3_hand_out_credentials = true\n",
        )
        .unwrap();
        let config = file.to_str().unwrap();
        let s = settings(parse(&["--config", config, "--s3-region", "us-west-2"])).unwrap();
        assert_eq!(s.s3.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(s.s3.region.as_deref(), Some("us-west-2"), "the flag wins");
        assert_eq!(s.s3.secret_access_key.as_ref().unwrap().expose(), "hidden");
        assert!(s.s3.hand_out_credentials);
        assert_eq!(s.s3.path_style, None);
        assert_eq!(
            s.s3.effective_path_style(),
            Some(true),
            "an endpoint: path style"
        );
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("hidden"),
            "the secret is never shown: {shown}"
        );

        let flag = |flags: &[&str]| settings(parse(flags)).unwrap().s3.path_style;
        assert_eq!(flag(&["--s3-path-style"]), Some(true));
        assert_eq!(flag(&["--s3-path-style=false"]), Some(false));
        assert_eq!(flag(&[]), None);
    }

    #[test]
    fn an_s3_key_without_its_secret_is_refused() {
        let error = settings(parse(&["--s3-access-key-id", "id"])).unwrap_err();
        assert!(format!("{error:#}").contains("secret"), "{error:#}");
        let error = settings(parse(&["--s3-endpoint", "127.0.0.1:9000"])).unwrap_err();
        assert!(format!("{error:#}").contains("http://"), "{error:#}");
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
