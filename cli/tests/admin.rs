//! `pangolin admin` with the real binary against a real server that requires sign-in: root
//! creates a tenant with its administrator, who signs in and sets up warehouses, catalogs,
//! users, a service user with an API key and a role; the key then lists catalogs.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Run, Secured, secured};
use serde_json::Value;

const ANA_PASSWORD: &str = "ana's long passphrase";
const BOB_PASSWORD: &str = "bob's long passphrase";

impl Secured {
    /// The client as `profile`, with a variable set.
    fn as_profile(&self, profile: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--profile", profile]);
        self.run_with(&all, env, None)
    }

    /// Root signs in, creates tenant `acme` with administrator `ana`, and ana signs in as
    /// profile `acme`.
    fn tenant_acme(&self) {
        self.login_root();
        let created = self
            .run_with(
                &["admin", "tenant", "create", "acme", "--admin", "ana"],
                &[("PANGOLIN_ADMIN_PASSWORD", ANA_PASSWORD)],
                None,
            )
            .success();
        assert!(
            created
                .stdout
                .starts_with("Created tenant acme with administrator ana"),
            "{created:?}"
        );
        self.run_with(
            &[
                "login",
                "--tenant",
                "acme",
                "--user",
                "ana",
                "--profile",
                "acme",
            ],
            &[("PANGOLIN_PASSWORD", ANA_PASSWORD)],
            None,
        )
        .success();
    }
}

fn names(list: &Value, field: &str, name: &str) -> Vec<String> {
    list[field]
        .as_array()
        .unwrap_or_else(|| panic!("no `{field}` in {list}"))
        .iter()
        .map(|item| item[name].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn root_creates_a_tenant_whose_administrator_signs_in() {
    let s = secured();
    s.tenant_acme();
    let tenants = s
        .run(&["admin", "tenant", "list", "--json"])
        .success()
        .json();
    assert!(
        names(&tenants, "tenants", "name").contains(&"acme".to_owned()),
        "{tenants}"
    );
    let listed = s.run(&["admin", "tenant", "list"]).success();
    assert!(
        listed.stdout.starts_with("NAME") && listed.stdout.contains("acme"),
        "{listed:?}"
    );
    let shown = s.run(&["admin", "tenant", "show", "acme"]).success();
    assert!(
        shown.stdout.contains("name:") && shown.stdout.contains("acme"),
        "{shown:?}"
    );
    let again = s.run(&["admin", "tenant", "create", "acme"]).fails_with(1);
    assert!(again.stderr.contains("acme"), "{again:?}");
    let weak = s
        .run_with(
            &["admin", "tenant", "create", "beta", "--admin", "bo"],
            &[("PANGOLIN_ADMIN_PASSWORD", "short")],
            None,
        )
        .fails_with(2);
    assert!(weak.stderr.contains("password"), "{weak:?}");
    s.run(&["admin", "tenant", "show", "beta"]).fails_with(3);

    let whoami = s.as_profile("acme", &["whoami"], &[]).success();
    assert!(
        whoami.stdout.contains("user:acme/ana") && whoami.stdout.contains("tenant administrator"),
        "{whoami:?}"
    );
    // A tenant's administrator is no root.
    let refused = s
        .as_profile("acme", &["admin", "tenant", "list"], &[])
        .fails_with(5);
    assert!(refused.stderr.contains("not allowed"), "{refused:?}");
    s.as_profile("acme", &["admin", "tenant", "delete", "acme"], &[])
        .fails_with(5);

    s.run(&["admin", "tenant", "delete", "acme"]).success();
    s.run(&["admin", "tenant", "show", "acme"]).fails_with(3);
}

#[test]
fn a_service_users_key_lists_the_catalogs_its_role_may_read() {
    let s = secured();
    s.tenant_acme();
    let acme = |args: &[&str]| s.as_profile("acme", args, &[]);
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().to_str().unwrap();

    acme(&["admin", "warehouse", "create", "lake", "--root", root_path]).success();
    let warehouses = acme(&["admin", "warehouse", "list", "--json"])
        .success()
        .json();
    assert_eq!(names(&warehouses, "warehouses", "name"), ["lake"]);
    let shown = acme(&["admin", "warehouse", "show", "lake"]).success();
    assert!(shown.stdout.contains("local"), "{shown:?}");
    acme(&["admin", "catalog", "create", "sales", "--warehouse", "lake"]).success();
    acme(&["admin", "catalog", "create", "sales", "--warehouse", "lake"]).fails_with(1);
    acme(&["admin", "catalog", "create", "hr", "--warehouse", "nowhere"]).fails_with(3);
    let catalogs = acme(&["admin", "catalog", "list"]).success();
    assert!(
        catalogs.stdout.contains("sales") && catalogs.stdout.contains("lake"),
        "{catalogs:?}"
    );
    // Root's default tenant does not see acme's catalog.
    let roots = s.run(&["catalogs", "--json"]).success().json();
    assert!(
        !names(&roots, "catalogs", "name").contains(&"sales".to_owned()),
        "{roots}"
    );

    acme(&["admin", "service-user", "create", "etl"]).success();
    let services = acme(&["admin", "service-user", "list", "--json"])
        .success()
        .json();
    assert_eq!(names(&services, "service-users", "name"), ["etl"]);
    let created = acme(&["admin", "key", "create", "etl"]).success();
    let key = created
        .stdout
        .split_whitespace()
        .find(|w| w.starts_with("pgl_"))
        .unwrap_or_else(|| panic!("no key printed: {created:?}"))
        .to_owned();
    let keys = acme(&["admin", "key", "list", "etl", "--json"]).success();
    let secret = key.rsplit('_').next().unwrap();
    assert!(
        !keys.stdout.contains(secret),
        "lists never show a secret: {keys:?}"
    );
    let key_ids = names(&keys.json(), "keys", "id");
    assert_eq!(key_ids.len(), 1, "{keys:?}");

    // The key works and is the service user's; without a role it sees no catalog.
    let whoami = s.run(&["whoami", "--api-key", &key]).success();
    assert!(whoami.stdout.contains("service:acme/etl"), "{whoami:?}");
    let none = s
        .run(&["catalogs", "--api-key", &key, "--json"])
        .success()
        .json();
    assert!(names(&none, "catalogs", "name").is_empty(), "{none}");

    acme(&[
        "admin",
        "role",
        "create",
        "readers",
        "--grant",
        "read:catalog:sales",
    ])
    .success();
    acme(&["admin", "role", "add-member", "readers", "service:acme/etl"]).success();
    let role = acme(&["admin", "role", "show", "readers"]).success();
    assert!(
        role.stdout.contains("read:catalog:sales") && role.stdout.contains("service:acme/etl"),
        "{role:?}"
    );
    let listed = s
        .run_with(&["catalogs"], &[("PANGOLIN_API_KEY", key.as_str())], None)
        .success();
    assert!(listed.stdout.contains("sales"), "{listed:?}");
    // Saved in a profile by `login --api-key`, too.
    s.run(&[
        "login",
        "--api-key",
        &key,
        "--profile",
        "etl",
        "--catalog",
        "sales",
    ])
    .success();
    let branches = s.as_profile("etl", &["branch", "list"], &[]).success();
    assert!(branches.stdout.contains("main"), "{branches:?}");

    // Grants change through the role, at the version read.
    acme(&[
        "admin",
        "role",
        "grant",
        "readers",
        "read:namespace:sales.public@main",
    ])
    .success();
    let role = acme(&["admin", "role", "show", "readers", "--json"])
        .success()
        .json();
    assert_eq!(role["grants"].as_array().unwrap().len(), 2, "{role}");
    acme(&["admin", "role", "revoke", "readers", "read:catalog:sales"]).success();
    acme(&["admin", "role", "revoke", "readers", "read:catalog:sales"]).fails_with(3);
    acme(&["admin", "role", "create", "bad", "--grant", "read:bucket:x"]).fails_with(2);
    // Nobody grants what it does not hold: etl holds nothing to grant.
    s.run(&["admin", "role", "list", "--api-key", &key])
        .fails_with(5);

    // A rotated key is printed once; a revoked key is refused.
    let rotated = acme(&["admin", "key", "rotate", "etl", &key_ids[0], "--json"])
        .success()
        .json();
    let new_key = rotated["key"].as_str().unwrap().to_owned();
    assert_ne!(new_key, key);
    let new_id = rotated["id"].as_str().unwrap().to_owned();
    acme(&["admin", "key", "revoke", "etl", &new_id]).success();
    s.run(&["whoami", "--api-key", &new_key]).fails_with(5);

    acme(&[
        "admin",
        "role",
        "remove-member",
        "readers",
        "service:acme/etl",
    ])
    .success();
    acme(&["admin", "role", "delete", "readers"]).success();
    acme(&["admin", "service-user", "delete", "etl"]).success();
    acme(&["admin", "catalog", "delete", "sales"]).success();
    acme(&["admin", "warehouse", "delete", "lake"]).success();
    let empty = acme(&["admin", "warehouse", "list"]).success();
    assert_eq!(empty.stdout.trim(), "None.");
}

#[test]
fn users_are_created_disabled_enabled_reset_and_deleted() {
    let s = secured();
    s.tenant_acme();
    let acme = |args: &[&str], env: &[(&str, &str)]| s.as_profile("acme", args, env);
    let bob_login = |password: &str| {
        s.run_with(
            &[
                "login",
                "--tenant",
                "acme",
                "--user",
                "bob",
                "--profile",
                "bob",
            ],
            &[("PANGOLIN_PASSWORD", password)],
            None,
        )
    };
    acme(
        &["admin", "user", "create", "bob"],
        &[("PANGOLIN_NEW_PASSWORD", BOB_PASSWORD)],
    )
    .success();
    acme(
        &["admin", "user", "create", "bob"],
        &[("PANGOLIN_NEW_PASSWORD", BOB_PASSWORD)],
    )
    .fails_with(1);
    acme(
        &["admin", "user", "create", "carl"],
        &[("PANGOLIN_NEW_PASSWORD", "short")],
    )
    .fails_with(2);
    let users = acme(&["admin", "user", "list", "--json"], &[])
        .success()
        .json();
    let mut listed = names(&users, "users", "username");
    listed.sort();
    assert_eq!(listed, ["ana", "bob"], "{users}");
    bob_login(BOB_PASSWORD).success();
    // bob is no administrator.
    s.as_profile("bob", &["admin", "user", "list"], &[])
        .fails_with(5);

    acme(&["admin", "user", "disable", "bob"], &[]).success();
    bob_login(BOB_PASSWORD).fails_with(5);
    s.as_profile("bob", &["whoami"], &[]).fails_with(5);
    acme(&["admin", "user", "enable", "bob"], &[]).success();
    bob_login(BOB_PASSWORD).success();

    // Nothing on standard input: no password, nothing changed.
    acme(
        &["admin", "user", "reset-password", "bob", "--password-stdin"],
        &[],
    )
    .fails_with(2);
    let reset = s.run_with(
        &[
            "admin",
            "user",
            "reset-password",
            "bob",
            "--password-stdin",
            "--profile",
            "acme",
        ],
        &[],
        Some("bob's newer passphrase\n"),
    );
    reset.success();
    bob_login(BOB_PASSWORD).fails_with(5);
    bob_login("bob's newer passphrase").success();

    acme(&["admin", "user", "delete", "bob"], &[]).success();
    acme(&["admin", "user", "delete", "bob"], &[]).fails_with(3);
}

#[test]
fn admin_help_pages_have_examples_and_exit_codes() {
    let config = tempfile::tempdir().unwrap();
    for command in [
        &["admin", "--help"][..],
        &["admin", "tenant", "--help"],
        &["admin", "tenant", "create", "--help"],
        &["admin", "warehouse", "create", "--help"],
        &["admin", "catalog", "--help"],
        &["admin", "user", "--help"],
        &["admin", "service-user", "--help"],
        &["admin", "key", "--help"],
        &["admin", "key", "rotate", "--help"],
        &["admin", "role", "--help"],
        &["admin", "role", "grant", "--help"],
    ] {
        let help = common::pangolin(config.path(), None, command).success();
        assert!(
            help.stdout.contains("Examples:\n  pangolin ") && help.stdout.contains("Exit codes:"),
            "{command:?}: {}",
            help.stdout
        );
    }
}
