//! Merge request records: create, read, list, change by compare-and-swap.

use pangolin_records::{ExpectedVersion, RecordKey};
use pangolin_refs::RefName;
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use super::MergeRequests;
use super::checks::CheckResult;
use crate::tenancy::Name;
use crate::tenancy::records::{self, CAS_ATTEMPTS, PutError, RecordsError, Versioned};

const MAX_TITLE_BYTES: usize = 256;
const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;

/// Where a request is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequestState {
    Open,
    Merged,
    Closed,
}

impl RequestState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Merged => "merged",
            Self::Closed => "closed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Open, Self::Merged, Self::Closed]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// What checks concluded about one pair of heads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every check passed on the merge result.
    Passed,
    /// At least one check failed.
    Failed,
    /// The merge has conflicts: there is no result to check.
    Conflicted,
    /// The source holds nothing the target lacks.
    UpToDate,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Conflicted => "conflicted",
            Self::UpToDate => "up-to-date",
        }
    }
}

/// One run of the checks: on the merge of `source_head` into `target_head`, which wrote
/// `merge_commit` (referenced by no ref until the request merges it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CheckRun {
    pub source_head: String,
    pub target_head: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<String>,
    pub verdict: Verdict,
    pub checks: Vec<CheckResult>,
    /// Keys in conflict, when the merge has conflicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// How many keys the merge changes on the target.
    pub changed_keys: u64,
    pub ran_by: String,
    pub ran_at: Timestamp,
}

/// How a request was merged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MergedBy {
    /// Where the target moved to.
    pub commit: String,
    pub by: String,
    pub at: Timestamp,
    /// Set when an administrator merged past failed checks, with the reason given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overridden: Option<String>,
}

/// A merge request as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MergeRequest {
    pub number: u64,
    pub tenant: Name,
    pub catalog: Name,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub source: RefName,
    pub target: RefName,
    pub state: RequestState,
    pub author: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The latest run of the checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<CheckRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_by: Option<String>,
}

/// A new request.
#[derive(Debug, Clone)]
pub struct NewMergeRequest {
    pub title: String,
    pub description: Option<String>,
    pub source: RefName,
    pub target: RefName,
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidMergeRequest(pub String);

#[derive(Debug, thiserror::Error)]
pub enum CreateMergeRequestError {
    #[error(transparent)]
    Invalid(#[from] InvalidMergeRequest),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

#[derive(Debug, thiserror::Error)]
pub enum GetMergeRequestError {
    #[error("catalog `{catalog}` has no merge request {number}")]
    NotFound { catalog: String, number: u64 },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// One page of requests, newest first.
#[derive(Debug, Clone)]
pub struct RequestPage {
    pub items: Vec<Versioned<MergeRequest>>,
    /// List again with `before` set to this to continue.
    pub next_before: Option<u64>,
}

fn record_key(path: String) -> RecordKey {
    RecordKey::new(path).expect("names and numbers are short and have no control characters")
}

fn requests_of(tenant: &Name, catalog: &Name) -> String {
    format!("merge-requests/requests/{tenant}/{catalog}/")
}

/// Numbers are stored inverted and zero-padded, so the key order lists the newest first.
fn request_key(tenant: &Name, catalog: &Name, number: u64) -> RecordKey {
    record_key(format!(
        "{}{:020}",
        requests_of(tenant, catalog),
        u64::MAX - number
    ))
}

fn counter_key(tenant: &Name, catalog: &Name) -> RecordKey {
    record_key(format!("merge-requests/counter/{tenant}/{catalog}"))
}

fn check_text(new: &NewMergeRequest) -> Result<(), InvalidMergeRequest> {
    let title = new.title.trim();
    if title.is_empty() {
        return Err(InvalidMergeRequest(
            "a merge request needs a title".to_owned(),
        ));
    }
    if new.title.len() > MAX_TITLE_BYTES || new.title.chars().any(char::is_control) {
        return Err(InvalidMergeRequest(format!(
            "the title must be one line of at most {MAX_TITLE_BYTES} bytes"
        )));
    }
    if new
        .description
        .as_ref()
        .is_some_and(|d| d.len() > MAX_DESCRIPTION_BYTES)
    {
        return Err(InvalidMergeRequest(format!(
            "the description is longer than {MAX_DESCRIPTION_BYTES} bytes"
        )));
    }
    if new.source == new.target {
        return Err(InvalidMergeRequest(format!(
            "source and target are both `{}`",
            new.source
        )));
    }
    Ok(())
}

impl MergeRequests {
    /// Takes the next number of `catalog`'s requests.
    async fn next_number(&self, tenant: &Name, catalog: &Name) -> Result<u64, RecordsError> {
        let key = counter_key(tenant, catalog);
        for _ in 0..CAS_ATTEMPTS {
            let current = records::get::<u64>(self.records(), &key).await?;
            let (next, expected) = match &current {
                Some(v) => (v.value + 1, ExpectedVersion::Is(v.version)),
                None => (1, ExpectedVersion::Absent),
            };
            match records::put(self.records(), &key, expected, &next).await {
                Ok(_) => return Ok(next),
                Err(PutError::Mismatch { .. }) => continue,
                Err(PutError::Records(e)) => return Err(e),
            }
        }
        Err(RecordsError::Contended {
            key: key.to_string(),
        })
    }

    /// Records a new open request. The caller has checked that both branches exist.
    #[tracing::instrument(level = "debug", skip(self, new), fields(%tenant, %catalog))]
    pub async fn create(
        &self,
        tenant: &Name,
        catalog: &Name,
        new: NewMergeRequest,
        author: &str,
        now: Timestamp,
    ) -> Result<Versioned<MergeRequest>, CreateMergeRequestError> {
        check_text(&new)?;
        let number = self.next_number(tenant, catalog).await?;
        let request = MergeRequest {
            number,
            tenant: tenant.clone(),
            catalog: catalog.clone(),
            title: new.title.trim().to_owned(),
            description: new.description,
            source: new.source,
            target: new.target,
            state: RequestState::Open,
            author: author.to_owned(),
            created_at: now,
            updated_at: now,
            checks: None,
            merged: None,
            closed_by: None,
        };
        let key = request_key(tenant, catalog, number);
        // The number is this call's alone, so nothing else writes this key.
        let version = records::put(self.records(), &key, ExpectedVersion::Absent, &request)
            .await
            .map_err(|e| match e {
                PutError::Mismatch { .. } => RecordsError::Contended {
                    key: key.to_string(),
                },
                PutError::Records(e) => e,
            })?;
        Ok(Versioned {
            value: request,
            version,
        })
    }

    pub async fn get(
        &self,
        tenant: &Name,
        catalog: &Name,
        number: u64,
    ) -> Result<Versioned<MergeRequest>, GetMergeRequestError> {
        records::get(self.records(), &request_key(tenant, catalog, number))
            .await?
            .ok_or_else(|| GetMergeRequestError::NotFound {
                catalog: catalog.to_string(),
                number,
            })
    }

    /// A page of `catalog`'s requests, newest first, older than `before` when given, only
    /// those in `state` when given (a filtered page may hold fewer than `limit`: continue
    /// from `next_before`).
    pub async fn list(
        &self,
        tenant: &Name,
        catalog: &Name,
        state: Option<RequestState>,
        before: Option<u64>,
        limit: usize,
    ) -> Result<RequestPage, RecordsError> {
        let prefix = requests_of(tenant, catalog);
        let after = before.map(|n| request_key(tenant, catalog, n));
        let page = self
            .records()
            .list_records(&prefix, after.as_ref(), limit.clamp(1, records::MAX_PAGE))
            .await?;
        let mut items = Vec::with_capacity(page.records.len());
        let mut last = None;
        for record in &page.records {
            let request: MergeRequest = records::decode(&record.key, &record.value)?;
            last = Some(request.number);
            if state.is_none_or(|s| s == request.state) {
                items.push(Versioned {
                    value: request,
                    version: record.version,
                });
            }
        }
        Ok(RequestPage {
            items,
            next_before: page.next_after.and(last),
        })
    }

    /// Writes `request` over the version read; `false` when another writer changed it first.
    pub(crate) async fn save(
        &self,
        request: &MergeRequest,
        version: u64,
    ) -> Result<Option<u64>, RecordsError> {
        let key = request_key(&request.tenant, &request.catalog, request.number);
        match records::put(self.records(), &key, ExpectedVersion::Is(version), request).await {
            Ok(version) => Ok(Some(version)),
            Err(PutError::Mismatch { .. }) => Ok(None),
            Err(PutError::Records(e)) => Err(e),
        }
    }

    /// Changes the request by `change` on its latest version, retrying while other writers
    /// get in first. `change` may refuse by returning `Err`.
    pub(crate) async fn update<E>(
        &self,
        tenant: &Name,
        catalog: &Name,
        number: u64,
        mut change: impl FnMut(&mut MergeRequest) -> Result<(), E>,
    ) -> Result<Result<Versioned<MergeRequest>, E>, GetMergeRequestError> {
        for _ in 0..CAS_ATTEMPTS {
            let mut current = self.get(tenant, catalog, number).await?;
            if let Err(refused) = change(&mut current.value) {
                return Ok(Err(refused));
            }
            if let Some(version) = self.save(&current.value, current.version).await? {
                return Ok(Ok(Versioned {
                    value: current.value,
                    version,
                }));
            }
        }
        Err(RecordsError::Contended {
            key: request_key(tenant, catalog, number).to_string(),
        }
        .into())
    }

    /// Deletes every record of `catalog`'s requests, for a deleted catalog.
    pub async fn delete_all(&self, tenant: &Name, catalog: &Name) -> Result<(), RecordsError> {
        records::delete_all_under(self.records(), &requests_of(tenant, catalog)).await?;
        // The counter last: a catalog made again under this name numbers from 1.
        records::delete_if_there(self.records(), &counter_key(tenant, catalog)).await?;
        Ok(())
    }
}
