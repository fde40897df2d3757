//! The HTTP calls the workloads make: paths of the Iceberg REST and management APIs, and the
//! few calls that set workloads up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, bail};
use bytes::Bytes;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The Iceberg REST prefix of the default catalog on `main`.
pub const ICEBERG: &str = "/v1/default";
/// The management API of the default catalog.
pub const MANAGEMENT: &str = "/api/v1/catalogs/default";
/// The web UI's pages of the same catalog.
pub const UI: &str = "/ui/catalogs/default";

/// One HTTP client (its connection pool shared by every task of a measurement) and the
/// servers it sends to: with several (replicas on one database), each request goes to the next
/// one in turn, as a round-robin load balancer would send it.
#[derive(Debug, Clone)]
pub struct Api {
    client: reqwest::Client,
    bases: Arc<[String]>,
    next: Arc<AtomicUsize>,
}

/// A status and the whole body (every call reads the body to its end).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Bytes,
}

impl Answer {
    /// Fails unless the status is `expected`, quoting the start of the body.
    pub fn expect(self, expected: StatusCode, what: &str) -> anyhow::Result<Self> {
        if self.status != expected {
            bail!(
                "{what}: expected {expected}, got {}: {}",
                self.status,
                self.excerpt()
            );
        }
        Ok(self)
    }

    /// Fails unless the status is a success (2xx).
    pub fn success(self, what: &str) -> anyhow::Result<Self> {
        if !self.status.is_success() {
            bail!("{what}: got {}: {}", self.status, self.excerpt());
        }
        Ok(self)
    }

    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_slice(&self.body).context("the answer is not JSON")
    }

    pub fn excerpt(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        text.chars().take(300).collect()
    }
}

impl Api {
    /// A client for `bases` (`http://127.0.0.1:port`, one or more) that keeps up to
    /// `connections` open to each.
    pub fn new(bases: &[String], connections: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(!bases.is_empty(), "no server to send to");
        let client = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(connections.max(1))
            .timeout(std::time::Duration::from_secs(120))
            .build()
            .context("building the HTTP client")?;
        Ok(Self {
            client,
            bases: bases
                .iter()
                .map(|b| b.trim_end_matches('/').to_owned())
                .collect(),
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The URL of `path` on the server whose turn it is.
    fn url(&self, path: &str) -> String {
        let turn = self.next.fetch_add(1, Ordering::Relaxed) % self.bases.len();
        format!("{}{path}", self.bases[turn])
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Answer> {
        let response = self
            .client
            .get(self.url(path))
            .send()
            .await
            .with_context(|| format!("GET {path}"))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .with_context(|| format!("GET {path}"))?;
        Ok(Answer { status, body })
    }

    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Answer> {
        let response = self
            .client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .with_context(|| format!("POST {path}"))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .with_context(|| format!("POST {path}"))?;
        Ok(Answer { status, body })
    }

    /// Creates branch `name` from `from`.
    pub async fn create_branch(&self, name: &str, from: &str) -> anyhow::Result<()> {
        self.post(
            &format!("{MANAGEMENT}/refs"),
            &json!({ "name": name, "type": "branch", "from": from }),
        )
        .await?
        .success("creating a branch")?;
        Ok(())
    }

    /// The hash and time (RFC 3339) of the commit `back` first-parent steps behind `main`.
    pub async fn commit_back(&self, back: u64) -> anyhow::Result<(String, String)> {
        let answer = self
            .get(&format!("{MANAGEMENT}/refs/main~{back}"))
            .await?
            .expect(StatusCode::OK, "reading main~n")?;
        let body = answer.json()?;
        let field = |name: &str| {
            body[name]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("no `{name}` in {body}"))
        };
        Ok((field("hash")?, field("time")?))
    }

    /// The ref-log sequence number of the catalog's newest event: read through pages of a
    /// filter nothing matches, which skip entries without deriving their events.
    pub async fn last_event_sequence(&self) -> anyhow::Result<u64> {
        let mut after = String::new();
        loop {
            let answer = self
                .get(&format!(
                    "{MANAGEMENT}/events?ref=no-such-ref&pageSize=1{after}"
                ))
                .await?
                .expect(StatusCode::OK, "reading events")?;
            let body = answer.json()?;
            let cursor = body["next-cursor"]
                .as_str()
                .with_context(|| format!("no `next-cursor` in {body}"))?
                .to_owned();
            if after == format!("&after={cursor}") {
                let sequence = cursor.split('.').next().unwrap_or_default();
                return sequence
                    .parse()
                    .with_context(|| format!("`{cursor}` is not a cursor"));
            }
            after = format!("&after={cursor}");
        }
    }

    /// One catalog commit on `branch` setting property `bench.mark` of every table in `tables`
    /// (`(namespace, name)`) to `mark`: a change to each table's metadata.
    pub async fn touch_tables(
        &self,
        branch: &str,
        tables: &[(String, String)],
        mark: u64,
    ) -> anyhow::Result<()> {
        let changes: Vec<Value> = tables
            .iter()
            .map(|(namespace, name)| {
                json!({
                    "identifier": { "namespace": [namespace], "name": name },
                    "updates": [{
                        "action": "set-properties",
                        "updates": { "bench.mark": mark.to_string() },
                    }],
                })
            })
            .collect();
        self.post(
            &format!("/v1/default@{branch}/transactions/commit"),
            &json!({ "table-changes": changes }),
        )
        .await?
        .success("committing a transaction")?;
        Ok(())
    }
}

/// The Iceberg path of a table; `name` may carry an (encoded) reference: `hot@main%23<hash>`.
pub fn table_path(namespace: &str, name: &str) -> String {
    format!("{ICEBERG}/namespaces/{namespace}/tables/{name}")
}

/// Page tokens of the management API: hex of the text they stand for (here a commit hash).
pub fn page_token(raw: &str) -> String {
    raw.bytes().map(|b| format!("{b:02x}")).collect()
}
