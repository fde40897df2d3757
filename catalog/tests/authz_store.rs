//! Roles and bindings in the record store, on the memory and SQLite backends: compare-and-swap,
//! paging, bindings to deleted roles, and refused escalations.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_catalog::authz::{
    AuthzStore, BindError, BranchPattern, CreateRoleError, DeleteRoleError, Grant, GrantRefusal,
    Principal, PrincipalKind, Privilege, Request, Resource, Role, UnbindError, UpdateRoleError,
    decide,
};
use pangolin_records::{ExpectedVersion, RecordError, RecordKey, RecordPage, RecordStore};
use pangolin_store::BackendError;

fn root() -> Principal {
    Principal {
        id: "user:root".into(),
        tenant: None,
        kind: PrincipalKind::User,
        is_admin: true,
        groups: Vec::new(),
    }
}

fn tenant_admin(tenant: &str) -> Principal {
    Principal {
        id: format!("user:{tenant}/admin"),
        tenant: Some(tenant.into()),
        kind: PrincipalKind::User,
        is_admin: true,
        groups: Vec::new(),
    }
}

fn user(tenant: &str, name: &str) -> Principal {
    Principal {
        id: format!("user:{tenant}/{name}"),
        tenant: Some(tenant.into()),
        kind: PrincipalKind::User,
        is_admin: false,
        groups: Vec::new(),
    }
}

fn lake() -> Resource {
    Resource::catalog("acme", "lake")
}

fn ns(levels: &[&str]) -> Resource {
    Resource::namespace("acme", "lake", levels.iter().copied())
}

fn pattern(p: &str) -> BranchPattern {
    BranchPattern::parse(p).unwrap()
}

fn reader_of(resource: Resource) -> Vec<Grant> {
    vec![Grant::new(Privilege::Read, resource)]
}

/// Runs one async case against a fresh memory backend and a fresh SQLite database.
macro_rules! on_every_backend {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $case() {
                    let records: std::sync::Arc<dyn pangolin_records::RecordStore> =
                        std::sync::Arc::new(pangolin_backend_memory::MemoryBackend::new());
                    super::$case(records).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let dir = tempfile::tempdir().unwrap();
                    let backend = pangolin_backend_sqlite::SqliteBackend::open(
                        dir.path().join("authz.db"),
                    )
                    .await
                    .unwrap();
                    let records: std::sync::Arc<dyn pangolin_records::RecordStore> =
                        std::sync::Arc::new(backend);
                    super::$case(records).await;
                }
            )*
        }
    };
}

on_every_backend!(
    roles_are_created_read_and_listed_in_pages,
    concurrent_updates_of_a_role_conflict,
    stale_deletes_conflict,
    bindings_to_deleted_roles_are_ignored,
    roles_bound_to_a_group_apply_to_its_members_once,
    bindings_and_members_are_listed_in_pages,
    a_tenant_admin_cannot_bind_a_role_of_another_tenant,
    a_namespace_grant_manager_cannot_grant_on_the_catalog,
    write_on_dev_does_not_make_write_on_every_branch,
    updates_recheck_what_they_add_and_remove,
    a_disabled_role_allows_nothing_until_enabled,
    an_update_that_loses_the_race_after_reading_conflicts,
);

async fn roles_are_created_read_and_listed_in_pages(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    for i in 0..5 {
        let role = Role::new("acme", format!("r{i}"), reader_of(ns(&[&format!("n{i}")])));
        let stored = store.create_role(&root(), &[], role).await.unwrap();
        assert_eq!(stored.version, 1);
    }
    store
        .create_role(&root(), &[], Role::new("globex", "r9", vec![]))
        .await
        .unwrap();
    let again = store
        .create_role(&root(), &[], Role::new("acme", "r1", vec![]))
        .await;
    assert!(matches!(again, Err(CreateRoleError::AlreadyExists { .. })));

    let got = store.get_role("acme", "r3").await.unwrap().unwrap();
    assert_eq!(got.role.grants, reader_of(ns(&["n3"])));
    assert!(store.get_role("acme", "nope").await.unwrap().is_none());

    let mut names = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let page = store.list_roles("acme", after.as_deref(), 2).await.unwrap();
        pages += 1;
        assert!(page.roles.len() <= 2);
        names.extend(page.roles.into_iter().map(|r| r.role.name));
        match page.next_after {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(names, ["r0", "r1", "r2", "r3", "r4"]);
    assert_eq!(pages, 3);
}

async fn concurrent_updates_of_a_role_conflict(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let role = Role::new("acme", "team", reader_of(ns(&["a"])));
    store.create_role(&root(), &[], role.clone()).await.unwrap();
    let admin = tenant_admin("acme");
    let one = Role::new("acme", "team", reader_of(ns(&["b"])));
    let two = Role::new("acme", "team", reader_of(ns(&["c"])));
    let (first, second) = tokio::join!(
        store.update_role(&admin, &[], one, 1),
        store.update_role(&admin, &[], two, 1),
    );
    let (won, lost) = match (first, second) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
        other => panic!("expected exactly one update to land: {other:?}"),
    };
    assert_eq!(won.version, 2);
    assert!(
        matches!(
            lost,
            UpdateRoleError::Conflict {
                expected: 1,
                actual: Some(2),
                ..
            }
        ),
        "{lost:?}"
    );
    let stored = store.get_role("acme", "team").await.unwrap().unwrap();
    assert_eq!(stored, won);
    let stale = store
        .update_role(&admin, &[], Role::new("acme", "team", vec![]), 1)
        .await;
    assert!(matches!(stale, Err(UpdateRoleError::Conflict { .. })));
    let missing = store
        .update_role(&admin, &[], Role::new("acme", "ghost", vec![]), 1)
        .await;
    assert!(matches!(missing, Err(UpdateRoleError::NotFound { .. })));
}

async fn stale_deletes_conflict(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let admin = tenant_admin("acme");
    store
        .create_role(&admin, &[], Role::new("acme", "team", vec![]))
        .await
        .unwrap();
    store
        .update_role(&admin, &[], Role::new("acme", "team", reader_of(lake())), 1)
        .await
        .unwrap();
    let stale = store.delete_role(&admin, &[], "acme", "team", 1).await;
    assert!(matches!(
        stale,
        Err(DeleteRoleError::Conflict {
            expected: 1,
            actual: 2,
            ..
        })
    ));
    store
        .delete_role(&admin, &[], "acme", "team", 2)
        .await
        .unwrap();
    let gone = store.delete_role(&admin, &[], "acme", "team", 2).await;
    assert!(matches!(gone, Err(DeleteRoleError::NotFound { .. })));
}

async fn roles_bound_to_a_group_apply_to_its_members_once(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let admin = tenant_admin("acme");
    store
        .create_role(&admin, &[], Role::new("acme", "reader", reader_of(lake())))
        .await
        .unwrap();
    let group = "group:acme/okta/data-engineers";
    let person = "oidc:acme/okta/00u1";
    store
        .bind(&admin, &[], "acme", "reader", group)
        .await
        .unwrap();
    let member = Principal {
        id: person.to_owned(),
        groups: vec![group.to_owned(), "group:acme/okta/other".to_owned()],
        ..user("acme", "x")
    };
    let request = Request::new(Privilege::Read, lake()).at("main");
    let roles = store.roles_of(&member).await.unwrap();
    assert_eq!(roles.len(), 1);
    assert!(decide(&member, &roles, &request).is_allowed());
    // Bound to the person too: still one role.
    store
        .bind(&admin, &[], "acme", "reader", person)
        .await
        .unwrap();
    assert_eq!(store.roles_of(&member).await.unwrap().len(), 1);
    // Outside the group, nothing from it.
    let outsider = Principal {
        id: "oidc:acme/okta/00u2".to_owned(),
        groups: vec!["group:acme/okta/other".to_owned()],
        ..user("acme", "y")
    };
    let roles = store.roles_of(&outsider).await.unwrap();
    assert!(!decide(&outsider, &roles, &request).is_allowed());
    // A group of another tenant cannot be bound to a role of this one.
    let foreign = store
        .bind(
            &admin,
            &[],
            "acme",
            "reader",
            "group:globex/okta/data-engineers",
        )
        .await;
    assert!(foreign.is_err());
}

async fn bindings_to_deleted_roles_are_ignored(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let admin = tenant_admin("acme");
    let ana = user("acme", "ana");
    store
        .create_role(&admin, &[], Role::new("acme", "reader", reader_of(lake())))
        .await
        .unwrap();
    assert!(
        store
            .bind(&admin, &[], "acme", "reader", &ana.id)
            .await
            .unwrap()
    );
    assert!(
        !store
            .bind(&admin, &[], "acme", "reader", &ana.id)
            .await
            .unwrap(),
        "binding twice changes nothing"
    );
    let request = Request::new(Privilege::Read, lake()).at("main");
    let roles = store.roles_of(&ana).await.unwrap();
    assert!(decide(&ana, &roles, &request).is_allowed());

    store
        .delete_role(&admin, &[], "acme", "reader", 1)
        .await
        .unwrap();
    let page = store.bindings_of("acme", &ana.id, None, 10).await.unwrap();
    assert_eq!(page.roles, ["reader"], "the binding lingers");
    let roles = store.roles_of(&ana).await.unwrap();
    assert!(roles.is_empty());
    assert!(!decide(&ana, &roles, &request).is_allowed());

    let bind_missing = store.bind(&admin, &[], "acme", "reader", &ana.id).await;
    assert!(matches!(bind_missing, Err(BindError::RoleNotFound { .. })));
    store
        .unbind(&admin, &[], "acme", "reader", &ana.id)
        .await
        .unwrap();
    let again = store.unbind(&admin, &[], "acme", "reader", &ana.id).await;
    assert!(matches!(again, Err(UnbindError::NotBound { .. })));
    assert!(
        store
            .bindings_of("acme", &ana.id, None, 10)
            .await
            .unwrap()
            .roles
            .is_empty()
    );
}

async fn bindings_and_members_are_listed_in_pages(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let admin = tenant_admin("acme");
    for name in ["r", "s", "t"] {
        store
            .create_role(&admin, &[], Role::new("acme", name, vec![]))
            .await
            .unwrap();
    }
    // `ana` and `ana/x` would share a key prefix if ids were not escaped.
    let principals = [
        "user:acme/ana",
        "user:acme/ana/x",
        "service:acme/etl",
        "user:acme/bo",
    ];
    for (i, principal) in principals.iter().enumerate() {
        store
            .bind(&admin, &[], "acme", "r", principal)
            .await
            .unwrap();
        if i % 2 == 0 {
            store
                .bind(&admin, &[], "acme", "s", principal)
                .await
                .unwrap();
        }
    }
    store
        .bind(&admin, &[], "acme", "t", "user:acme/ana")
        .await
        .unwrap();

    let first = store
        .bindings_of("acme", "user:acme/ana", None, 2)
        .await
        .unwrap();
    assert_eq!(first.roles, ["r", "s"]);
    let rest = store
        .bindings_of("acme", "user:acme/ana", first.next_after.as_deref(), 2)
        .await
        .unwrap();
    assert_eq!(rest.roles, ["t"]);
    assert_eq!(rest.next_after, None);

    let mut members = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .principals_of("acme", "r", after.as_deref(), 3)
            .await
            .unwrap();
        assert!(page.principals.len() <= 3);
        members.extend(page.principals);
        match page.next_after {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    members.sort();
    let mut expected = principals.map(String::from).to_vec();
    expected.sort();
    assert_eq!(members, expected);
    let s = store.principals_of("acme", "s", None, 10).await.unwrap();
    assert_eq!(s.principals.len(), 2);
    assert_eq!(s.next_after, None);
}

async fn a_tenant_admin_cannot_bind_a_role_of_another_tenant(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    store
        .create_role(
            &root(),
            &[],
            Role::new("globex", "all", reader_of(Resource::tenant("globex"))),
        )
        .await
        .unwrap();
    store
        .create_role(
            &root(),
            &[],
            Role::new("acme", "all", reader_of(Resource::tenant("acme"))),
        )
        .await
        .unwrap();
    let acme = tenant_admin("acme");
    for principal in ["user:acme/ana", "user:globex/bob"] {
        let refused = store.bind(&acme, &[], "globex", "all", principal).await;
        assert!(
            matches!(
                refused,
                Err(BindError::Refused(
                    GrantRefusal::OtherTenant { .. } | GrantRefusal::PrincipalOutsideTenant { .. }
                ))
            ),
            "{principal}: {refused:?}"
        );
    }
    for principal in ["user:globex/bob", "user:root"] {
        let refused = store.bind(&acme, &[], "acme", "all", principal).await;
        assert!(
            matches!(
                refused,
                Err(BindError::Refused(
                    GrantRefusal::PrincipalOutsideTenant { .. }
                ))
            ),
            "{principal}: {refused:?}"
        );
    }
    let foreign = store
        .create_role(
            &acme,
            &[],
            Role::new("globex", "mine", reader_of(Resource::tenant("globex"))),
        )
        .await;
    assert!(matches!(
        foreign,
        Err(CreateRoleError::Refused(GrantRefusal::OtherTenant { .. }))
    ));
    let smuggled = store
        .create_role(
            &acme,
            &[],
            Role::new("acme", "smuggled", reader_of(Resource::tenant("globex"))),
        )
        .await;
    assert!(matches!(smuggled, Err(CreateRoleError::Invalid(_))));
    assert!(
        store
            .bindings_of("globex", "user:acme/ana", None, 10)
            .await
            .unwrap()
            .roles
            .is_empty()
    );
}

async fn a_namespace_grant_manager_cannot_grant_on_the_catalog(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let admin = tenant_admin("acme");
    let ana = user("acme", "ana");
    let manager = Role::new(
        "acme",
        "a-manager",
        vec![
            Grant::new(Privilege::ManageGrants, ns(&["a"])),
            Grant::new(Privilege::Read, lake()),
        ],
    );
    store.create_role(&admin, &[], manager).await.unwrap();
    store
        .bind(&admin, &[], "acme", "a-manager", &ana.id)
        .await
        .unwrap();
    let ana_roles = store.roles_of(&ana).await.unwrap();

    let on_catalog = Role::new("acme", "wide", reader_of(lake()));
    let refused = store.create_role(&ana, &ana_roles, on_catalog).await;
    assert!(
        matches!(
            refused,
            Err(CreateRoleError::Refused(
                GrantRefusal::NoManageGrants { .. }
            ))
        ),
        "{refused:?}"
    );
    let on_sibling = Role::new("acme", "sibling", reader_of(ns(&["b"])));
    let refused = store.create_role(&ana, &ana_roles, on_sibling).await;
    assert!(matches!(refused, Err(CreateRoleError::Refused(_))));

    let narrow = Role::new("acme", "narrow", reader_of(ns(&["a", "x"])));
    store.create_role(&ana, &ana_roles, narrow).await.unwrap();
    store
        .bind(&ana, &ana_roles, "acme", "narrow", "user:acme/bo")
        .await
        .unwrap();
    // She may not hand out the role that made her a manager: it manages grants on `a` only but
    // also reads the whole catalog.
    let refused = store
        .bind(&ana, &ana_roles, "acme", "a-manager", "user:acme/bo")
        .await;
    assert!(matches!(refused, Err(BindError::Refused(_))), "{refused:?}");
    assert!(store.get_role("acme", "wide").await.unwrap().is_none());
}

async fn write_on_dev_does_not_make_write_on_every_branch(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let admin = tenant_admin("acme");
    let ana = user("acme", "ana");
    let dev_writer = Role::new(
        "acme",
        "dev-writer",
        vec![
            Grant::new(Privilege::ManageGrants, lake()),
            Grant::new(Privilege::Write, lake()).at(pattern("dev*")),
        ],
    );
    store.create_role(&admin, &[], dev_writer).await.unwrap();
    store
        .bind(&admin, &[], "acme", "dev-writer", &ana.id)
        .await
        .unwrap();
    let ana_roles = store.roles_of(&ana).await.unwrap();

    for branches in ["*", "main", "d*", "release/*"] {
        let grant = Grant::new(Privilege::Write, lake()).at(pattern(branches));
        let role = Role::new("acme", "w", vec![grant]);
        let refused = store.create_role(&ana, &ana_roles, role).await;
        assert!(
            matches!(
                refused,
                Err(CreateRoleError::Refused(GrantRefusal::NotHeld { .. }))
            ),
            "{branches}: {refused:?}"
        );
    }
    for (name, branches) in [("w1", "dev"), ("w2", "dev-ana*"), ("w3", "dev*")] {
        let grant = Grant::new(Privilege::Write, ns(&["a"])).at(pattern(branches));
        store
            .create_role(&ana, &ana_roles, Role::new("acme", name, vec![grant]))
            .await
            .unwrap();
    }
}

async fn updates_recheck_what_they_add_and_remove(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let admin = tenant_admin("acme");
    let ana = user("acme", "ana");
    let manager = Role::new(
        "acme",
        "manager",
        vec![
            Grant::new(Privilege::ManageGrants, lake()),
            Grant::new(Privilege::Write, lake()).at(pattern("dev*")),
        ],
    );
    store.create_role(&admin, &[], manager).await.unwrap();
    store
        .bind(&admin, &[], "acme", "manager", &ana.id)
        .await
        .unwrap();
    let ana_roles = store.roles_of(&ana).await.unwrap();
    let dev = Grant::new(Privilege::Write, lake()).at(pattern("dev"));
    let mine = Role::new("acme", "mine", vec![dev.clone()]);
    store.create_role(&ana, &ana_roles, mine).await.unwrap();

    let everywhere = Grant::new(Privilege::Write, lake());
    let widened = Role::new("acme", "mine", vec![dev.clone(), everywhere.clone()]);
    let refused = store.update_role(&ana, &ana_roles, widened, 1).await;
    assert!(
        matches!(
            refused,
            Err(UpdateRoleError::Refused(GrantRefusal::NotHeld { .. }))
        ),
        "{refused:?}"
    );
    let added = Role::new(
        "acme",
        "mine",
        vec![dev.clone(), dev.clone().at(pattern("dev2"))],
    );
    let stored = store.update_role(&ana, &ana_roles, added, 1).await.unwrap();
    assert_eq!(stored.version, 2);

    // A role an admin filled with more than Ana holds: she can add what she holds, but not
    // take away what she could not have given.
    let wide = Role::new("acme", "wide", vec![everywhere.clone()]);
    store.create_role(&admin, &[], wide).await.unwrap();
    let extended = Role::new("acme", "wide", vec![everywhere.clone(), dev.clone()]);
    store
        .update_role(&ana, &ana_roles, extended, 1)
        .await
        .unwrap();
    let stripped = Role::new("acme", "wide", vec![dev]);
    let refused = store.update_role(&ana, &ana_roles, stripped, 2).await;
    assert!(matches!(refused, Err(UpdateRoleError::Refused(_))));
    let refused = store.delete_role(&ana, &ana_roles, "acme", "wide", 2).await;
    assert!(matches!(refused, Err(DeleteRoleError::Refused(_))));
}

async fn a_disabled_role_allows_nothing_until_enabled(records: Arc<dyn RecordStore>) {
    let store = AuthzStore::new(records);
    let admin = tenant_admin("acme");
    let ana = user("acme", "ana");
    let mut role = Role::new("acme", "reader", reader_of(lake()));
    role.disabled = true;
    store.create_role(&admin, &[], role.clone()).await.unwrap();
    store
        .bind(&admin, &[], "acme", "reader", &ana.id)
        .await
        .unwrap();
    let request = Request::new(Privilege::Read, ns(&["a"])).at("main");
    let roles = store.roles_of(&ana).await.unwrap();
    assert_eq!(roles.len(), 1);
    assert!(!decide(&ana, &roles, &request).is_allowed());

    // Enabling gives every grant again, so it needs what granting them needs.
    role.disabled = false;
    let bo = user("acme", "bo");
    let bo_roles = vec![Role::new(
        "acme",
        "grants",
        vec![Grant::new(Privilege::ManageGrants, lake())],
    )];
    let refused = store.update_role(&bo, &bo_roles, role.clone(), 1).await;
    assert!(matches!(refused, Err(UpdateRoleError::Refused(_))));
    store.update_role(&admin, &[], role, 1).await.unwrap();
    let roles = store.roles_of(&ana).await.unwrap();
    assert!(decide(&ana, &roles, &request).is_allowed());
}

/// A record store where another writer changes a record between a caller's read and its
/// write: the first put to `key` is preceded by a put of `rival` at the same version.
struct RacingRecords {
    inner: Arc<dyn RecordStore>,
    key: String,
    rival: Bytes,
    raced: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl RecordStore for RacingRecords {
    async fn get_record(
        &self,
        key: &RecordKey,
    ) -> Result<Option<pangolin_records::Record>, BackendError> {
        self.inner.get_record(key).await
    }

    async fn put_record(
        &self,
        key: &RecordKey,
        expected: ExpectedVersion,
        value: Bytes,
    ) -> Result<u64, RecordError> {
        if key.as_str() == self.key && !self.raced.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.inner
                .put_record(key, expected, self.rival.clone())
                .await?;
        }
        self.inner.put_record(key, expected, value).await
    }

    async fn delete_record(&self, key: &RecordKey, version: u64) -> Result<(), RecordError> {
        self.inner.delete_record(key, version).await
    }

    async fn list_records(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<RecordPage, BackendError> {
        self.inner.list_records(prefix, after, limit).await
    }
}

async fn an_update_that_loses_the_race_after_reading_conflicts(records: Arc<dyn RecordStore>) {
    let admin = tenant_admin("acme");
    let plain = AuthzStore::new(records.clone());
    plain
        .create_role(&admin, &[], Role::new("acme", "team", vec![]))
        .await
        .unwrap();
    let rival = Role::new("acme", "team", reader_of(ns(&["rival"])));
    let racing = AuthzStore::new(Arc::new(RacingRecords {
        inner: records,
        key: "authz/acme/roles/team".into(),
        rival: Bytes::from(serde_json::to_vec(&rival).unwrap()),
        raced: false.into(),
    }));
    let mine = Role::new("acme", "team", reader_of(ns(&["mine"])));
    let lost = racing.update_role(&admin, &[], mine, 1).await;
    assert!(
        matches!(
            lost,
            Err(UpdateRoleError::Conflict {
                expected: 1,
                actual: Some(2),
                ..
            })
        ),
        "{lost:?}"
    );
    let stored = plain.get_role("acme", "team").await.unwrap().unwrap();
    assert_eq!(stored.role, rival);
    assert_eq!(stored.version, 2);
}
