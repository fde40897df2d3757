//! Merges over real histories, landed on branches.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use async_trait::async_trait;
use common::{Repo, branch, key, namespace, table};
use pangolin_backend_memory::MemoryBackend;
use pangolin_merge::{
    BranchTarget, ChangeKind, CommitMode, ConflictKind, FastForward, LandError, MergeError,
    MergeOptions, MergeOutcome, Resolution, Strategy, merge_base, merge_bases, merge_into_branch,
};
use pangolin_refs::{
    LogQuery, RefLogEntry, RefPage, RefQuery, RefStore, Reference, TransactError, Transaction,
};
use pangolin_store::{BackendError, ObjectId, RepoId, Timestamp};

async fn start() -> Repo {
    Repo::new(&[
        (key("sales"), namespace(100)),
        (key("sales.orders"), table(1, 0)),
        (key("sales.customers"), table(2, 0)),
        (key("hr"), namespace(101)),
        (key("hr.people"), table(3, 0)),
    ])
    .await
}

async fn merge(
    repo: &Repo,
    source: &str,
    into: &str,
    options: &MergeOptions,
) -> Result<MergeOutcome, LandError> {
    let source = repo.head(source).await;
    let target = branch(into);
    let at = BranchTarget {
        repo: &repo.repo,
        branch: &target,
        expected_head: None,
    };
    merge_into_branch(
        &repo.odb,
        repo.refs.as_ref(),
        at,
        source,
        options,
        &repo.meta("merge"),
    )
    .await
    .map(|l| l.outcome)
}

#[tokio::test]
async fn a_target_behind_the_source_fast_forwards() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    let dev = repo
        .commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let outcome = merge(&repo, "dev", "main", &MergeOptions::default())
        .await
        .unwrap();
    let MergeOutcome::FastForward { to, changes } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(to, dev);
    assert_eq!(repo.head("main").await, dev);
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].key.clone(), changes[0].kind()),
        (key("sales.orders"), ChangeKind::Modified)
    );
}

#[tokio::test]
async fn no_ff_writes_a_merge_commit_and_ff_only_refuses_diverged_branches() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    let main_before = repo.head("main").await;
    let dev = repo
        .commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let options = MergeOptions {
        fast_forward: FastForward::Never,
        ..MergeOptions::default()
    };
    let outcome = merge(&repo, "dev", "main", &options).await.unwrap();
    let MergeOutcome::Merged {
        commit: Some(commit),
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    let merged = repo.odb.commit(&commit).await.unwrap();
    assert_eq!(merged.parents, vec![main_before, dev]);
    assert_eq!(
        merged.properties.get("operation").map(String::as_str),
        Some("merge")
    );

    repo.commit("dev", &[("hr.people", Some(table(3, 1)))])
        .await;
    repo.commit("main", &[("sales.customers", Some(table(2, 1)))])
        .await;
    let options = MergeOptions {
        fast_forward: FastForward::Only,
        ..MergeOptions::default()
    };
    let err = merge(&repo, "dev", "main", &options).await.unwrap_err();
    assert!(
        matches!(err, LandError::Merge(MergeError::NotFastForward)),
        "{err}"
    );
}

#[tokio::test]
async fn merging_what_the_target_already_has_is_up_to_date() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let dev_before = repo.head("dev").await;
    let outcome = merge(&repo, "main", "dev", &MergeOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, MergeOutcome::UpToDate);
    assert_eq!(repo.head("dev").await, dev_before);
}

#[tokio::test]
async fn diverged_branches_merge_with_two_parents_and_report_only_incoming_changes() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    let dev = repo
        .commit(
            "dev",
            &[
                ("sales.orders", Some(table(1, 1))),
                ("sales.returns", Some(table(4, 0))),
            ],
        )
        .await;
    let main = repo
        .commit("main", &[("hr.people", Some(table(3, 1)))])
        .await;
    let outcome = merge(&repo, "dev", "main", &MergeOptions::default())
        .await
        .unwrap();
    let MergeOutcome::Merged {
        commit: Some(commit),
        changes,
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(repo.head("main").await, commit);
    assert_eq!(
        repo.odb.commit(&commit).await.unwrap().parents,
        vec![main, dev]
    );
    let kinds: Vec<_> = changes
        .iter()
        .map(|c| (c.key.to_string(), c.kind()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("sales.orders".into(), ChangeKind::Modified),
            ("sales.returns".into(), ChangeKind::Added)
        ]
    );
    assert_eq!(
        repo.get(commit, "hr.people").await,
        Some(table(3, 1)),
        "our change kept"
    );
    assert_eq!(
        repo.get(commit, "sales.returns").await,
        Some(table(4, 0)),
        "their change taken"
    );
}

#[tokio::test]
async fn conflicts_are_reported_and_move_nothing_until_resolved() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit(
        "dev",
        &[("sales.orders", Some(table(1, 1))), ("hr.people", None)],
    )
    .await;
    let main = repo
        .commit(
            "main",
            &[
                ("sales.orders", Some(table(1, 2))),
                ("hr.people", Some(table(3, 5))),
            ],
        )
        .await;

    let outcome = merge(&repo, "dev", "main", &MergeOptions::default())
        .await
        .unwrap();
    let MergeOutcome::Conflicted { conflicts, .. } = outcome else {
        panic!("{outcome:?}")
    };
    let found: Vec<_> = conflicts
        .iter()
        .map(|c| (c.key.to_string(), c.kind))
        .collect();
    assert_eq!(
        found,
        [
            ("hr.people".into(), ConflictKind::ModifiedDeleted),
            ("sales.orders".into(), ConflictKind::BothModified)
        ]
    );
    let orders = &conflicts[1];
    assert_eq!(
        (
            orders.base.clone(),
            orders.ours.clone(),
            orders.theirs.clone()
        ),
        (Some(table(1, 0)), Some(table(1, 2)), Some(table(1, 1)))
    );
    assert_eq!(
        repo.head("main").await,
        main,
        "a conflicting merge moves nothing"
    );

    // Resolving one key is not enough.
    let partial = MergeOptions {
        resolutions: BTreeMap::from([(key("sales.orders"), Resolution::Theirs)]),
        ..MergeOptions::default()
    };
    let outcome = merge(&repo, "dev", "main", &partial).await.unwrap();
    assert!(
        matches!(outcome, MergeOutcome::Conflicted { ref conflicts, .. } if conflicts.len() == 1)
    );

    let explicit = table(1, 9);
    let full = MergeOptions {
        resolutions: BTreeMap::from([
            (
                key("sales.orders"),
                Resolution::Entry(Some(explicit.clone())),
            ),
            (key("hr.people"), Resolution::Ours),
        ]),
        ..MergeOptions::default()
    };
    let outcome = merge(&repo, "dev", "main", &full).await.unwrap();
    let MergeOutcome::Merged {
        commit: Some(commit),
        resolved,
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(resolved.len(), 2);
    assert_eq!(repo.get(commit, "sales.orders").await, Some(explicit));
    assert_eq!(repo.get(commit, "hr.people").await, Some(table(3, 5)));
}

#[tokio::test]
async fn a_resolution_for_a_key_without_conflict_is_refused() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    repo.commit("main", &[("hr.people", Some(table(3, 1)))])
        .await;
    let options = MergeOptions {
        resolutions: BTreeMap::from([(key("sales.orders"), Resolution::Ours)]),
        ..MergeOptions::default()
    };
    let err = merge(&repo, "dev", "main", &options).await.unwrap_err();
    assert!(
        matches!(err, LandError::Merge(MergeError::UnknownResolution(ref keys)) if keys == &[key("sales.orders")])
    );
    assert!(err.to_string().contains("sales.orders"));
}

#[tokio::test]
async fn strategies_settle_all_conflicts() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    repo.commit("main", &[("sales.orders", Some(table(1, 2)))])
        .await;
    repo.branch_from("main2", "main").await;
    let theirs = MergeOptions {
        strategy: Strategy::PreferTheirs,
        ..MergeOptions::default()
    };
    let MergeOutcome::Merged {
        commit: Some(c), ..
    } = merge(&repo, "dev", "main", &theirs).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(repo.get(c, "sales.orders").await, Some(table(1, 1)));
    let ours = MergeOptions {
        strategy: Strategy::PreferOurs,
        ..MergeOptions::default()
    };
    let MergeOutcome::Merged {
        commit: Some(c), ..
    } = merge(&repo, "dev", "main2", &ours).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(repo.get(c, "sales.orders").await, Some(table(1, 2)));
}

#[tokio::test]
async fn a_namespace_dropped_on_one_side_while_the_other_adds_to_it_conflicts() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("hr", None), ("hr.people", None)])
        .await;
    repo.commit("main", &[("hr.payroll", Some(table(9, 0)))])
        .await;
    let outcome = merge(&repo, "dev", "main", &MergeOptions::default())
        .await
        .unwrap();
    let MergeOutcome::Conflicted { conflicts, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].key, key("hr"));
    assert_eq!(conflicts[0].kind, ConflictKind::NamespaceDeleted);
    assert_eq!(conflicts[0].changed_under, vec![key("hr.payroll")]);
    assert_eq!(conflicts[0].theirs, None);
}

#[tokio::test]
async fn a_table_dropped_and_recreated_on_one_side_conflicts_with_changes_on_the_other() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(77, 0)))])
        .await; // new identity
    repo.commit("main", &[("sales.orders", Some(table(1, 3)))])
        .await;
    let outcome = merge(&repo, "dev", "main", &MergeOptions::default())
        .await
        .unwrap();
    let MergeOutcome::Conflicted { conflicts, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(conflicts[0].kind, ConflictKind::IdentityChanged);
}

#[tokio::test]
async fn a_second_merge_from_the_same_source_brings_only_new_changes() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    repo.commit("main", &[("hr.people", Some(table(3, 1)))])
        .await;
    merge(&repo, "dev", "main", &MergeOptions::default())
        .await
        .unwrap();
    // Keep working on both.
    let dev = repo
        .commit("dev", &[("sales.customers", Some(table(2, 1)))])
        .await;
    repo.commit("main", &[("hr.people", Some(table(3, 2)))])
        .await;
    let first_dev = repo.odb.commit(&dev).await.unwrap().first_parent().unwrap();

    let main = repo.head("main").await;
    assert_eq!(
        merge_base(&repo.odb, main, dev).await.unwrap(),
        Some(first_dev)
    );
    let outcome = merge(&repo, "dev", "main", &MergeOptions::default())
        .await
        .unwrap();
    let MergeOutcome::Merged {
        commit: Some(commit),
        changes,
        base,
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(base, Some(first_dev));
    let keys: Vec<_> = changes.iter().map(|c| c.key.to_string()).collect();
    assert_eq!(
        keys,
        ["sales.customers"],
        "the first merge's change is not brought again"
    );
    assert_eq!(repo.get(commit, "hr.people").await, Some(table(3, 2)));
}

#[tokio::test]
async fn criss_cross_histories_have_two_bases_and_merge_deterministically() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    let a1 = repo
        .commit("main", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let b1 = repo
        .commit("dev", &[("hr.people", Some(table(3, 1)))])
        .await;
    // Each side merges the other's first commit: a criss-cross.
    let a2 = repo
        .commit_with_parents(vec![a1, b1], &[("hr.people", Some(table(3, 1)))])
        .await;
    let b2 = repo
        .commit_with_parents(vec![b1, a1], &[("sales.orders", Some(table(1, 1)))])
        .await;
    repo.set(&branch("main"), a2).await;
    repo.set(&branch("dev"), b2).await;
    let a3 = repo
        .commit("main", &[("sales.customers", Some(table(2, 1)))])
        .await;
    let b3 = repo
        .commit("dev", &[("sales.returns", Some(table(4, 0)))])
        .await;

    let mut bases = merge_bases(&repo.odb, a3, b3).await.unwrap();
    bases.sort();
    let mut expected = vec![a1, b1];
    expected.sort();
    assert_eq!(bases, expected);
    let chosen = merge_base(&repo.odb, a3, b3).await.unwrap();
    assert_eq!(
        chosen,
        merge_base(&repo.odb, b3, a3).await.unwrap(),
        "independent of argument order"
    );

    let outcome = merge(&repo, "dev", "main", &MergeOptions::default())
        .await
        .unwrap();
    let MergeOutcome::Merged {
        commit: Some(commit),
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    let contents = repo.contents(commit).await;
    assert_eq!(contents.get(&key("sales.customers")), Some(&table(2, 1)));
    assert_eq!(contents.get(&key("sales.returns")), Some(&table(4, 0)));
    assert_eq!(contents.get(&key("sales.orders")), Some(&table(1, 1)));
    assert_eq!(contents.get(&key("hr.people")), Some(&table(3, 1)));
}

#[tokio::test]
async fn a_dry_run_reports_but_writes_and_moves_nothing() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let main = repo
        .commit("main", &[("hr.people", Some(table(3, 1)))])
        .await;
    let options = MergeOptions {
        dry_run: true,
        ..MergeOptions::default()
    };
    let outcome = merge(&repo, "dev", "main", &options).await.unwrap();
    let MergeOutcome::Merged {
        commit: None,
        changes,
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(changes.len(), 1);
    assert_eq!(repo.head("main").await, main);
}

#[tokio::test]
async fn squash_merges_have_one_parent() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    repo.commit("dev", &[("sales.customers", Some(table(2, 1)))])
        .await;
    let main = repo
        .commit("main", &[("hr.people", Some(table(3, 1)))])
        .await;
    let options = MergeOptions {
        mode: CommitMode::Squash,
        ..MergeOptions::default()
    };
    let MergeOutcome::Merged {
        commit: Some(c),
        changes,
        ..
    } = merge(&repo, "dev", "main", &options).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(repo.odb.commit(&c).await.unwrap().parents, vec![main]);
    assert_eq!(changes.len(), 2);
}

#[tokio::test]
async fn a_merge_never_lands_on_a_head_it_did_not_see() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let seen = repo.head("main").await;
    let moved = repo
        .commit("main", &[("hr.people", Some(table(3, 1)))])
        .await;
    let target = branch("main");
    let at = BranchTarget {
        repo: &repo.repo,
        branch: &target,
        expected_head: Some(seen),
    };
    let source = repo.head("dev").await;
    let err = merge_into_branch(
        &repo.odb,
        repo.refs.as_ref(),
        at,
        source,
        &MergeOptions::default(),
        &repo.meta("m"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, LandError::TargetMoved { expected, actual: Some(a), .. } if expected == seen && a == moved)
    );
    assert_eq!(repo.head("main").await, moved);
}

/// A ref store that reports a stale head once, as if another writer moved the branch between
/// the read and the compare-and-swap.
struct StaleOnce {
    inner: std::sync::Arc<MemoryBackend>,
    stale: ObjectId,
}

#[async_trait]
impl RefStore for StaleOnce {
    async fn get_ref(&self, _: &RepoId, _: &Reference) -> Result<Option<ObjectId>, BackendError> {
        Ok(Some(self.stale))
    }
    async fn list_refs(&self, repo: &RepoId, query: &RefQuery) -> Result<RefPage, BackendError> {
        self.inner.list_refs(repo, query).await
    }
    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        self.inner.transact(repo, tx).await
    }
    async fn ref_log(
        &self,
        repo: &RepoId,
        r: &Reference,
        q: LogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        self.inner.ref_log(repo, r, q).await
    }
    async fn repository_log(
        &self,
        repo: &RepoId,
        query: pangolin_refs::RepoLogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        self.inner.repository_log(repo, query).await
    }

    async fn ref_log_at(
        &self,
        repo: &RepoId,
        r: &Reference,
        t: Timestamp,
    ) -> Result<Option<RefLogEntry>, BackendError> {
        self.inner.ref_log_at(repo, r, t).await
    }
}

#[tokio::test]
async fn a_branch_moved_during_the_merge_is_not_overwritten() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    repo.commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let stale = repo.head("main").await;
    let moved = repo
        .commit("main", &[("hr.people", Some(table(3, 1)))])
        .await;
    let refs = StaleOnce {
        inner: repo.refs.clone(),
        stale,
    };
    let target = branch("main");
    let at = BranchTarget {
        repo: &repo.repo,
        branch: &target,
        expected_head: None,
    };
    let source = repo.head("dev").await;
    let err = merge_into_branch(
        &repo.odb,
        &refs,
        at,
        source,
        &MergeOptions::default(),
        &repo.meta("m"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, LandError::TargetMoved { actual: Some(a), .. } if a == moved),
        "{err}"
    );
    assert_eq!(repo.head("main").await, moved);
}

#[tokio::test]
async fn tags_cannot_be_merged_into() {
    let repo = start().await;
    let head = repo.head("main").await;
    let tag = Reference::tag(pangolin_refs::RefName::new("v1").unwrap());
    repo.set(&tag, head).await;
    let at = BranchTarget {
        repo: &repo.repo,
        branch: &tag,
        expected_head: None,
    };
    let err = merge_into_branch(
        &repo.odb,
        repo.refs.as_ref(),
        at,
        head,
        &MergeOptions::default(),
        &repo.meta("m"),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, LandError::TargetIsTag(_)));
}
