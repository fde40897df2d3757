//! Laws of the decision function, anti-escalation and branch patterns, over random roles and
//! requests in a small world (two tenants, two catalogs, short namespaces) where grants and
//! requests often meet.
#![allow(clippy::unwrap_used)]

use pangolin_catalog::authz::{
    BranchPattern, Grant, Principal, PrincipalKind, Privilege, Request, Resource, Role, decide,
    may_grant,
};
use proptest::prelude::*;

const TENANTS: [&str; 2] = ["acme", "globex"];
const BRANCHES: [&str; 8] = [
    "main",
    "dev",
    "dev-ana",
    "devx",
    "release/1",
    "release/2",
    "feature/a",
    "d",
];
const PREFIXES: [&str; 7] = ["", "d", "dev", "dev-", "release/", "rel", "feature/"];

fn privilege() -> impl Strategy<Value = Privilege> {
    prop::sample::select(Privilege::ALL.to_vec())
}

fn levels() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(prop::sample::select(vec!["a", "b"]), 1..=3)
        .prop_map(|l| l.into_iter().map(String::from).collect())
}

fn resource_in(tenant: &'static str) -> impl Strategy<Value = Resource> {
    let catalog = || prop::sample::select(vec!["lake", "sea"]);
    prop_oneof![
        Just(Resource::tenant(tenant)),
        catalog().prop_map(move |c| Resource::catalog(tenant, c)),
        (catalog(), levels()).prop_map(move |(c, l)| Resource::namespace(tenant, c, l)),
        (catalog(), levels(), prop::sample::select(vec!["t", "u"]))
            .prop_map(move |(c, l, n)| Resource::table(tenant, c, l, n)),
    ]
}

fn resource() -> impl Strategy<Value = Resource> {
    prop_oneof![resource_in("acme"), resource_in("globex")]
}

fn pattern() -> impl Strategy<Value = BranchPattern> {
    prop_oneof![
        prop::sample::select(BRANCHES.to_vec()).prop_map(|b| BranchPattern::parse(b).unwrap()),
        prop::sample::select(PREFIXES.to_vec())
            .prop_map(|p| BranchPattern::parse(&format!("{p}*")).unwrap()),
    ]
}

fn grant() -> impl Strategy<Value = Grant> {
    (privilege(), resource(), pattern()).prop_map(|(p, r, b)| Grant::new(p, r).at(b))
}

fn grant_in(tenant: &'static str) -> impl Strategy<Value = Grant> {
    (privilege(), resource_in(tenant), pattern()).prop_map(|(p, r, b)| Grant::new(p, r).at(b))
}

/// Mostly roles of acme, sometimes of globex; grants mostly in the role's tenant.
fn role() -> impl Strategy<Value = Role> {
    let grants = prop::collection::vec(prop_oneof![4 => grant_in("acme"), 1 => grant()], 0..5);
    (
        prop::sample::select(vec!["acme", "acme", "acme", "globex"]),
        grants,
        prop::bool::weighted(0.1),
    )
        .prop_map(|(tenant, grants, disabled)| {
            let mut role = Role::new(tenant, "r", grants);
            role.disabled = disabled;
            role
        })
}

fn roles() -> impl Strategy<Value = Vec<Role>> {
    prop::collection::vec(role(), 0..4)
}

fn principal() -> impl Strategy<Value = Principal> {
    (
        prop::sample::select(vec![Some("acme"), Some("acme"), Some("globex"), None]),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(tenant, is_admin)| Principal {
            id: format!("user:{}/p", tenant.unwrap_or("root")),
            tenant: tenant.map(String::from),
            kind: PrincipalKind::User,
            is_admin,
            groups: Vec::new(),
        })
}

fn member_of(tenant: &str) -> Principal {
    Principal {
        id: format!("user:{tenant}/member"),
        tenant: Some(tenant.into()),
        kind: PrincipalKind::Service,
        is_admin: false,
        groups: Vec::new(),
    }
}

fn request() -> impl Strategy<Value = Request> {
    (
        privilege(),
        resource(),
        prop::option::weighted(0.9, prop::sample::select(BRANCHES.to_vec())),
    )
        .prop_map(|(privilege, resource, branch)| Request {
            privilege,
            resource,
            branch: branch.map(String::from),
        })
}

/// Requests a grant allows, or nearly: same privilege, a resource at or below the grant's
/// (or anywhere), a branch the pattern may match.
fn request_near(grant: &Grant) -> impl Strategy<Value = Request> + use<> {
    let privilege = grant.privilege;
    let tenant = grant.resource.tenant_name().to_owned();
    let under = resource_in(if tenant == "acme" { "acme" } else { "globex" });
    let prefix = match &grant.branches {
        BranchPattern::Prefix(p) => p.clone(),
        BranchPattern::Exact(name) => name.to_string(),
    };
    let branch = prop_oneof![
        Just(Some(prefix.clone())),
        Just(Some(format!("{prefix}x"))),
        prop::sample::select(BRANCHES.to_vec()).prop_map(|b| Some(b.to_owned())),
        Just(None),
    ];
    (prop_oneof![Just(grant.resource.clone()), under], branch).prop_map(
        move |(resource, branch)| Request {
            privilege,
            resource,
            branch,
        },
    )
}

/// A glob with `*` anywhere, matched the slow obvious way.
fn naive_glob(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| naive_glob(rest, &name[i..])),
        Some((c, rest)) => name.first() == Some(c) && naive_glob(rest, &name[1..]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn empty_grants_deny_everything(
        principal in principal(),
        request in request(),
        role_count in 0usize..3,
    ) {
        prop_assume!(!principal.is_admin);
        let empty: Vec<Role> = (0..role_count).map(|_| Role::new("acme", "r", vec![])).collect();
        prop_assert!(!decide(&principal, &empty, &request).is_allowed());
    }

    #[test]
    fn adding_a_grant_never_removes_an_allowed_request(
        principal in principal(),
        mut roles in roles(),
        extra in grant(),
        into in any::<prop::sample::Index>(),
        request in request(),
    ) {
        let before = decide(&principal, &roles, &request).is_allowed();
        if roles.is_empty() {
            roles.push(Role::new("acme", "r", vec![extra]));
        } else {
            let i = into.index(roles.len());
            roles[i].grants.push(extra);
        }
        let after = decide(&principal, &roles, &request).is_allowed();
        prop_assert!(!before || after);
    }

    #[test]
    fn nobody_but_root_is_allowed_outside_its_tenant(
        principal in principal(),
        roles in roles(),
        request in request(),
    ) {
        prop_assume!(!principal.is_root());
        if decide(&principal, &roles, &request).is_allowed() {
            prop_assert_eq!(principal.tenant.as_deref(), Some(request.resource.tenant_name()));
        }
    }

    #[test]
    fn a_grant_allows_nothing_in_another_tenant(
        grant in grant(),
        role_tenant in prop::sample::select(TENANTS.to_vec()),
        member_tenant in prop::sample::select(TENANTS.to_vec()),
        request in request(),
    ) {
        let roles = vec![Role::new(role_tenant, "r", vec![grant.clone()])];
        if decide(&member_of(member_tenant), &roles, &request).is_allowed() {
            prop_assert_eq!(request.resource.tenant_name(), grant.resource.tenant_name());
            prop_assert_eq!(request.resource.tenant_name(), role_tenant);
            prop_assert_eq!(request.resource.tenant_name(), member_tenant);
        }
    }

    #[test]
    fn whatever_a_grant_allows_its_granter_was_allowed(
        (granted, requests, manage, held) in grant_in("acme").prop_flat_map(|g| {
            let requests = prop::collection::vec(request_near(&g), 1..8);
            // Often give the granter what may_grant asks for, sometimes on a wider resource
            // or branch pattern, sometimes something unrelated.
            let nearby = || prop_oneof![
                Just(Resource::tenant("acme")),
                Just(g.resource.clone()),
                resource_in("acme"),
            ];
            let patterns = prop_oneof![Just(g.branches.clone()), Just(BranchPattern::any()), pattern()];
            let (manage, held) = (prop::option::of(nearby()), prop::option::of((nearby(), patterns)));
            (Just(g), requests, manage, held)
        }),
        granter in principal(),
        mut granter_roles in roles(),
    ) {
        let mut extra = Vec::new();
        if let Some(resource) = manage {
            extra.push(Grant::new(Privilege::ManageGrants, resource));
        }
        if let Some((resource, branches)) = held {
            extra.push(Grant::new(granted.privilege, resource).at(branches));
        }
        granter_roles.push(Role::new("acme", "m", extra));
        if may_grant(&granter, &granter_roles, &granted).is_ok() {
            let grantee = member_of("acme");
            let grantee_roles = vec![Role::new("acme", "given", vec![granted])];
            for request in requests {
                if decide(&grantee, &grantee_roles, &request).is_allowed() {
                    prop_assert!(
                        decide(&granter, &granter_roles, &request).is_allowed(),
                        "granter may not {:?}", request
                    );
                }
            }
        }
    }

    #[test]
    fn pattern_matching_agrees_with_a_naive_glob(
        text in prop_oneof!["[abd-]{1,4}", "[abd-]{0,3}\\*"],
        name in "[abd-]{1,5}",
    ) {
        let pattern = BranchPattern::parse(&text).unwrap();
        prop_assert_eq!(pattern.matches(&name), naive_glob(text.as_bytes(), name.as_bytes()));
    }

    #[test]
    fn pattern_coverage_agrees_with_a_naive_matcher(
        outer in prop_oneof!["[abd-]{1,4}", "[abd-]{0,3}\\*"],
        inner in prop_oneof!["[abd-]{1,4}", "[abd-]{0,3}\\*"],
        names in prop::collection::vec("[abd-]{1,6}", 0..16),
    ) {
        let (p, q) = (BranchPattern::parse(&outer).unwrap(), BranchPattern::parse(&inner).unwrap());
        // Names `inner` matches: random ones, and the witnesses that decide coverage.
        let stem = inner.trim_end_matches('*');
        let witnesses = [stem.to_owned(), format!("{stem}a"), format!("{stem}b")];
        let matched: Vec<&String> = names
            .iter()
            .chain(&witnesses)
            .filter(|n| !n.is_empty() && naive_glob(inner.as_bytes(), n.as_bytes()))
            .collect();
        let naive_covers = matched.iter().all(|n| naive_glob(outer.as_bytes(), n.as_bytes()));
        prop_assert_eq!(p.covers(&q), naive_covers, "{} covers {}?", outer, inner);
    }
}
