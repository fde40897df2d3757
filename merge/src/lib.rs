//! Merging catalog histories.
//!
//! - [`base`]: the best common ancestor of two commits.
//! - [`decision`]: the per-key three-way rule and the kinds of conflict.
//! - [`trees`]: the three-way merge of two trees against a base, driven by diffs, with
//!   conflicts returned as data and settled by per-key resolutions or a strategy.
//! - [`commits`]: merging one commit into another: up to date, fast-forward, merge commit,
//!   squash, dry run.
//! - [`pick`]: cherry-pick and revert on the same model.
//! - [`land`]: moving a branch to the result, by compare-and-swap from the head that was
//!   merged into; the only code here that touches refs.

pub mod base;
pub mod commits;
pub mod decision;
pub mod land;
pub mod pick;
pub mod trees;

pub use base::{merge_base, merge_bases};
pub use commits::{
    CommitMeta, CommitMode, FastForward, MergeError, MergeOptions, MergeOutcome, merge,
};
pub use decision::{ConflictKind, Decision, decide};
pub use land::{
    BranchTarget, LandError, Landed, cherry_pick_onto_branch, merge_into_branch, revert_on_branch,
};
pub use pick::{PickError, PickOptions, PickOutcome, cherry_pick, first_parent_range, revert};
pub use trees::{
    ChangeKind, ChangeSource, Conflict, KeyChange, Resolution, Strategy, TreeMerge, TreeMergeError,
    TreeMergeOptions, trees,
};
