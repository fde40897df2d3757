//! The decision function, case by case: deny by default, containers, branch patterns, tenant
//! isolation, admins, and roles that must not count.
#![allow(clippy::unwrap_used)]

use pangolin_catalog::authz::{
    BranchPattern, BranchPatternError, Decision, DenyReason, Grant, GrantRefusal, Principal,
    PrincipalKind, Privilege, Request, Resource, Role, RoleError, decide, decide_any,
    filter_visible, may_bind, may_grant, principal_id_tenant,
};

fn pattern(p: &str) -> BranchPattern {
    BranchPattern::parse(p).unwrap()
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

fn admin(tenant: Option<&str>) -> Principal {
    Principal {
        id: "user:admin".into(),
        tenant: tenant.map(Into::into),
        kind: PrincipalKind::User,
        is_admin: true,
        groups: Vec::new(),
    }
}

fn ns(levels: &[&str]) -> Resource {
    Resource::namespace("acme", "lake", levels.iter().copied())
}

fn table(levels: &[&str], name: &str) -> Resource {
    Resource::table("acme", "lake", levels.iter().copied(), name)
}

fn lake() -> Resource {
    Resource::catalog("acme", "lake")
}

/// The roles the cases bind by name.
fn roles() -> Vec<Role> {
    let mut disabled = Role::new(
        "acme",
        "disabled",
        vec![Grant::new(Privilege::Create, Resource::tenant("acme"))],
    );
    disabled.disabled = true;
    vec![
        Role::new(
            "acme",
            "reader",
            vec![Grant::new(Privilege::Read, ns(&["sales"]))],
        ),
        Role::new(
            "acme",
            "writer",
            vec![Grant::new(Privilege::Write, lake()).at(pattern("dev*"))],
        ),
        Role::new(
            "acme",
            "release",
            vec![Grant::new(Privilege::Write, lake()).at(pattern("main"))],
        ),
        Role::new(
            "acme",
            "dropper",
            vec![Grant::new(
                Privilege::Drop,
                table(&["sales", "eu"], "orders"),
            )],
        ),
        Role::new(
            "acme",
            "grants-on-a",
            vec![Grant::new(Privilege::ManageGrants, ns(&["a"])).at(pattern("main"))],
        ),
        disabled,
        // A role of another tenant, bound by mistake to a principal of acme.
        Role::new(
            "globex",
            "foreign",
            vec![Grant::new(Privilege::Read, Resource::tenant("globex"))],
        ),
        // A role of acme with a grant on globex that validation would refuse, stored anyway.
        Role::new(
            "acme",
            "smuggled",
            vec![Grant::new(Privilege::Read, Resource::tenant("globex"))],
        ),
    ]
}

fn bound(names: &[&str]) -> Vec<Role> {
    roles()
        .into_iter()
        .filter(|r| names.contains(&r.name.as_str()))
        .collect()
}

fn read(resource: Resource) -> Request {
    Request::new(Privilege::Read, resource).at("main")
}

fn write(resource: Resource, branch: &str) -> Request {
    Request::new(Privilege::Write, resource).at(branch)
}

#[test]
fn decision_table() {
    let ana = user("acme", "ana");
    let globex_orders = Resource::table("globex", "lake", ["sales"], "orders");
    #[rustfmt::skip]
    let cases: Vec<(&str, Principal, Vec<&str>, Request, bool)> = vec![
        ("no roles: deny by default", ana.clone(), vec![], read(lake()), false),
        ("roles that do not exist count for nothing", ana.clone(), vec!["ghost"], read(lake()), false),
        ("a grant on a namespace allows it", ana.clone(), vec!["reader"], read(ns(&["sales"])), true),
        ("and its sub-namespaces", ana.clone(), vec!["reader"], read(ns(&["sales", "eu"])), true),
        ("and tables beneath", ana.clone(), vec!["reader"], read(table(&["sales", "eu"], "orders")), true),
        ("but not its catalog (upward)", ana.clone(), vec!["reader"], read(lake()), false),
        ("nor a sibling namespace", ana.clone(), vec!["reader"], read(ns(&["marketing"])), false),
        ("nor a namespace whose name extends it", ana.clone(), vec!["reader"], read(ns(&["salesforce"])), false),
        ("nor the same namespace in another catalog", ana.clone(), vec!["reader"], read(Resource::namespace("acme", "sea", ["sales"])), false),
        ("nor another privilege (Write does not imply Read or back)", ana.clone(), vec!["reader"], write(ns(&["sales"]), "main"), false),
        ("a * grant allows a request at no branch", ana.clone(), vec!["reader"], Request::new(Privilege::Read, ns(&["sales"])), true),
        ("Write on dev* allows dev", ana.clone(), vec!["writer"], write(table(&["s"], "t"), "dev"), true),
        ("and dev-ana", ana.clone(), vec!["writer"], write(table(&["s"], "t"), "dev-ana"), true),
        ("but not protected main", ana.clone(), vec!["writer"], write(table(&["s"], "t"), "main"), false),
        ("nor release/1", ana.clone(), vec!["writer"], write(table(&["s"], "t"), "release/1"), false),
        ("nor a request at no branch", ana.clone(), vec!["writer"], Request::new(Privilege::Write, lake()), false),
        ("the release role may write main", ana.clone(), vec!["release"], write(table(&["s"], "t"), "main"), true),
        ("but not dev", ana.clone(), vec!["release"], write(table(&["s"], "t"), "dev"), false),
        ("roles add up", ana.clone(), vec!["writer", "release"], write(lake(), "main"), true),
        ("a table grant allows that table", ana.clone(), vec!["dropper"], Request::new(Privilege::Drop, table(&["sales", "eu"], "orders")).at("main"), true),
        ("not another table", ana.clone(), vec!["dropper"], Request::new(Privilege::Drop, table(&["sales", "eu"], "items")).at("main"), false),
        ("not its namespace", ana.clone(), vec!["dropper"], Request::new(Privilege::Drop, ns(&["sales", "eu"])).at("main"), false),
        ("privileges without branches ignore patterns", ana.clone(), vec!["grants-on-a"], Request::new(Privilege::ManageGrants, ns(&["a", "b"])).at("dev"), true),
        ("and need no branch", ana.clone(), vec!["grants-on-a"], Request::new(Privilege::ManageGrants, ns(&["a"])), true),
        ("a disabled role allows nothing", ana.clone(), vec!["disabled"], Request::new(Privilege::Create, lake()).at("main"), false),
        ("a role of another tenant allows nothing there", ana.clone(), vec!["foreign"], read(globex_orders.clone()), false),
        ("nor here", ana.clone(), vec!["foreign"], read(Resource::tenant("acme")), false),
        ("a grant on another tenant is ignored", ana.clone(), vec!["smuggled"], read(globex_orders.clone()), false),
        ("nothing outside one's tenant", ana.clone(), vec!["reader", "writer"], read(globex_orders.clone()), false),
        ("root may do everything", admin(None), vec![], write(globex_orders.clone(), "main"), true),
        ("the root scope without admin may do nothing", Principal { is_admin: false, ..admin(None) }, vec!["reader"], read(ns(&["sales"])), false),
        ("a tenant admin may do everything in its tenant", admin(Some("acme")), vec![], write(table(&["s"], "t"), "main"), true),
        ("and its tenant's grants and users", admin(Some("acme")), vec![], Request::new(Privilege::ManageUsers, Resource::tenant("acme")), true),
        ("but nothing in another", admin(Some("acme")), vec![], read(globex_orders.clone()), false),
        ("a tenant admin is no root", admin(Some("acme")), vec![], Request::new(Privilege::ManageCatalogs, Resource::tenant("globex")), false),
    ];
    let mut failures = Vec::new();
    for (name, principal, names, request, allowed) in cases {
        let decision = decide(&principal, &bound(&names), &request);
        if decision.is_allowed() != allowed {
            failures.push(format!("{name}: {request:?} gave {decision:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn denials_say_why() {
    let ana = user("acme", "ana");
    let other = read(Resource::tenant("globex"));
    assert!(matches!(
        decide(&ana, &[], &other),
        Decision::Deny(DenyReason::OtherTenant { .. })
    ));
    let Decision::Deny(reason) = decide(&ana, &[], &read(lake())) else {
        panic!("allowed with no roles");
    };
    assert_eq!(
        reason.to_string(),
        "no role of `user:acme/ana` grants read on `acme/lake` at `main`"
    );
}

#[test]
fn listings_show_what_leads_to_something_readable() {
    let ana = user("acme", "ana");
    let deep = vec![Role::new(
        "acme",
        "deep",
        vec![Grant::new(Privilege::Read, table(&["a", "b"], "t")).at(pattern("dev*"))],
    )];
    assert!(decide_any(&ana, &deep, &read(lake()).at("dev")).is_allowed());
    assert!(
        !decide_any(&ana, &deep, &read(lake())).is_allowed(),
        "not at main"
    );
    assert!(!decide(&ana, &deep, &read(ns(&["a"])).at("dev")).is_allowed());
    let visible = filter_visible(
        &ana,
        &deep,
        Privilege::Read,
        Some("dev"),
        vec![vec!["a"], vec!["c"], vec!["a", "b"], vec!["a", "x"]],
        |levels| ns(levels),
    );
    assert_eq!(visible, vec![vec!["a"], vec!["a", "b"]]);
    let outside = Resource::catalog("globex", "lake");
    assert!(!decide_any(&ana, &deep, &read(outside).at("dev")).is_allowed());
}

#[test]
fn branch_patterns_allow_only_a_trailing_star() {
    assert_eq!(pattern("*"), BranchPattern::any());
    assert_eq!(pattern("release/*").to_string(), "release/*");
    assert!(pattern("dev*").matches("dev"));
    assert!(!pattern("main").matches("main2"));
    assert!(matches!(
        BranchPattern::parse("re*lease"),
        Err(BranchPatternError::InnerStar(_))
    ));
    assert!(matches!(
        BranchPattern::parse("**"),
        Err(BranchPatternError::InnerStar(_))
    ));
    assert!(matches!(
        BranchPattern::parse(""),
        Err(BranchPatternError::InvalidName { .. })
    ));
    assert!(matches!(
        BranchPattern::parse("a..*"),
        Err(BranchPatternError::InvalidPrefix { .. })
    ));
    let err = BranchPattern::parse("*-dev").unwrap_err();
    assert!(err.to_string().contains("only one trailing `*`"), "{err}");
    let grant: Grant = serde_json::from_str(
        r#"{"privilege":"write","resource":{"kind":"catalog","tenant":"acme","catalog":"lake"},"branches":"dev*"}"#,
    )
    .unwrap();
    assert_eq!(
        grant,
        Grant::new(Privilege::Write, lake()).at(pattern("dev*"))
    );
    assert!(serde_json::from_str::<BranchPattern>(r#""d*v""#).is_err());
}

#[test]
fn roles_are_checked_when_stored() {
    let smuggled = bound(&["smuggled"]).remove(0);
    assert!(matches!(
        smuggled.validate(),
        Err(RoleError::OtherTenant { .. })
    ));
    assert!(matches!(
        Role::new("acme", "a/b", vec![]).validate(),
        Err(RoleError::BadName(_))
    ));
    let empty_ns = Role::new("acme", "r", vec![Grant::new(Privilege::Read, ns(&[]))]);
    assert!(matches!(
        empty_ns.validate(),
        Err(RoleError::BadResource { .. })
    ));
    assert!(
        bound(&["reader", "writer"])
            .iter()
            .all(|r| r.validate().is_ok())
    );
}

#[test]
fn principal_ids_name_their_tenant() {
    assert_eq!(principal_id_tenant("user:acme/ana").unwrap(), Some("acme"));
    assert_eq!(
        principal_id_tenant("service:acme/etl").unwrap(),
        Some("acme")
    );
    assert_eq!(principal_id_tenant("user:root").unwrap(), None);
    assert!(principal_id_tenant("acme/ana").is_err());
    assert!(principal_id_tenant("group:acme/x").is_err());
    assert_eq!(
        principal_id_tenant("group:acme/okta/eng").unwrap(),
        Some("acme")
    );
    assert_eq!(principal_id_tenant("oidc:~/corp/ops").unwrap(), None);
    assert_eq!(principal_id_tenant("group:~/corp/admins").unwrap(), None);
    assert!(principal_id_tenant("user:/ana").is_err());
    // People and groups of an identity provider: of a tenant or `~`, the rest taken as is.
    assert_eq!(
        principal_id_tenant("oidc:acme/okta/00u1%2Fab").unwrap(),
        Some("acme")
    );
    assert_eq!(
        principal_id_tenant("group:acme/okta/data engineers").unwrap(),
        Some("acme")
    );
    assert!(principal_id_tenant("oidc:acme/okta").is_err());
    assert!(principal_id_tenant("oidc:acme//sub").is_err());
    assert!(principal_id_tenant("group:/okta/g").is_err());
    assert!(principal_id_tenant("robot:acme/x").is_err());
}

#[test]
fn may_grant_needs_manage_grants_and_the_privilege_itself() {
    let ana = user("acme", "ana");
    let manager = vec![Role::new(
        "acme",
        "ns-manager",
        vec![
            Grant::new(Privilege::ManageGrants, ns(&["a"])),
            Grant::new(Privilege::Read, ns(&["a"])),
            Grant::new(Privilege::Write, lake()).at(pattern("dev*")),
        ],
    )];
    let ok = |g: Grant| may_grant(&ana, &manager, &g);
    assert_eq!(ok(Grant::new(Privilege::Read, ns(&["a", "b"]))), Ok(()));
    assert_eq!(ok(Grant::new(Privilege::Read, ns(&["a"]))), Ok(()));
    assert_eq!(
        ok(Grant::new(Privilege::Write, ns(&["a"])).at(pattern("dev-x*"))),
        Ok(())
    );
    assert!(matches!(
        ok(Grant::new(Privilege::Read, lake())),
        Err(GrantRefusal::NoManageGrants { .. })
    ));
    assert!(matches!(
        ok(Grant::new(Privilege::Read, ns(&["b"]))),
        Err(GrantRefusal::NoManageGrants { .. })
    ));
    assert!(matches!(
        ok(Grant::new(Privilege::Write, ns(&["a"]))),
        Err(GrantRefusal::NotHeld { .. })
    ));
    assert!(matches!(
        ok(Grant::new(Privilege::Write, ns(&["a"])).at(pattern("main"))),
        Err(GrantRefusal::NotHeld { .. })
    ));
    assert!(matches!(
        ok(Grant::new(Privilege::Drop, ns(&["a"]))),
        Err(GrantRefusal::NotHeld { .. })
    ));
    assert!(matches!(
        ok(Grant::new(Privilege::Read, Resource::tenant("globex"))),
        Err(GrantRefusal::OtherTenant { .. })
    ));
}

#[test]
fn only_root_grants_outside_its_tenant_or_to_the_root_scope() {
    let acme_admin = admin(Some("acme"));
    let globex_role = Role::new(
        "globex",
        "r",
        vec![Grant::new(Privilege::Read, Resource::tenant("globex"))],
    );
    let acme_role = Role::new(
        "acme",
        "r",
        vec![Grant::new(Privilege::Read, Resource::tenant("acme"))],
    );
    assert!(matches!(
        may_bind(&acme_admin, &[], &globex_role, "user:globex/bob"),
        Err(GrantRefusal::OtherTenant { .. })
    ));
    assert!(matches!(
        may_bind(&acme_admin, &[], &acme_role, "user:root"),
        Err(GrantRefusal::PrincipalOutsideTenant { .. })
    ));
    assert!(matches!(
        may_bind(&acme_admin, &[], &acme_role, "user:globex/bob"),
        Err(GrantRefusal::PrincipalOutsideTenant { .. })
    ));
    assert_eq!(
        may_bind(&acme_admin, &[], &acme_role, "user:acme/bob"),
        Ok(())
    );
    assert_eq!(
        may_bind(&admin(None), &[], &globex_role, "user:globex/bob"),
        Ok(())
    );
    let nobody = Principal {
        is_admin: false,
        groups: Vec::new(),
        ..admin(None)
    };
    assert!(matches!(
        may_grant(&nobody, &[], &acme_role.grants[0]),
        Err(GrantRefusal::RootScopeNotAdmin { .. })
    ));
}
