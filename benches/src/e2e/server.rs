//! The real server: `pangolin serve` started as a child process on a free loopback port, with
//! its data directory and database, stopped with SIGTERM (as an operator would).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How long a server may take to answer `/ready`.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings the server would otherwise take from the environment of this process.
const SERVER_ENV: &[&str] = &[
    "PANGOLIN_CONFIG",
    "PANGOLIN_LISTEN",
    "PANGOLIN_DATA_DIR",
    "PANGOLIN_DATABASE_URL",
    "PANGOLIN_DATABASE_SCHEMA",
    "PANGOLIN_WAREHOUSE",
    "PANGOLIN_DEFAULT_CATALOG",
    "PANGOLIN_CACHE_MIB",
];

/// A running `pangolin serve`; killed if dropped without [`Server::stop`].
#[derive(Debug)]
pub struct Server {
    child: Child,
    base: String,
    log: PathBuf,
}

/// A port nobody listens on now (the server binds it right after).
fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

impl Server {
    /// Starts `binary serve` on `data_dir` with `args` (the database flags) and waits until it
    /// is ready. Its output goes to `server.log` in the data directory; only warnings are
    /// logged, so that logging costs nothing measurable.
    pub async fn start(binary: &Path, data_dir: &Path, args: &[String]) -> anyhow::Result<Self> {
        let port = free_port()?;
        let log = data_dir.join("server.log");
        let out = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("opening {}", log.display()))?;
        let mut command = Command::new(binary);
        command
            .arg("serve")
            // Measures the catalog, not sign-in: requests carry no credentials.
            .arg("--no-auth")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(data_dir)
            .args(args)
            .env("RUST_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        for name in SERVER_ENV {
            command.env_remove(name);
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut server = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
        };
        server.wait_ready().await?;
        Ok(server)
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The last lines the server wrote.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let client = reqwest::Client::builder().no_proxy().build()?;
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the server exited ({status}) before it was ready:\n{}",
                    self.log_tail()
                );
            }
            if let Ok(response) = client.get(format!("{}/ready", self.base)).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "the server was not ready after {START_TIMEOUT:?}:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM (in-flight requests finish), then SIGKILL if it has not exited in 30 s.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill")
            .args(["-TERM", &pid])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let asked = Instant::now();
        while asked.elapsed() < Duration::from_secs(30) {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.child.kill()?;
        self.child.wait()?;
        bail!("the server did not stop on SIGTERM within 30 s; killed it")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
