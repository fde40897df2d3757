//! Signing in with the real `pangolin` binary against a real server that requires it: login
//! (password and refusal), the private profile, token refresh, logout, whoami, and the audit
//! log the server keeps of it.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{ROOT_PASSWORD, http_as, pangolin, pangolin_with, secured, start_anywhere, text};

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn root_signs_in_with_a_password_into_a_private_profile() {
    let s = secured();
    let login = s.login_root();
    assert!(
        login.stdout.starts_with("Logged in to ") && login.stdout.contains("as user:~/root"),
        "{login:?}"
    );
    assert!(!login.stdout.contains(ROOT_PASSWORD) && !login.stderr.contains(ROOT_PASSWORD));
    let profile = s.profile();
    assert!(text(&profile, "token").is_some(), "{profile:?}");
    assert!(text(&profile, "refresh-token").is_some(), "{profile:?}");
    assert_eq!(text(&profile, "principal").as_deref(), Some("user:~/root"));
    let saved = std::fs::read_to_string(s.profile_file()).unwrap();
    assert!(
        !saved.contains(ROOT_PASSWORD),
        "the password is never saved"
    );
    #[cfg(unix)]
    assert_eq!(mode(&s.profile_file()), 0o600, "the profile holds tokens");

    let whoami = s.run(&["whoami"]).success();
    assert!(
        whoami.stdout.contains("user:~/root") && whoami.stdout.contains(", root"),
        "{whoami:?}"
    );
    let whoami = s.run(&["whoami", "--json"]).success().json();
    assert_eq!(whoami["root"], true, "{whoami}");
    let catalogs = s.run(&["catalogs", "--json"]).success().json();
    assert!(
        catalogs["catalogs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "default"),
        "{catalogs}"
    );
    let created = s.run(&["branch", "create", "dev"]).success();
    assert!(
        created.stdout.starts_with("Created branch dev"),
        "{created:?}"
    );

    // The password may come from standard input too, here through --password-stdin.
    let again = s.run_with(
        &["login", "--user", "root", "--password-stdin", "--json"],
        &[],
        Some(&format!("{ROOT_PASSWORD}\n")),
    );
    assert_eq!(again.success().json()["principal"], "user:~/root");
}

#[cfg(unix)]
#[test]
fn a_profile_file_others_may_read_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let s = secured();
    s.login_root();
    std::fs::set_permissions(s.profile_file(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let whoami = s.run(&["whoami"]).success();
    assert!(
        whoami.stderr.contains("was readable by others"),
        "{whoami:?}"
    );
    assert_eq!(mode(&s.profile_file()), 0o600);
}

#[test]
fn a_wrong_password_exits_5_and_saves_nothing() {
    let s = secured();
    let refused = s
        .run_with(
            &["login", "--user", "root", "--password-stdin"],
            &[],
            Some("not the password at all\n"),
        )
        .fails_with(5);
    assert!(
        refused.stderr.contains("sign-in refused for `root`")
            && refused.stderr.contains("invalid username or password"),
        "{refused:?}"
    );
    assert!(!s.profile_file().exists(), "nothing is saved");
    let unknown = s
        .run_with(
            &["login", "--tenant", "nowhere", "--user", "ana"],
            &[("PANGOLIN_PASSWORD", ROOT_PASSWORD)],
            None,
        )
        .fails_with(5);
    assert!(unknown.stderr.contains("`nowhere/ana`"), "{unknown:?}");

    // Logging in without a credential, or into a catalog that is not there, saves nothing.
    let bare = s.run(&["login"]).fails_with(5);
    assert!(bare.stderr.contains("requires sign-in"), "{bare:?}");
    s.run_with(
        &["login", "--user", "root", "--catalog", "nope"],
        &[("PANGOLIN_PASSWORD", ROOT_PASSWORD)],
        None,
    )
    .fails_with(3);
    assert!(!s.profile_file().exists(), "nothing is saved");

    // Without signing in, a command is refused with the way to sign in.
    let refused = s.run(&["catalogs"]).fails_with(5);
    assert!(refused.stderr.contains("pangolin login"), "{refused:?}");
    // An empty password is refused before asking the server.
    let empty = s
        .run_with(&["login", "--user", "root"], &[], Some("\n"))
        .fails_with(2);
    assert!(empty.stderr.contains("empty"), "{empty:?}");

    // The session opened for the unsaved login into `nope` was ended on the server.
    s.login_root();
    let ended = s
        .run(&["audit", "log", "--action", "auth.logout", "--json"])
        .success()
        .json();
    assert_eq!(ended["events"].as_array().unwrap().len(), 1, "{ended}");
}

#[test]
fn a_refused_access_token_is_refreshed_once_and_saved() {
    let s = secured();
    s.login_root();
    let before = s.profile();
    // A profile without its access token: the server refuses the request (401), the client
    // trades the refresh token for a new pair and sends the request again.
    s.set_profile(|p| {
        p.remove("token");
    });
    let catalogs = s.run(&["catalogs"]).success();
    assert!(catalogs.stdout.contains("default"), "{catalogs:?}");
    let after = s.profile();
    assert!(text(&after, "token").is_some(), "{after:?}");
    assert_ne!(
        text(&after, "refresh-token"),
        text(&before, "refresh-token"),
        "a refresh token is usable once: the new one is saved"
    );
    #[cfg(unix)]
    assert_eq!(mode(&s.profile_file()), 0o600);

    // The old refresh token was used up: with it, a refused token stays refused.
    s.set_profile(|p| {
        p.remove("token");
        p.insert(
            "refresh-token".into(),
            text(&before, "refresh-token").unwrap().into(),
        );
    });
    let refused = s.run(&["catalogs"]).fails_with(5);
    assert!(refused.stderr.contains("pangolin login"), "{refused:?}");
    assert_eq!(
        text(&s.profile(), "refresh-token"),
        None,
        "a refused refresh token is forgotten"
    );
}

#[test]
fn logout_revokes_the_tokens_and_later_calls_are_refused() {
    let s = secured();
    s.login_root();
    let token = text(&s.profile(), "token").unwrap();
    let out = s.run(&["logout"]).success();
    assert!(out.stdout.starts_with("Logged out of "), "{out:?}");
    let profile = s.profile();
    assert_eq!(text(&profile, "token"), None, "{profile:?}");
    assert_eq!(text(&profile, "refresh-token"), None, "{profile:?}");
    assert!(text(&profile, "server").is_some(), "the profile stays");
    let refused = s.run(&["catalogs"]).fails_with(5);
    assert!(refused.stderr.contains("not signed in"), "{refused:?}");
    // Revoked on the server, not only forgotten here.
    let (status, body) = http_as(s.port, Some(&token), "GET", "/api/v1/whoami", None);
    assert_eq!(status, 401, "{body}");
    let again = s.run(&["logout"]).success();
    assert!(again.stdout.contains("Not signed in"), "{again:?}");
}

#[test]
fn the_audit_log_shows_sign_ins_and_its_chain_verifies() {
    let s = secured();
    s.run_with(
        &["login", "--user", "root", "--password-stdin"],
        &[],
        Some("a wrong password!\n"),
    )
    .fails_with(5);
    s.login_root();
    let events = s
        .run(&["audit", "log", "--action", "auth.login", "--json"])
        .success()
        .json();
    let events = events["events"].as_array().unwrap();
    let outcomes: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["principal"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(outcomes.len(), 2, "{events:?}");
    assert!(
        outcomes.iter().all(|(who, _)| who.ends_with("root")),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes[0].1, "denied",
        "the wrong password first: {outcomes:?}"
    );
    assert_eq!(outcomes[1].1, "success", "{outcomes:?}");

    let people = s.run(&["audit", "log"]).success();
    assert!(
        people.stdout.starts_with("TIME") && people.stdout.contains("auth.login"),
        "{people:?}"
    );
    let one = s
        .run(&["audit", "log", "--limit", "1", "--json"])
        .success()
        .json();
    assert_eq!(one["events"].as_array().unwrap().len(), 1, "{one}");
    let none = s.run(&["audit", "log", "--from", "2999-01-01"]).success();
    assert_eq!(none.stdout.trim(), "No audit events.");
    s.run(&["audit", "log", "--until", "yesterday"])
        .fails_with(2);

    let verified = s.run(&["audit", "verify"]).success();
    assert!(verified.stdout.contains("intact"), "{verified:?}");
    let report = s.run(&["audit", "verify", "--json"]).success().json();
    assert_eq!(report["intact"], true, "{report}");
    assert!(report["checked"].as_u64().unwrap() >= 2, "{report}");
}

#[test]
fn a_server_without_authentication_needs_no_sign_in() {
    let data = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let (_server, port) = start_anywhere(data.path());
    let url = format!("http://127.0.0.1:{port}");
    let run = |args: &[&str]| pangolin(config.path(), Some(&url), args);
    let whoami = run(&["whoami", "--json"]).success().json();
    assert_eq!(whoami["root"], true, "{whoami}");
    run(&["catalogs"]).success();
    run(&["audit", "verify"]).success();
    let refused = pangolin_with(
        config.path(),
        Some(&url),
        &["login", "--user", "root"],
        &[("PANGOLIN_PASSWORD", ROOT_PASSWORD)],
        None,
    )
    .fails_with(2);
    assert!(
        refused.stderr.contains("without authentication"),
        "{refused:?}"
    );
    let out = run(&["logout"]).success();
    assert!(out.stdout.contains("Not signed in"), "{out:?}");
}

#[test]
fn help_pages_of_the_new_commands_have_examples_and_exit_codes() {
    let config = tempfile::tempdir().unwrap();
    for command in [
        &["login", "--help"][..],
        &["logout", "--help"],
        &["whoami", "--help"],
        &["audit", "--help"],
        &["audit", "log", "--help"],
        &["audit", "verify", "--help"],
    ] {
        let help = pangolin(config.path(), None, command).success();
        assert!(
            help.stdout.contains("Examples:\n  pangolin ")
                && help.stdout.contains("5 not signed in or not allowed"),
            "{command:?}: {}",
            help.stdout
        );
    }
    let top = pangolin(config.path(), None, &["--help"]).success();
    assert!(top.stdout.contains("5  not signed in"), "{}", top.stdout);
    assert!(top.stdout.contains("PANGOLIN_API_KEY"), "{}", top.stdout);
}
