//! `pangolin remote`, `clone`, `fetch`, `push` and `pull` with the real binary between two
//! servers that require sign-in: the remote server is signed in to with the profile saved for
//! its URL (or the one named), never with the local server's token, and failures exit with
//! their codes and one line.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{ROOT_PASSWORD, Run, http_as, pangolin, pangolin_with, start_anywhere_with};
use serde_json::Value;

/// The client with `config`, against `server` as profile `profile`.
fn on(config: &Path, server: &str, profile: &str, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.extend(["--profile", profile]);
    pangolin(config, Some(server), &all)
}

fn login(config: &Path, server: &str, profile: &str) {
    pangolin_with(
        config,
        Some(server),
        &["login", "--user", "root", "--profile", profile],
        &[("PANGOLIN_PASSWORD", ROOT_PASSWORD)],
        None,
    )
    .success();
}

fn token(config: &Path, profile: &str) -> String {
    let text = std::fs::read_to_string(config.join("profiles.toml")).unwrap();
    let file: toml::Table = toml::from_str(&text).unwrap();
    file["profiles"][profile]["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn refs(port: u16, token: &str) -> Value {
    let (status, body) = http_as(
        port,
        Some(token),
        "GET",
        "/api/v1/catalogs/default/refs",
        None,
    );
    assert_eq!(status, 200, "{body}");
    let mut refs: Value = serde_json::from_str(&body).unwrap();
    refs["refs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .for_each(|r| {
            // Divergence from main differs per catalog only in what each holds.
            r.as_object_mut()
                .unwrap()
                .retain(|k, _| k != "ahead" && k != "behind");
        });
    refs
}

#[test]
fn clone_fetch_and_push_between_signed_in_servers() {
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_a, port_a) = start_anywhere_with(data_a.path(), Some(ROOT_PASSWORD));
    let (_b, port_b) = start_anywhere_with(data_b.path(), Some(ROOT_PASSWORD));
    let (a, b) = (
        format!("http://127.0.0.1:{port_a}"),
        format!("http://127.0.0.1:{port_b}"),
    );
    let config = tempfile::tempdir().unwrap();
    let config = config.path();
    login(config, &a, "a");
    login(config, &b, "b");
    let token_a = token(config, "a");
    let (status, body) = http_as(
        port_a,
        Some(&token_a),
        "POST",
        "/v1/default/namespaces",
        Some(r#"{"namespace": ["sales"]}"#),
    );
    assert_eq!(status, 200, "{body}");
    on(config, &a, "a", &["branch", "create", "dev"]).success();

    // B clones A, signed in to A with profile `a`, the one saved for A's URL.
    let cloned = on(config, &b, "b", &["clone", &a, "--from", "default"]).success();
    assert!(
        cloned.stdout.starts_with("Cloned catalog default"),
        "{cloned:?}"
    );
    assert_eq!(refs(port_b, &token(config, "b")), refs(port_a, &token_a));
    let shown = on(config, &b, "b", &["remote", "show", "origin", "--json"]).success();
    assert_eq!(shown.json()["url"], Value::String(a.clone()));

    // Naming a profile of another server for the remote is refused before any request.
    let wrong = on(
        config,
        &b,
        "b",
        &["fetch", "origin", "--remote-profile", "b"],
    )
    .fails_with(2);
    assert!(wrong.stderr.contains("not signed in to"), "{wrong:?}");

    // B commits and pushes dev; A's dev moves to B's.
    let token_b = token(config, "b");
    let (status, body) = http_as(
        port_b,
        Some(&token_b),
        "POST",
        "/v1/default%40dev/namespaces",
        Some(r#"{"namespace": ["marketing"]}"#),
    );
    assert_eq!(status, 200, "{body}");
    let pushed = on(config, &b, "b", &["push", "origin", "dev", "--json"]).success();
    assert_eq!(pushed.json()["result"], "fast-forward", "{pushed:?}");
    let dev_a = on(config, &a, "a", &["branch", "list", "--json"]).success();
    let dev_b = on(config, &b, "b", &["branch", "list", "--json"]).success();
    let head = |run: &Run| {
        run.json()["refs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "dev")
            .unwrap()["hash"]
            .clone()
    };
    assert_eq!(head(&dev_a), head(&dev_b));

    // A client with no profile for A cannot read from it: A refuses, nothing changes on B.
    let only_b = tempfile::tempdir().unwrap();
    login(only_b.path(), &b, "b");
    let refused = on(only_b.path(), &b, "b", &["fetch", "origin"]).fails_with(5);
    assert!(refused.stderr.contains("not signed in"), "{refused:?}");

    // Bad input and unknown names exit with their codes.
    on(config, &b, "b", &["remote", "add", "up", "ftp://x"]).fails_with(2);
    on(config, &b, "b", &["remote", "add", "origin", &a]).fails_with(1);
    on(config, &b, "b", &["fetch", "nowhere"]).fails_with(3);
    on(config, &b, "b", &["push", "origin", "no-such-branch"]).fails_with(3);
    on(config, &b, "b", &["pull", "origin", "no-such-branch"]).fails_with(3);
    on(config, &b, "b", &["remote", "remove", "origin"]).success();
    on(config, &b, "b", &["remote", "show", "origin"]).fails_with(3);
}

#[test]
fn help_pages_of_the_remote_commands_have_examples_and_exit_codes() {
    let config = tempfile::tempdir().unwrap();
    for command in [
        &["remote", "--help"][..],
        &["fetch", "--help"],
        &["push", "--help"],
        &["pull", "--help"],
        &["clone", "--help"],
    ] {
        let help = pangolin(config.path(), None, command).success();
        assert!(
            help.stdout.contains("Examples:\n  pangolin ") && help.stdout.contains("3 not found"),
            "{command:?}: {}",
            help.stdout
        );
    }
}
