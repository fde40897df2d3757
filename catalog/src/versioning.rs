//! Merges, cherry-picks and reverts: history moved between branches. Each lands on a branch
//! only by compare-and-swap from the head it was computed against, and not at all when
//! conflicts remain.

use std::collections::BTreeMap;

use pangolin_merge::{
    BranchTarget, CommitMeta as MergeMeta, ConflictKind, LandError, Landed, MergeOptions,
    MergeOutcome, PickOptions, PickOutcome, Resolution, cherry_pick_onto_branch, merge_into_branch,
    revert_on_branch,
};
use pangolin_refs::Reference;
use pangolin_store::{ContentKey, ObjectId, Timestamp};

use crate::address::RefSpec;
use crate::catalog::{Catalog, ResolveError};
use crate::merge_requests::Protected;
use crate::table_merge::{TableMerge, TableMergeError, is_same_table_changed};

#[derive(Debug, thiserror::Error)]
pub enum MergeRefError {
    #[error("cannot change `{0}`: merges, cherry-picks and reverts land on a branch")]
    TargetNotBranch(RefSpec),
    #[error(transparent)]
    Protected(#[from] Protected),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Land(#[from] LandError),
    #[error(transparent)]
    Table(#[from] TableMergeError),
}

/// Whether a merge looks inside Iceberg tables changed on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TableMergeMode {
    /// A table changed on both sides is a conflict, as any entry is.
    #[default]
    Off,
    /// Changes that commute (appends, properties, added fields; see
    /// [`crate::iceberg::table_merge`]) are merged into new table metadata; the rest stay
    /// conflicts, each saying which change overlaps.
    Auto,
}

/// The catalog property naming its merges' default [`TableMergeMode`] (`auto` or `off`).
pub const TABLE_MERGE_PROPERTY: &str = "table-merge";

impl TableMergeMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Self::Auto),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    /// A catalog's default, from its properties: `off` unless `table-merge` is `auto`.
    pub fn of_catalog(properties: &std::collections::BTreeMap<String, String>) -> Self {
        properties
            .get(TABLE_MERGE_PROPERTY)
            .and_then(|v| Self::parse(v))
            .unwrap_or_default()
    }
}

/// One table whose changes on both sides were merged (or, in a dry run, would be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedTable {
    pub key: ContentKey,
    /// What the merge did to the table, in words.
    pub plan: Vec<String>,
}

/// A merge's outcome, and the tables it merged inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeReport {
    pub landed: Landed<MergeOutcome>,
    pub tables: Vec<MergedTable>,
}

/// What table merging makes of a merge.
enum Settlement {
    /// Nothing: merge as asked.
    Plain,
    /// Conflicts stay; nothing may be written.
    Conflicted {
        outcome: MergeOutcome,
        tables: Vec<MergedTable>,
    },
    /// Merge with these options, whose resolutions merge every conflicting table.
    Settled {
        options: MergeOptions,
        tables: Vec<MergedTable>,
    },
}

/// The table conflicts of a merge looked into: resolutions for those that commute, and why
/// the others overlap.
struct Settled {
    resolutions: std::collections::BTreeMap<ContentKey, Resolution>,
    tables: Vec<MergedTable>,
    overlaps: std::collections::BTreeMap<ContentKey, String>,
    /// Conflicts no table merge can settle (other kinds, other content).
    others: usize,
}

/// Who asks for a history operation, and what it says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRequest {
    pub principal: String,
    /// The commit message; a default naming the operation when `None`.
    pub message: Option<String>,
    /// The head the caller saw: nothing lands if the branch moved since.
    pub expected_head: Option<ObjectId>,
}

impl HistoryRequest {
    fn meta(&self, default_message: String, operation: &str, source: String) -> MergeMeta {
        MergeMeta {
            author: self.principal.clone(),
            committer: self.principal.clone(),
            message: self.message.clone().unwrap_or(default_message),
            properties: BTreeMap::from([
                ("operation".to_owned(), operation.to_owned()),
                ("source".to_owned(), source),
            ]),
            time: Timestamp::now(),
        }
    }
}

impl Catalog {
    /// The branch a history operation lands on: never a protected one, which takes merges
    /// only through merge requests.
    async fn target_branch(&self, target: &RefSpec) -> Result<Reference, MergeRefError> {
        let branch = self
            .resolve(target)
            .await?
            .writable_branch
            .ok_or_else(|| MergeRefError::TargetNotBranch(target.clone()))?;
        self.check_unprotected(&branch)?;
        Ok(branch)
    }

    /// Merges what `source` names into branch `target`.
    pub async fn merge(
        &self,
        source: &RefSpec,
        target: &RefSpec,
        options: &MergeOptions,
        request: &HistoryRequest,
    ) -> Result<Landed<MergeOutcome>, MergeRefError> {
        self.merge_with(source, target, options, TableMergeMode::Off, request)
            .await
            .map(|report| report.landed)
    }

    /// Merges what `source` names into branch `target`, looking inside Iceberg tables
    /// changed on both sides as `tables` says.
    #[tracing::instrument(level = "debug", skip(self, options, request), fields(catalog = %self.name()))]
    pub async fn merge_with(
        &self,
        source: &RefSpec,
        target: &RefSpec,
        options: &MergeOptions,
        tables: TableMergeMode,
        request: &HistoryRequest,
    ) -> Result<MergeReport, MergeRefError> {
        let source_commit = self.resolve(source).await?.commit;
        let branch = self.target_branch(target).await?;
        let meta = request.meta(
            format!("merge {source} into {target}"),
            "merge",
            source.to_string(),
        );
        if tables == TableMergeMode::Auto {
            let head = self.head_for(&branch, request.expected_head).await?;
            match self
                .settle_merge(head, source_commit, options, tables, &meta)
                .await?
            {
                Settlement::Plain => {}
                Settlement::Conflicted { outcome, tables } => {
                    return Ok(MergeReport {
                        landed: Landed {
                            outcome,
                            previous_head: head,
                            ref_log: None,
                        },
                        tables,
                    });
                }
                Settlement::Settled { options, tables } => {
                    // From the head the tables were merged at, or not at all.
                    let landed = merge_into_branch(
                        self.odb(),
                        self.store().as_ref(),
                        BranchTarget {
                            repo: self.odb().repo(),
                            branch: &branch,
                            expected_head: Some(head),
                        },
                        source_commit,
                        &options,
                        &meta,
                    )
                    .await?;
                    return Ok(MergeReport { landed, tables });
                }
            }
        }
        let landed = merge_into_branch(
            self.odb(),
            self.store().as_ref(),
            BranchTarget {
                repo: self.odb().repo(),
                branch: &branch,
                expected_head: request.expected_head,
            },
            source_commit,
            options,
            &meta,
        )
        .await?;
        Ok(MergeReport {
            landed,
            tables: Vec::new(),
        })
    }

    /// Computes the merge of commit `source` into commit `head` (writing its commit unless
    /// `options` ask for a dry run), looking inside tables changed on both sides as `mode`
    /// says; moves no ref.
    pub async fn compute_merge(
        &self,
        head: ObjectId,
        source: ObjectId,
        options: &MergeOptions,
        mode: TableMergeMode,
        meta: &MergeMeta,
    ) -> Result<(MergeOutcome, Vec<MergedTable>), MergeRefError> {
        let merge = |options: MergeOptions| async move {
            pangolin_merge::merge(self.odb(), head, source, &options, meta)
                .await
                .map_err(|e| MergeRefError::Land(e.into()))
        };
        match self.settle_merge(head, source, options, mode, meta).await? {
            Settlement::Plain => Ok((merge(options.clone()).await?, Vec::new())),
            Settlement::Conflicted { outcome, tables } => Ok((outcome, tables)),
            Settlement::Settled { options, tables } => Ok((merge(options).await?, tables)),
        }
    }

    /// What table merging makes of a merge: nothing to do, conflicts that stay (the tables
    /// among them say why), or the resolutions that merge every conflicting table.
    async fn settle_merge(
        &self,
        head: ObjectId,
        source: ObjectId,
        options: &MergeOptions,
        mode: TableMergeMode,
        meta: &MergeMeta,
    ) -> Result<Settlement, MergeRefError> {
        if mode == TableMergeMode::Off {
            return Ok(Settlement::Plain);
        }
        let probe = MergeOptions {
            dry_run: true,
            ..options.clone()
        };
        let outcome = pangolin_merge::merge(self.odb(), head, source, &probe, meta)
            .await
            .map_err(LandError::from)?;
        let MergeOutcome::Conflicted { conflicts, .. } = &outcome else {
            return Ok(Settlement::Plain);
        };
        let settled = self.settle_tables(conflicts, options, false).await?;
        if !settled.overlaps.is_empty() || settled.others > 0 || settled.tables.is_empty() {
            return Ok(Settlement::Conflicted {
                outcome: annotate(outcome.clone(), &settled.overlaps),
                tables: settled.tables,
            });
        }
        // Every conflict is a table whose changes commute: now write the merged tables (not
        // in a dry run).
        let settled = self
            .settle_tables(conflicts, options, !options.dry_run)
            .await?;
        if !settled.overlaps.is_empty() {
            // A table changed between the two looks: nothing lands.
            return Ok(Settlement::Conflicted {
                outcome: annotate(outcome.clone(), &settled.overlaps),
                tables: settled.tables,
            });
        }
        Ok(Settlement::Settled {
            options: MergeOptions {
                resolutions: settled.resolutions,
                ..options.clone()
            },
            tables: settled.tables,
        })
    }

    /// The branch's head, checked against what the caller expects.
    async fn head_for(
        &self,
        branch: &Reference,
        expected: Option<ObjectId>,
    ) -> Result<ObjectId, MergeRefError> {
        let actual = self
            .store()
            .get_ref(self.odb().repo(), branch)
            .await
            .map_err(LandError::from)?;
        let head = actual.ok_or_else(|| LandError::MissingTarget(branch.clone()))?;
        match expected {
            Some(expected) if expected != head => Err(LandError::TargetMoved {
                reference: branch.clone(),
                expected,
                actual,
            }
            .into()),
            _ => Ok(head),
        }
    }

    /// Looks into every conflict that is one table changed on both sides (and that the
    /// caller's own resolutions leave open), merging those whose changes commute (writing the
    /// new files when `write`).
    async fn settle_tables(
        &self,
        conflicts: &[pangolin_merge::Conflict],
        options: &MergeOptions,
        write: bool,
    ) -> Result<Settled, MergeRefError> {
        let mut settled = Settled {
            resolutions: options.resolutions.clone(),
            tables: Vec::new(),
            overlaps: std::collections::BTreeMap::new(),
            others: 0,
        };
        for conflict in conflicts {
            if settled.resolutions.contains_key(&conflict.key) {
                continue;
            }
            let (Some(base), Some(ours), Some(theirs)) =
                (&conflict.base, &conflict.ours, &conflict.theirs)
            else {
                settled.others += 1;
                continue;
            };
            if conflict.kind != ConflictKind::BothModified
                || !is_same_table_changed(Some(base), Some(ours), Some(theirs))
            {
                settled.others += 1;
                continue;
            }
            match self
                .merge_table(&conflict.key, (base, ours, theirs), write)
                .await?
            {
                TableMerge::Merged { entry, plan } => {
                    // A dry run writes nothing: the source's side stands in for the table.
                    let resolution =
                        entry.map_or(Resolution::Theirs, |e| Resolution::Entry(Some(e)));
                    settled.resolutions.insert(conflict.key.clone(), resolution);
                    settled.tables.push(MergedTable {
                        key: conflict.key.clone(),
                        plan,
                    });
                }
                TableMerge::Overlap(reason) => {
                    settled.overlaps.insert(conflict.key.clone(), reason);
                }
            }
        }
        Ok(settled)
    }

    /// Replays the changes of `picks` (oldest first) on branch `onto`.
    #[tracing::instrument(level = "debug", skip(self, options, request), fields(catalog = %self.name()))]
    pub async fn cherry_pick(
        &self,
        picks: &[RefSpec],
        onto: &RefSpec,
        options: &PickOptions,
        request: &HistoryRequest,
    ) -> Result<Landed<PickOutcome>, MergeRefError> {
        let mut commits = Vec::with_capacity(picks.len());
        for pick in picks {
            commits.push(self.resolve(pick).await?.commit);
        }
        let branch = self.target_branch(onto).await?;
        let names: Vec<String> = commits.iter().map(|c| c.short(12)).collect();
        let meta = request.meta(
            format!("cherry-pick {} onto {onto}", names.join(", ")),
            "cherry-pick",
            names.join(","),
        );
        Ok(cherry_pick_onto_branch(
            self.odb(),
            self.store().as_ref(),
            BranchTarget {
                repo: self.odb().repo(),
                branch: &branch,
                expected_head: request.expected_head,
            },
            &commits,
            options,
            &meta,
        )
        .await?)
    }

    /// Undoes the changes of `commit` with a new commit on branch `on`.
    #[tracing::instrument(level = "debug", skip(self, options, request), fields(catalog = %self.name()))]
    pub async fn revert(
        &self,
        commit: &RefSpec,
        on: &RefSpec,
        options: &PickOptions,
        request: &HistoryRequest,
    ) -> Result<Landed<PickOutcome>, MergeRefError> {
        let reverted = self.resolve(commit).await?.commit;
        let branch = self.target_branch(on).await?;
        let meta = request.meta(
            format!("revert {}", reverted.short(12)),
            "revert",
            reverted.to_hex(),
        );
        Ok(revert_on_branch(
            self.odb(),
            self.store().as_ref(),
            BranchTarget {
                repo: self.odb().repo(),
                branch: &branch,
                expected_head: request.expected_head,
            },
            reverted,
            options,
            &meta,
        )
        .await?)
    }
}

/// The conflicts of `outcome` whose tables' changes overlap, marked so with the reason.
fn annotate(
    outcome: MergeOutcome,
    overlaps: &std::collections::BTreeMap<ContentKey, String>,
) -> MergeOutcome {
    match outcome {
        MergeOutcome::Conflicted {
            base,
            mut conflicts,
            changes,
        } => {
            for conflict in &mut conflicts {
                if let Some(reason) = overlaps.get(&conflict.key) {
                    conflict.kind = ConflictKind::TableChangesOverlap;
                    conflict.detail = Some(reason.clone());
                }
            }
            MergeOutcome::Conflicted {
                base,
                conflicts,
                changes,
            }
        }
        other => other,
    }
}
