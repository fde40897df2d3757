//! Maintenance jobs: work too long for one request (a sweep of a large catalog reads every
//! manifest it ever had; an object collection walks its whole history), started by one
//! request and followed by others.
//!
//! A job runs on the server that was asked to start it. Its state is a record in the shared
//! store, so every replica answers for it: written when it starts, every [`HEARTBEAT`] while
//! it runs with its progress, and once more with its result or its error. A job whose record
//! has not been written for [`ABANDONED_AFTER`] is shown as abandoned: its server stopped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pangolin_catalog::Catalog;
use pangolin_catalog::collect::{CollectReport, CollectRequest};
use pangolin_catalog::orphans::{
    Checkpoints, MarkError, SweepContext, SweepProgress, SweepReport, SweepRequest,
};
use pangolin_catalog::rfc3339;
use pangolin_catalog::tenancy::Tenancy;
use pangolin_records::{ExpectedVersion, Outcome, RecordKey, RecordStore};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::security::Security;
use crate::security::audit::{self, Entry};

/// How often a running job writes its progress.
pub const HEARTBEAT: Duration = Duration::from_secs(2);

/// A running job not heard of for this long is shown as abandoned.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(60);

/// Jobs listed at most per page.
pub const MAX_PAGE: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobState {
    Running,
    Succeeded,
    Failed,
    /// The server running it stopped before it finished.
    Abandoned,
}

/// How far a job has got. A sweep counts files, an object collection store objects; the
/// counters of the other kind stay 0.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct SweepProgressView {
    /// `starting`, `marking`, `listing`, `re-marking`, `deleting`, `done`.
    pub phase: String,
    pub objects_read: u64,
    pub metadata_files_read: u64,
    pub manifests_read: u64,
    pub referenced_files: u64,
    pub files_listed: u64,
    pub orphan_files: u64,
    #[serde(default)]
    pub objects_listed: u64,
    #[serde(default)]
    pub unreachable_objects: u64,
    /// Files or objects deleted.
    pub deleted: u64,
}

impl SweepProgressView {
    fn of(progress: &SweepProgress) -> Self {
        let get = SweepProgress::get;
        Self {
            phase: progress.phase().as_str().to_owned(),
            objects_read: get(&progress.objects_read),
            metadata_files_read: get(&progress.metadata_files_read),
            manifests_read: get(&progress.manifests_read),
            referenced_files: get(&progress.referenced),
            files_listed: get(&progress.files_listed),
            orphan_files: get(&progress.orphans),
            objects_listed: get(&progress.objects_listed),
            unreachable_objects: get(&progress.unreachable),
            deleted: get(&progress.deleted),
        }
    }
}

/// A file a sweep found unreferenced.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct OrphanView {
    pub location: String,
    pub size: u64,
    pub modified_at: String,
}

/// A folder a sweep did not list, and why.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct SkippedView {
    pub location: String,
    pub reason: String,
}

/// What a sweep found and did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct SweepResult {
    /// Only files last modified before this could go.
    pub cutoff: String,
    pub objects_read: u64,
    pub metadata_files_read: u64,
    pub manifest_lists_read: u64,
    pub manifests_read: u64,
    pub referenced_files: usize,
    pub directories_swept: usize,
    /// Of those, folders only commits past every retention window name: tables dropped, or
    /// held only by deleted branches, that long ago.
    #[serde(default)]
    pub forgotten_directories: usize,
    /// Other catalogs sharing the warehouse whose histories were walked, so that no folder
    /// they keep a table in is swept.
    #[serde(default)]
    pub other_catalogs: usize,
    /// Metadata files, manifest lists and manifests the sweep it resumed had read, so not
    /// read again.
    #[serde(default)]
    pub reads_resumed: usize,
    pub skipped: Vec<SkippedView>,
    pub files_listed: usize,
    /// Unreferenced files kept because they are newer than the cutoff.
    pub too_recent: usize,
    pub orphan_files: usize,
    pub orphan_bytes: u64,
    /// The first orphans, in location order (`orphan-files` counts them all).
    pub orphans: Vec<OrphanView>,
    /// Files deleted: 0 in a dry run.
    pub deleted: usize,
}

impl From<SweepReport> for SweepResult {
    fn from(report: SweepReport) -> Self {
        Self {
            cutoff: rfc3339(Timestamp::from_millis(report.cutoff_ms)),
            objects_read: report.objects_read,
            metadata_files_read: report.metadata_files_read,
            manifest_lists_read: report.manifest_lists_read,
            manifests_read: report.manifests_read,
            referenced_files: report.referenced,
            directories_swept: report.directories_swept,
            reads_resumed: report.reads_resumed,
            forgotten_directories: report.forgotten_directories,
            other_catalogs: report.other_catalogs,
            skipped: report
                .skipped
                .into_iter()
                .map(|s| SkippedView {
                    location: s.location,
                    reason: s.reason,
                })
                .collect(),
            files_listed: report.files_listed,
            too_recent: report.too_recent,
            orphan_files: report.orphan_files,
            orphan_bytes: report.orphan_bytes,
            orphans: report
                .orphans
                .into_iter()
                .map(|f| OrphanView {
                    location: f.location,
                    size: f.size,
                    modified_at: rfc3339(Timestamp::from_millis(f.modified_ms)),
                })
                .collect(),
            deleted: report.deleted,
        }
    }
}

/// What an object collection found and did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct CollectResult {
    /// Unreachable commits made before this (less an hour of slack) could go; absent
    /// without a retention policy: every commit is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_cutoff: Option<String>,
    /// Objects the catalog stored.
    pub objects: usize,
    pub reachable_objects: usize,
    /// Commits no ref reaches, kept because they are within the retention window.
    pub retained_commits: usize,
    pub unreachable_objects: usize,
    pub unreachable_commits: usize,
    /// Objects deleted: 0 in a dry run.
    pub deleted: usize,
    /// Times history was walked again because writers moved refs meanwhile.
    pub rewalks: usize,
    /// Objects retained history names that an earlier collection removed.
    pub missing_objects: usize,
}

impl From<CollectReport> for CollectResult {
    fn from(report: CollectReport) -> Self {
        Self {
            history_cutoff: report
                .history_cutoff_ms
                .map(|ms| rfc3339(Timestamp::from_millis(ms))),
            objects: report.objects,
            reachable_objects: report.reachable,
            retained_commits: report.retained_commits,
            unreachable_objects: report.unreachable,
            unreachable_commits: report.unreachable_commits,
            deleted: report.deleted,
            rewalks: report.rewalks,
            missing_objects: report.missing,
        }
    }
}

/// A job's result: a sweep's or an object collection's, as its `kind` says.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum JobResult {
    Sweep(SweepResult),
    Collect(CollectResult),
}

/// A maintenance job, as stored and as shown.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct JobView {
    pub id: String,
    /// `remove-orphan-files` or `collect-objects`.
    pub kind: String,
    pub catalog: String,
    /// Who started it.
    pub principal: String,
    pub state: JobState,
    pub dry_run: bool,
    pub started_at: String,
    /// When its record was last written.
    pub updated_at: String,
    #[serde(default)]
    pub finished_at: Option<String>,
    pub progress: SweepProgressView,
    #[serde(default)]
    pub result: Option<JobResult>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// The sweep whose checkpoints this one resumed from (the first of its run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumes: Option<String>,
    /// `updated-at` in milliseconds, to tell an abandoned job.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[schema(ignore)]
    updated_ms: Option<i64>,
}

impl JobView {
    /// As shown at `now`: a running job whose server went quiet is abandoned.
    fn shown(mut self, now: Timestamp) -> Self {
        let quiet = now.as_millis() - self.updated_ms.unwrap_or(i64::MIN / 2);
        if self.state == JobState::Running && quiet > ABANDONED_AFTER.as_millis() as i64 {
            self.state = JobState::Abandoned;
        }
        self.updated_ms = None;
        self
    }
}

fn prefix(tenant: &str, catalog: &str) -> String {
    format!("jobs/{tenant}/{catalog}/")
}

fn record_key(tenant: &str, catalog: &str, id: &str) -> Result<RecordKey, ApiError> {
    RecordKey::new(format!("{}{id}", prefix(tenant, catalog))).map_err(|_| no_such_job(id))
}

fn no_such_job(id: &str) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "NoSuchJobException",
        format!("there is no job `{id}` in this catalog"),
    )
}

/// Ids sort by start time: `<ms since the epoch, 13 digits>-<8 hex>`.
fn new_id(now: Timestamp) -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{:013}-{}", now.as_millis(), &random[..8])
}

fn is_job_id(id: &str) -> bool {
    id.len() == 22
        && id.split_once('-').is_some_and(|(ms, random)| {
            ms.len() == 13
                && ms.bytes().all(|b| b.is_ascii_digit())
                && random
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        })
}

/// Writes `job` over the version `version` of its record (none: a new record); returns the
/// new version.
async fn write(
    records: &dyn RecordStore,
    tenant: &str,
    job: &JobView,
    version: Option<u64>,
) -> Result<u64, ApiError> {
    let key = record_key(tenant, &job.catalog, &job.id)?;
    let bytes = serde_json::to_vec(job).map_err(|e| ApiError::internal(&e))?;
    let expected = version.map_or(ExpectedVersion::Absent, ExpectedVersion::Is);
    records
        .put_record(&key, expected, Bytes::from(bytes))
        .await
        .map_err(|e| ApiError::internal(&e))
}

/// One job of `catalog`.
pub async fn get(
    records: &dyn RecordStore,
    tenant: &str,
    catalog: &str,
    id: &str,
) -> Result<JobView, ApiError> {
    if !is_job_id(id) {
        return Err(no_such_job(id));
    }
    let key = record_key(tenant, catalog, id)?;
    let record = records
        .get_record(&key)
        .await?
        .ok_or_else(|| no_such_job(id))?;
    let job: JobView = serde_json::from_slice(&record.value).map_err(|e| ApiError::internal(&e))?;
    Ok(job.shown(Timestamp::now()))
}

/// Jobs of `catalog` in the order they started, after the job `after`; and the id to list
/// after next when more follow.
pub async fn list(
    records: &dyn RecordStore,
    tenant: &str,
    catalog: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<(Vec<JobView>, Option<String>), ApiError> {
    let after = after
        .map(|id| {
            if is_job_id(id) {
                record_key(tenant, catalog, id)
            } else {
                Err(ApiError::bad_request(format!("`{id}` is not a job id")))
            }
        })
        .transpose()?;
    let page = records
        .list_records(
            &prefix(tenant, catalog),
            after.as_ref(),
            limit.clamp(1, MAX_PAGE),
        )
        .await?;
    let now = Timestamp::now();
    let mut jobs = Vec::with_capacity(page.records.len());
    for record in &page.records {
        let job: JobView =
            serde_json::from_slice(&record.value).map_err(|e| ApiError::internal(&e))?;
        jobs.push(job.shown(now));
    }
    let next = page
        .next_after
        .and_then(|key| key.as_str().rsplit('/').next().map(str::to_owned));
    Ok((jobs, next))
}

/// Records a new sweep job of `catalog` and runs it in the background, saving checkpoints as
/// it marks; returns it as started. `resumes`: the run of an earlier sweep to resume (see
/// [`resumable`]).
pub async fn start_sweep(
    security: Arc<Security>,
    records: Arc<dyn RecordStore>,
    tenancy: Tenancy,
    catalog: Catalog,
    principal: String,
    request: SweepRequest,
    resumes: Option<String>,
) -> Result<JobView, ApiError> {
    let kind = Kind {
        name: "remove-orphan-files",
        finished: "catalog.remove-orphan-files.finished",
    };
    let checkpoint_records = records.clone();
    start(
        security,
        records,
        catalog,
        Asked {
            principal,
            dry_run: request.dry_run,
            resumes,
        },
        kind,
        move |catalog, progress, run| async move {
            let checkpoints =
                Checkpoints::new(checkpoint_records, catalog.tenant(), catalog.name(), &run)
                    .map_err(MarkError::from)?;
            // Found in the job: with many catalogs, opening them all takes a while.
            let others = tenancy.catalogs_sharing_files(&catalog).await?;
            let context = SweepContext {
                others,
                progress,
                checkpoints: Some(checkpoints),
            };
            let report = catalog
                .plan_sweep(&request, context)
                .await?
                .finish(request.dry_run)
                .await?;
            tracing::info!(
                orphans = report.orphan_files,
                deleted = report.deleted,
                "job done"
            );
            let details = [
                ("orphan-files", report.orphan_files.to_string()),
                ("orphan-bytes", report.orphan_bytes.to_string()),
                ("deleted", report.deleted.to_string()),
            ];
            Ok::<_, pangolin_catalog::orphans::SweepError>((
                JobResult::Sweep(report.into()),
                details.to_vec(),
            ))
        },
    )
    .await
}

/// Records a new object collection job of `catalog` and runs it in the background; returns
/// it as started.
pub async fn start_collect(
    security: Arc<Security>,
    records: Arc<dyn RecordStore>,
    catalog: Catalog,
    principal: String,
    dry_run: bool,
) -> Result<JobView, ApiError> {
    let kind = Kind {
        name: "collect-objects",
        finished: "catalog.collect-objects.finished",
    };
    start(
        security,
        records,
        catalog,
        Asked {
            principal,
            dry_run,
            resumes: None,
        },
        kind,
        move |catalog, progress, _| async move {
            let report = catalog
                .collect_objects(CollectRequest::new(dry_run), progress)
                .await?;
            tracing::info!(
                unreachable = report.unreachable,
                deleted = report.deleted,
                "job done"
            );
            let details = [
                ("unreachable-objects", report.unreachable.to_string()),
                ("deleted", report.deleted.to_string()),
            ];
            Ok::<_, pangolin_catalog::collect::CollectError>((
                JobResult::Collect(report.into()),
                details.to_vec(),
            ))
        },
    )
    .await
}

/// The run of sweep job `id` of `catalog`, to resume: the job must be a sweep that failed or
/// was abandoned.
pub async fn resumable(
    records: &dyn RecordStore,
    tenant: &str,
    catalog: &str,
    id: &str,
) -> Result<String, ApiError> {
    let job = get(records, tenant, catalog, id).await?;
    if job.kind != "remove-orphan-files" {
        return Err(ApiError::bad_request(format!(
            "job `{id}` is a `{}` job; only sweeps of orphan files resume",
            job.kind
        )));
    }
    match job.state {
        JobState::Failed | JobState::Abandoned => Ok(job.resumes.unwrap_or(job.id)),
        JobState::Running => Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "JobRunningException",
            format!("job `{id}` is still running"),
        )),
        JobState::Succeeded => Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "JobSucceededException",
            format!("job `{id}` succeeded: there is nothing to resume"),
        )),
    }
}

/// A kind of job: its name and the audit action of its end.
struct Kind {
    name: &'static str,
    finished: &'static str,
}

/// Who asked for a job, and how.
struct Asked {
    principal: String,
    dry_run: bool,
    /// The run of an earlier sweep it resumes.
    resumes: Option<String>,
}

/// Records a new job of `catalog` and runs `work` in the background, writing its progress
/// every [`HEARTBEAT`] and its outcome at the end (audited as `kind.finished`, with the
/// details `work` gives); returns the job as started.
async fn start<W, F, E>(
    security: Arc<Security>,
    records: Arc<dyn RecordStore>,
    catalog: Catalog,
    asked: Asked,
    kind: Kind,
    work: W,
) -> Result<JobView, ApiError>
where
    W: FnOnce(Catalog, Arc<SweepProgress>, String) -> F + Send + 'static,
    F: Future<Output = Result<(JobResult, Vec<(&'static str, String)>), E>> + Send + 'static,
    E: std::fmt::Display + Send,
{
    let Asked {
        principal,
        dry_run,
        resumes,
    } = asked;
    let now = Timestamp::now();
    let mut job = JobView {
        id: new_id(now),
        kind: kind.name.to_owned(),
        catalog: catalog.name().to_owned(),
        principal,
        state: JobState::Running,
        dry_run,
        started_at: rfc3339(now),
        updated_at: rfc3339(now),
        finished_at: None,
        progress: SweepProgressView {
            phase: "starting".to_owned(),
            ..SweepProgressView::default()
        },
        result: None,
        error: None,
        resumes,
        updated_ms: Some(now.as_millis()),
    };
    let run = job.resumes.clone().unwrap_or_else(|| job.id.clone());
    let tenant = catalog.tenant().to_owned();
    let mut version = write(records.as_ref(), &tenant, &job, None).await?;
    let started = job.clone().shown(now);
    let span = tracing::info_span!("job", id = %job.id, kind = %job.kind, catalog = %job.catalog);
    tokio::spawn(tracing::Instrument::instrument(
        async move {
            let progress = Arc::new(SweepProgress::default());
            let running = work(catalog, progress.clone(), run);
            tokio::pin!(running);
            let mut heartbeat = tokio::time::interval(HEARTBEAT);
            heartbeat.tick().await;
            let outcome = loop {
                tokio::select! {
                    outcome = &mut running => break outcome,
                    _ = heartbeat.tick() => {
                        job.progress = SweepProgressView::of(&progress);
                        touch(&mut job);
                        match write(records.as_ref(), &tenant, &job, Some(version)).await {
                            Ok(next) => version = next,
                            Err(error) => tracing::warn!(message = %error.message, "could not record the job's progress"),
                        }
                    }
                }
            };
            job.progress = SweepProgressView::of(&progress);
            touch(&mut job);
            job.finished_at = Some(job.updated_at.clone());
            let mut details = BTreeMap::from([("job".to_owned(), job.id.clone())]);
            let outcome_kind = match outcome {
                Ok((result, counts)) => {
                    details.extend(counts.into_iter().map(|(k, v)| (k.to_owned(), v)));
                    job.state = JobState::Succeeded;
                    job.result = Some(result);
                    Outcome::Success
                }
                Err(error) => {
                    tracing::error!(%error, "job failed");
                    details.insert("error".to_owned(), error.to_string());
                    job.state = JobState::Failed;
                    job.error = Some(error.to_string());
                    Outcome::Failed
                }
            };
            if let Err(error) = write(records.as_ref(), &tenant, &job, Some(version)).await {
                tracing::error!(message = %error.message, "could not record the job's end");
            }
            audit::write(
                &security,
                Entry {
                    tenant: &tenant,
                    principal: &job.principal,
                    action: kind.finished,
                    resource_type: "catalog",
                    resource_id: &job.catalog,
                    outcome: outcome_kind,
                    details,
                },
            )
            .await;
        },
        span,
    ));
    Ok(started)
}

fn touch(job: &mut JobView) {
    let now = Timestamp::now();
    job.updated_at = rfc3339(now);
    job.updated_ms = Some(now.as_millis());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(updated_ms: i64) -> JobView {
        JobView {
            id: new_id(Timestamp::from_millis(updated_ms)),
            kind: "remove-orphan-files".to_owned(),
            catalog: "lake".to_owned(),
            principal: "ops".to_owned(),
            state: JobState::Running,
            dry_run: false,
            started_at: String::new(),
            updated_at: String::new(),
            finished_at: None,
            progress: SweepProgressView::default(),
            result: None,
            error: None,
            resumes: None,
            updated_ms: Some(updated_ms),
        }
    }

    #[test]
    fn a_running_job_not_heard_of_is_abandoned() {
        let now = Timestamp::from_millis(1_800_000_000_000);
        let quiet = ABANDONED_AFTER.as_millis() as i64;
        let recent = running(now.as_millis() - 1000).shown(now);
        assert_eq!(recent.state, JobState::Running);
        let stale = running(now.as_millis() - quiet - 1).shown(now);
        assert_eq!(stale.state, JobState::Abandoned);
        let mut done = running(now.as_millis() - quiet - 1);
        done.state = JobState::Succeeded;
        assert_eq!(done.shown(now).state, JobState::Succeeded);
        let shown = serde_json::to_value(stale).unwrap();
        assert!(shown.get("updated-ms").is_none(), "{shown}");
    }

    #[test]
    fn job_ids_sort_by_start_and_are_checked() {
        let early = new_id(Timestamp::from_millis(1_700_000_000_000));
        let late = new_id(Timestamp::from_millis(1_800_000_000_000));
        assert!(is_job_id(&early) && is_job_id(&late), "{early} {late}");
        assert!(early < late);
        for bad in [
            "",
            "../x",
            "1700000000000-ABCDEF12",
            "170000000000-abcdef123",
            "x",
        ] {
            assert!(!is_job_id(bad), "{bad}");
        }
    }
}
