//! The management API: creating branches, merging, walking the log.

use anyhow::{Context, bail};
use reqwest::StatusCode;
use serde_json::json;

use super::super::api::{Api, MANAGEMENT};
use super::super::driver::{Op, Worker, drive};
use super::super::fixture::{BENCH, MAIN_SIDE, bulk_table};
use super::super::stats::{Basis, Figures};
use super::{Env, unique};

#[derive(Debug)]
struct Brancher {
    api: Api,
}

impl Worker for Brancher {
    async fn op(&mut self) -> anyhow::Result<Op> {
        self.api
            .create_branch(&format!("b-{}", unique()), "main")
            .await?;
        Ok(Op::default())
    }
}

/// Creates branches from `main`, each a new name.
pub(super) async fn create_branches(env: &Env, connections: usize) -> anyhow::Result<Figures> {
    let api = Api::new(&env.bases, connections)?;
    let workers = (0..connections)
        .map(|_| Brancher { api: api.clone() })
        .collect();
    Ok(drive(workers, env.timing, Basis::Wall).await?.0)
}

/// Before each merge (untimed): a branch from `main` whose one commit changed `k` tables,
/// then a commit on `main` to another table, so the merge is a three-way merge of diverged
/// branches; the timed operation is the merge alone.
#[derive(Debug)]
struct Merger {
    api: Api,
    k: u64,
    tables: u64,
    cursor: u64,
    source: Option<String>,
}

impl Worker for Merger {
    async fn prepare(&mut self) -> anyhow::Result<()> {
        let mark = unique();
        let branch = format!("m-{mark}");
        self.api.create_branch(&branch, "main").await?;
        let changed: Vec<_> = (0..self.k)
            .map(|j| bulk_table((self.cursor + j) % self.tables))
            .collect();
        self.cursor += self.k;
        self.api.touch_tables(&branch, &changed, mark).await?;
        self.api
            .touch_tables("main", &[(BENCH.to_owned(), MAIN_SIDE.to_owned())], mark)
            .await?;
        self.source = Some(branch);
        Ok(())
    }

    async fn op(&mut self) -> anyhow::Result<Op> {
        let source = self.source.take().context("prepared")?;
        let answer = self
            .api
            .post(
                &format!("{MANAGEMENT}/merge"),
                &json!({ "source": source, "target": "main", "message": "bench merge" }),
            )
            .await?
            .expect(StatusCode::OK, "merging")?;
        let result = answer.json()?["result"].clone();
        if result != "merged" {
            bail!("merge: expected a merge commit, got {result}");
        }
        Ok(Op::default())
    }
}

/// Merges of branches that changed `k` tables (at most the catalog's bulk tables).
pub(super) async fn merges(env: &Env, connections: usize, k: u64) -> anyhow::Result<Figures> {
    let api = Api::new(&env.bases, connections)?;
    let workers = (0..connections as u64)
        .map(|w| Merger {
            api: api.clone(),
            k: k.min(env.tables),
            tables: env.tables,
            cursor: w * env.tables / connections as u64,
            source: None,
        })
        .collect();
    Ok(drive(workers, env.timing, Basis::Busy).await?.0)
}

/// Walks the log of `main` a page (100 commits) per request, following page tokens to the
/// loader's history depth, then starts again at the head.
#[derive(Debug)]
struct LogWalker {
    api: Api,
    token: Option<String>,
    pages: u64,
    max_pages: u64,
}

/// The `next-page-token` of a log page, found without parsing the page (the client's work
/// stays small next to the server's).
fn next_token(body: &[u8]) -> Option<String> {
    const FIELD: &str = "\"next-page-token\":\"";
    let text = std::str::from_utf8(body).ok()?;
    let start = text.rfind(FIELD)? + FIELD.len();
    let end = text[start..].find('"')? + start;
    Some(text[start..end].to_owned())
}

impl Worker for LogWalker {
    async fn op(&mut self) -> anyhow::Result<Op> {
        let mut path = format!("{MANAGEMENT}/refs/main/log?pageSize=100");
        if let Some(token) = &self.token {
            path.push_str("&pageToken=");
            path.push_str(token);
        }
        let answer = self
            .api
            .get(&path)
            .await?
            .expect(StatusCode::OK, "a log page")?;
        self.pages += 1;
        self.token = next_token(&answer.body).filter(|_| self.pages < self.max_pages);
        if self.token.is_none() {
            self.pages = 0;
        }
        Ok(Op::default())
    }
}

pub(super) async fn log_paging(env: &Env, connections: usize) -> anyhow::Result<Figures> {
    let api = Api::new(&env.bases, connections)?;
    let workers = (0..connections)
        .map(|_| LogWalker {
            api: api.clone(),
            token: None,
            pages: 0,
            max_pages: (env.depth / 100).max(1),
        })
        .collect();
    Ok(drive(workers, env.timing, Basis::Wall).await?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_token_is_found_in_a_page() {
        let page = br#"{"commits":[{"message":"x"}],"next-page-token":"6162"}"#;
        assert_eq!(next_token(page).as_deref(), Some("6162"));
        assert_eq!(next_token(br#"{"commits":[]}"#), None);
    }
}
