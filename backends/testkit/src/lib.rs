//! The conformance suite every storage backend runs.
//!
//! Each case is an async function generic over the backend; [`conformance_tests!`] expands to
//! one `#[tokio::test]` per case for a backend crate. Every case works in repositories of its
//! own, so backends that share one database between tests stay independent.

pub mod audit;
pub mod crash;
pub mod objects;
pub mod prune;
pub mod records;
pub mod refs;
pub mod repo_log;

use std::sync::atomic::{AtomicU64, Ordering};

use pangolin_records::{AuditLog, RecordStore};
use pangolin_refs::{Prune, Publish, RefName, RefStore, Reference};
use pangolin_store::{ObjectId, ObjectKind, ObjectStore, RawObject, RepoId};

/// A store the suite can run against: objects, refs, records and the audit log.
pub trait Backend: ObjectStore + RefStore + Publish + Prune + RecordStore + AuditLog {}

impl<T: ObjectStore + RefStore + Publish + Prune + RecordStore + AuditLog> Backend for T {}

/// A repository id no other test uses.
pub fn fresh_repo() -> RepoId {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    RepoId::new(format!("testkit-{}-{n}", uuid::Uuid::new_v4().simple()))
        .expect("hex and digits make a valid repository id")
}

/// A raw object with distinct, deterministic content.
pub fn object(seed: u64) -> RawObject {
    let data = format!("object body {seed}").into_bytes();
    RawObject {
        id: ObjectId::compute(ObjectKind::Tree, &data),
        kind: ObjectKind::Tree,
        data: data.into(),
    }
}

/// An id to point refs at; ref stores do not look objects up.
pub fn commit_id(seed: u64) -> ObjectId {
    ObjectId::compute(ObjectKind::Commit, &seed.to_le_bytes())
}

pub fn branch(name: &str) -> Reference {
    Reference::branch(RefName::new(name).expect("test names are valid"))
}

pub fn tag(name: &str) -> Reference {
    Reference::tag(RefName::new(name).expect("test names are valid"))
}

/// One `#[tokio::test]` per conformance case, each on a fresh backend from `$make` (a future
/// that yields the backend, e.g. an `async { ... }` block).
///
/// With `skip_if: <expr>`, each test returns at once (saying so on stderr) when the expression
/// is true: for backends that need a server the caller has decided is absent.
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!($make, skip_if: false);
    };
    ($make:expr, skip_if: $skip:expr) => {
        $crate::conformance_tests!(@cases $make, $skip;
            objects::stored_objects_read_back_byte_for_byte,
            objects::a_missing_object_is_none_not_an_error,
            objects::puts_are_idempotent,
            objects::get_many_answers_in_request_order_with_gaps,
            objects::objects_are_scoped_per_repository,
            objects::prefixes_find_matching_ids_in_order,
            objects::large_objects_round_trip,
            refs::creating_requires_the_ref_to_be_absent,
            refs::expectation_matrix_matches_the_contract,
            refs::multi_ref_transactions_are_all_or_nothing,
            refs::invalid_transactions_are_refused,
            refs::the_log_records_every_move_newest_first,
            refs::log_times_never_go_backwards_for_a_ref,
            refs::log_at_finds_what_a_reader_saw_then,
            refs::listing_filters_by_kind_and_prefix_and_pages,
            refs::refs_are_scoped_per_repository,
            refs::racing_writers_lose_no_update,
            refs::transactions_on_different_refs_do_not_conflict,
            refs::publishing_stores_the_objects_with_the_ref_move,
            repo_log::the_repository_log_lists_every_move_in_order,
            repo_log::a_reader_following_the_repository_log_misses_nothing,
            prune::listing_objects_pages_in_id_order,
            prune::deletes_apply_only_while_no_ref_moved,
            prune::publishes_racing_deletes_keep_their_objects,
            prune::dropping_a_repository_removes_everything_of_it,
            records::creating_requires_the_record_to_be_absent,
            records::updates_compare_and_swap_the_version,
            records::deletes_need_the_current_version,
            records::listing_filters_by_prefix_and_pages,
            records::racing_record_writers_lose_no_update,
            records::a_lease_has_one_holder_at_a_time,
            audit::appends_form_one_verified_chain,
            audit::batched_appends_continue_one_verified_chain,
            audit::concurrent_appends_keep_the_chain_whole,
            audit::queries_filter_and_page,
            audit::events_round_trip_exactly,
            audit::publishes_append_their_events_with_the_ref_move,
            audit::publishes_and_appends_racing_keep_the_chain_whole
        );
    };
    (@cases $make:expr, $skip:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                if $skip {
                    eprintln!("skipped: {}", stringify!($case));
                    return;
                }
                let backend = std::sync::Arc::new($make.await);
                $crate::$module::$case(backend).await;
            }
        )*
    };
}
