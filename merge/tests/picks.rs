//! Cherry-picks and reverts over real histories, landed on branches.

#![allow(clippy::unwrap_used)]

mod common;

use common::{Repo, branch, key, namespace, table};
use pangolin_merge::{BranchTarget, ConflictKind, PickOptions, PickOutcome, first_parent_range};

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

#[tokio::test]
async fn cherry_pick_applies_only_the_picked_commits() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    let first = repo
        .commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let second = repo
        .commit("dev", &[("sales.customers", Some(table(2, 1)))])
        .await;
    let main = repo.head("main").await;

    let target = branch("main");
    let at = || BranchTarget {
        repo: &repo.repo,
        branch: &target,
        expected_head: None,
    };
    let landed = pangolin_merge::cherry_pick_onto_branch(
        &repo.odb,
        repo.refs.as_ref(),
        at(),
        &[second],
        &PickOptions::default(),
        &repo.meta("pick"),
    )
    .await
    .unwrap();
    let PickOutcome::Applied {
        commits, changes, ..
    } = landed.outcome
    else {
        panic!()
    };
    assert_eq!(commits.len(), 1);
    let picked = repo.odb.commit(&commits[0]).await.unwrap();
    assert_eq!(picked.parents, vec![main]);
    assert_eq!(
        picked.properties.get("cherry-picked-from"),
        Some(&second.to_hex())
    );
    assert_eq!(changes.len(), 1);
    assert_eq!(
        repo.get(commits[0], "sales.customers").await,
        Some(table(2, 1))
    );
    assert_eq!(
        repo.get(commits[0], "sales.orders").await,
        Some(table(1, 0)),
        "the unpicked change stays out"
    );

    // A range, squashed into one commit.
    let range = first_parent_range(
        &repo.odb,
        repo.odb
            .commit(&first)
            .await
            .unwrap()
            .first_parent()
            .unwrap(),
        second,
    )
    .await
    .unwrap();
    assert_eq!(range, vec![first, second]);
    repo.set(&branch("main"), main).await;
    let squash = PickOptions {
        squash: true,
        ..PickOptions::default()
    };
    let landed = pangolin_merge::cherry_pick_onto_branch(
        &repo.odb,
        repo.refs.as_ref(),
        at(),
        &range,
        &squash,
        &repo.meta("both"),
    )
    .await
    .unwrap();
    let PickOutcome::Applied { commits, .. } = landed.outcome else {
        panic!()
    };
    assert_eq!(commits.len(), 1);
    assert_eq!(
        repo.get(commits[0], "sales.orders").await,
        Some(table(1, 1))
    );
    assert_eq!(
        repo.get(commits[0], "sales.customers").await,
        Some(table(2, 1))
    );
    assert_eq!(repo.head("main").await, commits[0]);
}

#[tokio::test]
async fn a_conflicting_pick_writes_no_commit() {
    let repo = start().await;
    repo.branch_from("dev", "main").await;
    let ok = repo
        .commit("dev", &[("hr.people", Some(table(3, 1)))])
        .await;
    let clash = repo
        .commit("dev", &[("sales.orders", Some(table(1, 1)))])
        .await;
    let main = repo
        .commit("main", &[("sales.orders", Some(table(1, 2)))])
        .await;
    let target = branch("main");
    let at = BranchTarget {
        repo: &repo.repo,
        branch: &target,
        expected_head: None,
    };
    let landed = pangolin_merge::cherry_pick_onto_branch(
        &repo.odb,
        repo.refs.as_ref(),
        at,
        &[ok, clash],
        &PickOptions::default(),
        &repo.meta("pick"),
    )
    .await
    .unwrap();
    let PickOutcome::Conflicted { commit, conflicts } = landed.outcome else {
        panic!()
    };
    assert_eq!(commit, clash);
    assert_eq!(conflicts[0].kind, ConflictKind::BothModified);
    assert_eq!(
        repo.head("main").await,
        main,
        "not even the clean first pick landed"
    );
    assert!(landed.ref_log.is_none());
}

#[tokio::test]
async fn revert_undoes_one_commit_and_keeps_later_ones() {
    let repo = start().await;
    let bad = repo
        .commit(
            "main",
            &[
                ("sales.orders", Some(table(1, 1))),
                ("sales.tmp", Some(table(5, 0))),
            ],
        )
        .await;
    let people_v1 = repo
        .commit("main", &[("hr.people", Some(table(3, 1)))])
        .await;
    let target = branch("main");
    let at = BranchTarget {
        repo: &repo.repo,
        branch: &target,
        expected_head: None,
    };
    let landed = pangolin_merge::revert_on_branch(
        &repo.odb,
        repo.refs.as_ref(),
        at,
        bad,
        &PickOptions::default(),
        &repo.meta("revert bad"),
    )
    .await
    .unwrap();
    let head = repo.head("main").await;
    assert_eq!(landed.outcome.new_head(), Some(head));
    assert_eq!(repo.get(head, "sales.orders").await, Some(table(1, 0)));
    assert_eq!(repo.get(head, "sales.tmp").await, None);
    assert_eq!(repo.get(head, "hr.people").await, Some(table(3, 1)));
    let commit = repo.odb.commit(&head).await.unwrap();
    assert_eq!(commit.properties.get("reverts"), Some(&bad.to_hex()));

    // Reverting a change that was changed again since conflicts.
    let changed = repo
        .commit("main", &[("hr.people", Some(table(3, 2)))])
        .await;
    let at = BranchTarget {
        repo: &repo.repo,
        branch: &target,
        expected_head: None,
    };
    let landed = pangolin_merge::revert_on_branch(
        &repo.odb,
        repo.refs.as_ref(),
        at,
        people_v1,
        &PickOptions::default(),
        &repo.meta("revert"),
    )
    .await
    .unwrap();
    assert!(
        matches!(landed.outcome, PickOutcome::Conflicted { .. }),
        "{:?}",
        landed.outcome
    );
    assert_eq!(repo.head("main").await, changed);
}
