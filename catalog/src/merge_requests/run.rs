//! Running a request's checks on the merge it would make, and merging it.
//!
//! The merge is computed for real: a merge commit of the target's head and the source's head
//! is written but referenced by nothing. Checks judge that commit, and merging the request
//! moves the target to exactly that commit by compare-and-swap from the head it was computed
//! on. When either branch moved since, the checks run again first.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use pangolin_merge::{CommitMeta, FastForward, MergeOptions, MergeOutcome};
use pangolin_refs::{RefName, Reference, Target};
use pangolin_store::{ObjectId, Timestamp};

use super::MergeRequests;
use super::checks::{self, CheckResult, CheckSpec};
use super::request::{
    CheckRun, GetMergeRequestError, MergeRequest, MergedBy, RequestState, Verdict,
};
use crate::branches::UpdateRefError;
use crate::catalog::Catalog;
use crate::events::{Event, tree_events};
use crate::tenancy::Name;
use crate::tenancy::records::{RecordsError, Versioned};

/// How often a merge computes again after losing the race for the target.
const MERGE_ATTEMPTS: usize = 3;

/// What an external check is shown.
#[derive(Debug)]
pub struct CheckInput<'a> {
    pub request: &'a MergeRequest,
    pub source_head: ObjectId,
    pub target_head: ObjectId,
    /// The commit the target would move to.
    pub merge_commit: ObjectId,
    /// The changes that commit makes on the target.
    pub changes: &'a [Event],
}

/// An external check's answer: passed or not, and what it said.
pub type ExternalVerdict = Result<(bool, Vec<String>), String>;

/// Asks the endpoints of webhook checks; the server implements it over HTTP.
pub trait ExternalChecks: Send + Sync {
    fn ask<'a>(
        &'a self,
        webhook: &'a str,
        input: &'a CheckInput<'a>,
    ) -> Pin<Box<dyn Future<Output = ExternalVerdict> + Send + 'a>>;
}

/// External checks that are not there: every webhook check fails, saying so.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoExternalChecks;

impl ExternalChecks for NoExternalChecks {
    fn ask<'a>(
        &'a self,
        _webhook: &'a str,
        _input: &'a CheckInput<'a>,
    ) -> Pin<Box<dyn Future<Output = ExternalVerdict> + Send + 'a>> {
        Box::pin(async { Err("webhook checks cannot be run here".to_owned()) })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunChecksError {
    #[error(transparent)]
    Get(#[from] GetMergeRequestError),
    #[error("merge request {number} is {state}; only open requests are checked or merged")]
    NotOpen { number: u64, state: &'static str },
    #[error("branch `{0}` does not exist")]
    MissingBranch(RefName),
    #[error("computing the merge: {0}")]
    Merge(#[from] crate::versioning::MergeRefError),
    #[error("reading the merge's changes: {0}")]
    Read(#[from] pangolin_store::ReadError),
    #[error(transparent)]
    Backend(#[from] pangolin_store::BackendError),
    #[error("the merge wrote no commit to check")]
    NoMergeCommit,
    #[error(transparent)]
    Records(#[from] RecordsError),
}

#[derive(Debug, thiserror::Error)]
pub enum MergeRequestError {
    #[error(transparent)]
    Run(#[from] RunChecksError),
    #[error("merge request {number} has conflicts with `{target}`: {}", .keys.join(", "))]
    Conflicted {
        number: u64,
        target: RefName,
        keys: Vec<String>,
    },
    #[error("the checks of merge request {number} failed on its current heads")]
    ChecksFailed {
        number: u64,
        request: Box<MergeRequest>,
    },
    #[error("the target kept moving while merge request {number} was merged; try again")]
    TargetKeptMoving { number: u64 },
    #[error("moving `{target}`: {source}")]
    Land {
        target: RefName,
        source: UpdateRefError,
    },
}

/// The heads a run or merge is computed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Heads {
    source: ObjectId,
    target: ObjectId,
}

impl CheckRun {
    fn is_for(&self, heads: Heads) -> bool {
        self.source_head == heads.source.to_hex() && self.target_head == heads.target.to_hex()
    }
}

impl MergeRequests {
    /// Closes open request `number` without merging it.
    pub async fn close(
        &self,
        tenant: &Name,
        catalog: &Name,
        number: u64,
        principal: &str,
    ) -> Result<Versioned<MergeRequest>, RunChecksError> {
        self.update(tenant, catalog, number, |request| {
            open(request)?;
            request.state = RequestState::Closed;
            request.closed_by = Some(principal.to_owned());
            request.updated_at = Timestamp::now();
            Ok::<_, RunChecksError>(())
        })
        .await?
    }
}

fn open(request: &MergeRequest) -> Result<(), RunChecksError> {
    match request.state {
        RequestState::Open => Ok(()),
        other => Err(RunChecksError::NotOpen {
            number: request.number,
            state: other.as_str(),
        }),
    }
}

async fn head(catalog: &Catalog, branch: &RefName) -> Result<ObjectId, RunChecksError> {
    catalog
        .store()
        .get_ref(catalog.odb().repo(), &Reference::branch(branch.clone()))
        .await?
        .ok_or_else(|| RunChecksError::MissingBranch(branch.clone()))
}

async fn heads(catalog: &Catalog, request: &MergeRequest) -> Result<Heads, RunChecksError> {
    Ok(Heads {
        source: head(catalog, &request.source).await?,
        target: head(catalog, &request.target).await?,
    })
}

/// The checks protecting the request's target; none when it is not protected.
fn checks_of(catalog: &Catalog, request: &MergeRequest) -> Vec<CheckSpec> {
    catalog
        .protection()
        .and_then(|p| p.rule_for(&Reference::branch(request.target.clone())))
        .map(|rule| rule.checks.clone())
        .unwrap_or_default()
}

/// Computes the merge of `heads` and runs the checks on it.
async fn run(
    catalog: &Catalog,
    request: &MergeRequest,
    heads: Heads,
    principal: &str,
    external: &dyn ExternalChecks,
) -> Result<CheckRun, RunChecksError> {
    let meta = CommitMeta {
        author: request.author.clone(),
        committer: principal.to_owned(),
        message: format!(
            "merge request {}: {}\n\nmerge {} into {}",
            request.number, request.title, request.source, request.target
        ),
        properties: BTreeMap::from([
            ("operation".to_owned(), "merge".to_owned()),
            ("source".to_owned(), request.source.to_string()),
            ("merge-request".to_owned(), request.number.to_string()),
        ]),
        time: Timestamp::now(),
    };
    let options = MergeOptions {
        fast_forward: FastForward::Never,
        ..MergeOptions::default()
    };
    // Tables changed on both sides merge as the catalog's merges do by default.
    let (outcome, _) = catalog
        .compute_merge(
            heads.target,
            heads.source,
            &options,
            catalog.table_merge_mode(),
            &meta,
        )
        .await?;
    let mut run = CheckRun {
        source_head: heads.source.to_hex(),
        target_head: heads.target.to_hex(),
        merge_commit: None,
        verdict: Verdict::Passed,
        checks: Vec::new(),
        conflicts: Vec::new(),
        changed_keys: 0,
        ran_by: principal.to_owned(),
        ran_at: Timestamp::now(),
    };
    let commit = match outcome {
        MergeOutcome::UpToDate => {
            run.verdict = Verdict::UpToDate;
            return Ok(run);
        }
        MergeOutcome::Conflicted { conflicts, .. } => {
            run.verdict = Verdict::Conflicted;
            run.conflicts = conflicts
                .iter()
                .map(|c| match &c.detail {
                    Some(reason) => format!("{} ({reason})", c.key),
                    None => c.key.to_string(),
                })
                .collect();
            return Ok(run);
        }
        MergeOutcome::Merged {
            commit: Some(commit),
            ..
        } => commit,
        // Neither is asked for: a fast-forward, or a dry run that writes no commit.
        MergeOutcome::Merged { commit: None, .. } | MergeOutcome::FastForward { .. } => {
            return Err(RunChecksError::NoMergeCommit);
        }
    };
    run.merge_commit = Some(commit.to_hex());
    let target_tree = catalog.odb().commit(&heads.target).await?.tree;
    let result_tree = catalog.odb().commit(&commit).await?.tree;
    let reference = Reference::branch(request.target.clone());
    let changes = tree_events(
        catalog.odb(),
        &reference,
        commit,
        &target_tree,
        &result_tree,
    )
    .await?;
    run.changed_keys = changes.len() as u64;
    let input = CheckInput {
        request,
        source_head: heads.source,
        target_head: heads.target,
        merge_commit: commit,
        changes: &changes,
    };
    for check in checks_of(catalog, request) {
        let result = match checks::evaluate(catalog, &check, &changes).await {
            Some(result) => result,
            None => {
                let webhook = check.webhook().unwrap_or_default().to_owned();
                match external.ask(&webhook, &input).await {
                    Ok((passed, messages)) => CheckResult::new(check, messages, passed),
                    Err(error) => CheckResult::new(check, vec![error], false),
                }
            }
        };
        run.checks.push(result);
    }
    if run.checks.iter().any(|c| !c.passed) {
        run.verdict = Verdict::Failed;
    }
    Ok(run)
}

impl MergeRequests {
    /// Runs the checks of request `number` on the merge of its branches' current heads and
    /// records the run on the request.
    #[tracing::instrument(level = "debug", skip(self, catalog, external), fields(catalog = %catalog.name()))]
    pub async fn run_checks(
        &self,
        catalog: &Catalog,
        (tenant, name): (&Name, &Name),
        number: u64,
        principal: &str,
        external: &dyn ExternalChecks,
    ) -> Result<Versioned<MergeRequest>, RunChecksError> {
        let request = self.get(tenant, name, number).await?;
        open(&request.value)?;
        let heads = heads(catalog, &request.value).await?;
        let run = run(catalog, &request.value, heads, principal, external).await?;
        self.record_run(tenant, name, number, run).await
    }

    async fn record_run(
        &self,
        tenant: &Name,
        catalog: &Name,
        number: u64,
        run: CheckRun,
    ) -> Result<Versioned<MergeRequest>, RunChecksError> {
        self.update(tenant, catalog, number, |request| {
            open(request)?;
            request.updated_at = run.ran_at;
            request.checks = Some(run.clone());
            Ok::<_, RunChecksError>(())
        })
        .await?
    }

    /// Merges request `number`: its target moves to the merge commit its checks passed on,
    /// by compare-and-swap from the head they ran against. Checks run again first when
    /// either branch moved since. On a protected target, failed checks refuse the merge
    /// unless `overridden` gives an administrator's reason (the caller decides who may).
    #[tracing::instrument(level = "debug", skip(self, catalog, external), fields(catalog = %catalog.name()))]
    pub async fn merge(
        &self,
        catalog: &Catalog,
        (tenant, name): (&Name, &Name),
        number: u64,
        principal: &str,
        overridden: Option<String>,
        external: &dyn ExternalChecks,
    ) -> Result<Versioned<MergeRequest>, MergeRequestError> {
        for _ in 0..MERGE_ATTEMPTS {
            let mut request = self
                .get(tenant, name, number)
                .await
                .map_err(RunChecksError::from)?;
            open(&request.value)?;
            let heads = heads(catalog, &request.value).await?;
            let run = match &request.value.checks {
                Some(run) if run.is_for(heads) => run.clone(),
                _ => {
                    let run = run(catalog, &request.value, heads, principal, external).await?;
                    request = self.record_run(tenant, name, number, run.clone()).await?;
                    run
                }
            };
            let target = request.value.target.clone();
            let moved_to = match run.verdict {
                Verdict::Conflicted => {
                    return Err(MergeRequestError::Conflicted {
                        number,
                        target,
                        keys: run.conflicts,
                    });
                }
                Verdict::Failed if overridden.is_none() => {
                    return Err(MergeRequestError::ChecksFailed {
                        number,
                        request: Box::new(request.value),
                    });
                }
                Verdict::UpToDate => heads.target,
                Verdict::Passed | Verdict::Failed => {
                    let commit = run
                        .merge_commit
                        .as_deref()
                        .and_then(|hex| hex.parse::<ObjectId>().ok())
                        .ok_or_else(|| RecordsError::Corrupt {
                            key: format!("merge request {number}"),
                            reason: "a run that passed names no merge commit".to_owned(),
                        })
                        .map_err(RunChecksError::from)?;
                    let landed = catalog
                        .transact_one(
                            &Reference::branch(target.clone()),
                            heads.target,
                            Target::Set(commit),
                            principal,
                            format!(
                                "merge request {number}: merge {} into {target}",
                                request.value.source
                            ),
                        )
                        .await;
                    match landed {
                        Ok(()) => commit,
                        // Someone moved the target since the run: compute and check again.
                        Err(UpdateRefError::Stale { .. }) => continue,
                        Err(source) => return Err(MergeRequestError::Land { target, source }),
                    }
                }
            };
            let merged = MergedBy {
                commit: moved_to.to_hex(),
                by: principal.to_owned(),
                at: Timestamp::now(),
                overridden: (run.verdict == Verdict::Failed)
                    .then(|| overridden.clone())
                    .flatten(),
            };
            // The target has moved: record it whatever else changed on the request since.
            return Ok(self
                .update(tenant, name, number, |request| {
                    request.state = RequestState::Merged;
                    request.updated_at = merged.at;
                    request.merged = Some(merged.clone());
                    Ok::<_, std::convert::Infallible>(())
                })
                .await
                .map_err(RunChecksError::from)?
                .unwrap_or_else(|never| match never {}));
        }
        Err(MergeRequestError::TargetKeptMoving { number })
    }
}
