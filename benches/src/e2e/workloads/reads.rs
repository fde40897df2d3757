//! Reads that are one GET each: table loads at a branch, a hash, a time or `~n` (and of a table
//! many appends old), listings, a diff, a deep log page, pages of change events, and the web
//! UI's log page (rendered HTML) at the top and deep down. Each sets up what it reads, then
//! every task GETs the same path.

use std::sync::Arc;

use anyhow::bail;
use reqwest::StatusCode;

use super::super::api::{Api, ICEBERG, MANAGEMENT, UI, page_token, table_path};
use super::super::driver::{Op, Worker, drive};
use super::super::fixture::{BENCH, HOT, bulk_table};
use super::super::stats::{Basis, Figures};
use super::{Env, unique};

/// Appends before `load-appended` reads its table: past the 100 metadata-log entries a table
/// keeps by default, so its metadata is as large as a busy table's gets.
const APPENDS: usize = 110;

#[derive(Debug)]
struct Getter {
    api: Api,
    path: Arc<str>,
}

impl Worker for Getter {
    async fn op(&mut self) -> anyhow::Result<Op> {
        self.api
            .get(&self.path)
            .await?
            .expect(StatusCode::OK, &self.path)?;
        Ok(Op::default())
    }
}

/// The path workload `name` reads, after setting up what it needs.
async fn path(name: &str, api: &Api, env: &Env) -> anyhow::Result<String> {
    Ok(match name {
        "load-hot" => table_path(BENCH, HOT),
        "load-appended" => {
            let name = format!("appended_{}", unique());
            super::writes::appended_table(api, &name, APPENDS).await?
        }
        "load-branch" => {
            let branch = format!("read-{}", unique());
            api.create_branch(&branch, "main").await?;
            table_path(BENCH, &format!("{HOT}@{branch}"))
        }
        "load-at-hash" => {
            let (hash, _) = api.commit_back(env.back).await?;
            table_path(BENCH, &format!("{HOT}@main%23{hash}"))
        }
        "load-at-time" => {
            let (_, time) = api.commit_back(env.back).await?;
            table_path(BENCH, &format!("{HOT}@main%23{time}"))
        }
        "load-back" => table_path(BENCH, &format!("{HOT}@main~{}", env.back)),
        "list-namespaces" => format!("{ICEBERG}/namespaces"),
        "list-tables" => format!("{ICEBERG}/namespaces/ns_00/tables?pageSize=100"),
        "diff" => {
            let branch = format!("diff-{}", unique());
            api.create_branch(&branch, "main").await?;
            let tables: Vec<_> = (0..10.min(env.tables)).map(bulk_table).collect();
            api.touch_tables(&branch, &tables, unique()).await?;
            format!("{MANAGEMENT}/diff?from=main&to={branch}")
        }
        "log-page-deep" => {
            // The oldest page that is still a full page of 100 commits.
            let (hash, _) = api.commit_back(env.depth.saturating_sub(100)).await?;
            format!(
                "{MANAGEMENT}/refs/main/log?pageSize=100&pageToken={}",
                page_token(&hash)
            )
        }
        "events-page-first" => format!("{MANAGEMENT}/events?pageSize=100"),
        "events-page-deep" => {
            // The newest hundred events: at the end of the deepest history.
            let last = api.last_event_sequence().await?;
            format!(
                "{MANAGEMENT}/events?pageSize=100&after={}",
                last.saturating_sub(100)
            )
        }
        "ui-log-page" => format!("{UI}/log?ref=main&pageSize=100"),
        "ui-log-page-deep" => {
            let (hash, _) = api.commit_back(env.depth.saturating_sub(100)).await?;
            format!(
                "{UI}/log?ref=main&pageSize=100&pageToken={}",
                page_token(&hash)
            )
        }
        other => bail!("no read workload named `{other}`"),
    })
}

/// Every task GETs the path of workload `name`, which must answer 200.
pub(super) async fn reads(name: &str, env: &Env, connections: usize) -> anyhow::Result<Figures> {
    let api = Api::new(&env.bases, connections)?;
    let path: Arc<str> = path(name, &api, env).await?.into();
    // Fail before measuring if the path does not answer.
    api.get(&path).await?.expect(StatusCode::OK, &path)?;
    let workers = (0..connections)
        .map(|_| Getter {
            api: api.clone(),
            path: path.clone(),
        })
        .collect();
    Ok(drive(workers, env.timing, Basis::Wall).await?.0)
}
