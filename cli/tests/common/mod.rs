//! What the integration tests share: the real `pangolin serve` binary on a free port with a
//! fresh data directory, and plain HTTP/1.1 requests to it.
#![allow(dead_code, clippy::unwrap_used)]

pub(crate) mod setup;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 request with `Connection: close`; returns the status and the body.
pub(crate) fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    http_as(port, None, method, path, body)
}

/// [`http`] with `Authorization: Bearer <token>` when a token is given.
pub(crate) fn http_as(
    port: u16,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    let mut stream = connect(port);
    let body = body.unwrap_or("");
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Connects, retrying briefly: on a loaded machine a fresh listener can refuse a connection
/// for a moment while its accept loop starts.
fn connect(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => return stream,
            Err(e) if Instant::now() < deadline => {
                eprintln!("connect to {port}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("cannot connect to the server on port {port}: {e}"),
        }
    }
}

/// A running server, killed if the test fails before stopping it.
pub(crate) struct Server(pub(crate) Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub(crate) fn start(data_dir: &Path, port: u16) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_pangolin"))
        .args([
            "serve",
            "--no-auth",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(data_dir)
        .env_remove("PANGOLIN_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut server = Server(Some(child));
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        let exited = server.0.as_mut().and_then(|c| c.try_wait().ok().flatten());
        assert!(
            exited.is_none(),
            "the server exited before listening: {exited:?}"
        );
        assert!(
            Instant::now() < deadline,
            "the server did not start listening"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Starts a server without authentication on a port the system picks, and returns it with
/// that port: the port is read from the server's "pangolin is serving" log line, so parallel
/// tests never race for a port another server may take first.
pub(crate) fn start_anywhere(data_dir: &Path) -> (Server, u16) {
    start_anywhere_with(data_dir, None)
}

/// [`start_anywhere`], requiring sign-in when `root_password` is given: root gets that
/// password, and bcrypt runs at its lowest cost so debug builds sign in quickly.
pub(crate) fn start_anywhere_with(data_dir: &Path, root_password: Option<&str>) -> (Server, u16) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pangolin"));
    command.arg("serve");
    match root_password {
        Some(password) => command
            .env("PANGOLIN_ROOT_PASSWORD", password)
            .env("PANGOLIN_BCRYPT_COST", "4"),
        None => command.arg("--no-auth"),
    };
    let mut child = command
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env_remove("PANGOLIN_CONFIG")
        .env_remove("PANGOLIN_NO_AUTH")
        .env_remove("PANGOLIN_JWT_SECRET")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(Some(child));
    let (sender, receiver) = std::sync::mpsc::channel();
    // Reads the log to its end, so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sender = Some(sender);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains("pangolin is serving")
                && let Some(sender) = sender.take()
            {
                let _ = sender.send(line);
            }
        }
    });
    let line = receiver
        .recv_timeout(Duration::from_secs(30))
        .expect("the server did not say where it listens");
    let port = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix("address="))
        .and_then(|address| address.rsplit_once(':'))
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_else(|| panic!("no address in the log line: {line}"));
    (server, port)
}

/// Stops a server with SIGTERM and checks it exits cleanly.
pub(crate) fn terminate(mut server: Server) {
    let mut child = server.0.take().expect("running");
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "graceful shutdown exits cleanly: {status}"
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What one run of the client printed, and how it exited.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    #[track_caller]
    pub(crate) fn success(self) -> Self {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }

    #[track_caller]
    pub(crate) fn fails_with(self, code: i32) -> Self {
        assert_eq!(self.code, code, "{self:?}");
        assert!(
            self.stderr.starts_with("error: ") && self.stderr.trim_end().lines().count() == 1,
            "an error is one line on stderr: {self:?}"
        );
        self
    }
}

/// The client with nothing from this machine's environment or configuration.
pub(crate) fn pangolin(config: &Path, server: Option<&str>, args: &[&str]) -> Run {
    pangolin_with(config, server, args, &[], None)
}

/// [`pangolin`] with environment variables set and, when given, text on standard input
/// (otherwise standard input is empty).
pub(crate) fn pangolin_with(
    config: &Path,
    server: Option<&str>,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&str>,
) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pangolin"));
    command
        .args(args)
        .env("PANGOLIN_CONFIG_DIR", config)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in [
        "PANGOLIN_SERVER",
        "PANGOLIN_CATALOG",
        "PANGOLIN_PROFILE",
        "PANGOLIN_TOKEN",
        "PANGOLIN_API_KEY",
        "PANGOLIN_PASSWORD",
        "PANGOLIN_USER",
        "PANGOLIN_TENANT",
    ] {
        command.env_remove(name);
    }
    if let Some(server) = server {
        command.env("PANGOLIN_SERVER", server);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

pub(crate) const ROOT_PASSWORD: &str = "correct horse battery staple";

/// A server that requires sign-in, and a fresh configuration directory for the client.
pub(crate) struct Secured {
    pub(crate) port: u16,
    pub(crate) config: TempDir,
    _data: TempDir,
    _server: Server,
}

pub(crate) fn secured() -> Secured {
    let data = tempfile::tempdir().unwrap();
    let (server, port) = start_anywhere_with(data.path(), Some(ROOT_PASSWORD));
    Secured {
        port,
        config: tempfile::tempdir().unwrap(),
        _data: data,
        _server: server,
    }
}

impl Secured {
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        pangolin(self.config.path(), Some(&self.url()), args)
    }

    pub(crate) fn run_with(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Run {
        pangolin_with(self.config.path(), Some(&self.url()), args, env, stdin)
    }

    /// `pangolin login --user root`, the password from `PANGOLIN_PASSWORD`.
    pub(crate) fn login_root(&self) -> Run {
        self.run_with(
            &["login", "--user", "root"],
            &[("PANGOLIN_PASSWORD", ROOT_PASSWORD)],
            None,
        )
        .success()
    }

    pub(crate) fn profile_file(&self) -> PathBuf {
        self.config.path().join("profiles.toml")
    }

    /// The default profile as saved.
    pub(crate) fn profile(&self) -> toml::Table {
        let text = std::fs::read_to_string(self.profile_file()).unwrap();
        let file: toml::Table = toml::from_str(&text).unwrap();
        file["profiles"]["default"].as_table().unwrap().clone()
    }

    pub(crate) fn set_profile(&self, change: impl FnOnce(&mut toml::Table)) {
        let text = std::fs::read_to_string(self.profile_file()).unwrap();
        let mut file: toml::Table = toml::from_str(&text).unwrap();
        let profile = file["profiles"]["default"].as_table_mut().unwrap();
        change(profile);
        std::fs::write(self.profile_file(), toml::to_string(&file).unwrap()).unwrap();
    }
}

/// A text field of a saved profile.
pub(crate) fn text(table: &toml::Table, key: &str) -> Option<String> {
    table.get(key).and_then(|v| v.as_str()).map(str::to_owned)
}
