//! The git-style client commands of the real `pangolin` binary against the real server:
//! output for people and for scripts (`--json`), exit codes, profiles.
#![allow(clippy::unwrap_used)]

mod common;

use common::setup::setup;
use common::{free_port, pangolin};
use serde_json::{Value, json};

fn is_short_hash(word: &str) -> bool {
    word.len() == 12 && word.chars().all(|c| c.is_ascii_hexdigit())
}

#[test]
fn help_explains_usage_with_examples_and_exit_codes() {
    let config = tempfile::tempdir().unwrap();
    let top = pangolin(config.path(), None, &["--help"]).success();
    for expected in [
        "Examples:",
        "pangolin merge dev --dry-run",
        "Exit codes:",
        "3  not found",
        "https is not supported yet",
        "PANGOLIN_SERVER",
    ] {
        assert!(top.stdout.contains(expected), "{expected}: {}", top.stdout);
    }
    for command in [
        &["login", "--help"][..],
        &["catalogs", "--help"],
        &["branch", "--help"],
        &["branch", "create", "--help"],
        &["tag", "--help"],
        &["log", "--help"],
        &["show", "--help"],
        &["diff", "--help"],
        &["ls", "--help"],
        &["merge", "--help"],
        &["cherry-pick", "--help"],
        &["revert", "--help"],
        &["mr", "--help"],
        &["webhook", "--help"],
    ] {
        let help = pangolin(config.path(), None, command).success();
        assert!(
            help.stdout.contains("Examples:\n  pangolin ") && help.stdout.contains("Exit codes:"),
            "{command:?}: {}",
            help.stdout
        );
    }
    let usage = pangolin(config.path(), None, &["branch", "create"]);
    assert_eq!(usage.code, 2, "a usage error: {usage:?}");
}

#[test]
fn login_saves_a_private_profile_that_later_commands_use() {
    let s = setup();
    let config = s.config.path();
    let login = pangolin(
        config,
        None,
        &["login", "--server", &s.url(), "--token", "s3cret"],
    )
    .success();
    assert!(login.stdout.starts_with("Logged in to "), "{login:?}");
    let file = config.join("profiles.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(&s.url()) && text.contains("s3cret"), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the profile may hold a token");
    }

    // No --server and no PANGOLIN_SERVER: the profile says where (not the default port).
    let created = pangolin(config, None, &["branch", "create", "dev"]).success();
    assert!(
        created.stdout.starts_with("Created branch dev at "),
        "{created:?}"
    );
    assert_eq!(s.head("dev"), s.head("main"));

    // A named profile, then used by name.
    pangolin(
        config,
        None,
        &[
            "login",
            "--server",
            &s.url(),
            "--profile",
            "other",
            "--json",
        ],
    )
    .success();
    let branches = pangolin(
        config,
        None,
        &["branch", "list", "--profile", "other", "--json"],
    )
    .success()
    .json();
    assert!(
        branches["refs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "dev"),
        "{branches}"
    );

    // Nothing answers there: nothing is saved.
    let dead = format!("http://127.0.0.1:{}", free_port());
    let failed = pangolin(
        config,
        None,
        &["login", "--server", &dead, "--profile", "dead"],
    )
    .fails_with(4);
    assert!(failed.stderr.contains("cannot connect"), "{failed:?}");
    let missing = pangolin(config, None, &["branch", "list", "--profile", "dead"]).fails_with(3);
    assert!(
        missing.stderr.contains("no profile named `dead`"),
        "{missing:?}"
    );

    // A catalog the server does not have is not saved either.
    let unknown = pangolin(
        config,
        None,
        &["login", "--server", &s.url(), "--catalog", "nope"],
    )
    .fails_with(3);
    assert!(
        unknown.stderr.contains("no catalog named `nope`"),
        "{unknown:?}"
    );
}

#[test]
fn branches_are_created_listed_moved_and_deleted() {
    let s = setup();
    let created = s.run(&["branch", "create", "dev"]).success();
    let words: Vec<&str> = created.stdout.split_whitespace().collect();
    assert_eq!(
        &words[..4],
        ["Created", "branch", "dev", "at"],
        "{created:?}"
    );
    assert!(is_short_hash(words[4].trim_end_matches('.')), "{created:?}");
    let taken = s.run(&["branch", "create", "dev"]).fails_with(1);
    assert!(taken.stderr.contains("dev"), "{taken:?}");

    s.create_namespace("default", "db");
    let list = s.run(&["branch", "list"]).success();
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["NAME", "HASH", "AHEAD", "BEHIND"]
    );
    let dev: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with("dev "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(is_short_hash(dev[1]), "{list:?}");
    assert_eq!(
        &dev[2..],
        ["0", "1"],
        "dev is one commit behind main: {list:?}"
    );
    assert!(lines.iter().any(|l| l.starts_with("main ")), "{list:?}");
    assert_eq!(
        s.run(&["branch"]).success().stdout,
        list.stdout,
        "list is the default"
    );
    let prefixed = s.run(&["branch", "list", "--prefix", "de"]).success();
    assert!(!prefixed.stdout.contains("main"), "{prefixed:?}");

    let moved = s.run(&["branch", "move", "dev", "--to", "main"]).success();
    assert!(
        moved.stdout.starts_with("Moved branch dev from "),
        "{moved:?}"
    );
    assert_eq!(s.head("dev"), s.head("main"));
    let old = s.head("main~1");
    let stale = s
        .run(&["branch", "move", "dev", "--to", "main~1", "--expect", &old])
        .fails_with(1);
    assert!(!stale.stderr.is_empty(), "{stale:?}");

    let deleted = s.run(&["branch", "delete", "dev"]).success();
    assert!(
        deleted.stdout.starts_with("Deleted branch dev (was "),
        "{deleted:?}"
    );
    let list = s.run(&["branch", "list"]).success();
    assert!(!list.stdout.contains("dev"), "{list:?}");
    s.run(&["branch", "delete", "main"]).fails_with(2);
}

#[test]
fn tags_are_created_listed_and_deleted() {
    let s = setup();
    s.create_namespace("default", "db");
    let created = s
        .run(&["tag", "create", "v1", "--from", "main~1"])
        .success();
    assert!(
        created.stdout.starts_with("Created tag v1 at "),
        "{created:?}"
    );
    s.run(&["tag", "create", "v1"]).fails_with(1);
    let not_a_branch = s.run(&["branch", "delete", "v1"]).fails_with(2);
    assert!(
        not_a_branch.stderr.contains("`v1` is a tag"),
        "{not_a_branch:?}"
    );

    let list = s.run(&["tag", "list"]).success();
    let v1: Vec<&str> = list
        .stdout
        .lines()
        .find(|l| l.starts_with("v1 "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(v1[1], &s.head("main~1")[..12], "{list:?}");
    let json = s.run(&["tag", "--json"]).success().json();
    assert_eq!(json["refs"][0]["name"], "v1", "{json}");
    assert_eq!(json["refs"][0]["type"], "tag", "{json}");

    s.run(&["tag", "delete", "v1"]).success();
    assert_eq!(s.run(&["tag"]).success().stdout, "No tags.\n");
}

#[test]
fn json_output_is_the_servers_json() {
    let s = setup();
    let created = s
        .run(&["branch", "create", "dev", "--json"])
        .success()
        .json();
    assert_eq!(created["name"], "dev");
    assert_eq!(created["type"], "branch");
    assert_eq!(created["hash"].as_str().unwrap(), s.head("main"));

    let catalogs = s.run(&["catalogs", "--json"]).success().json();
    assert_eq!(
        catalogs["catalogs"][0],
        json!({"name": "default", "default-branch": "main", "warehouse": "default"})
    );
    let show = s.run(&["show", "main", "--json"]).success().json();
    assert_eq!(show["hash"].as_str().unwrap(), s.head("main"));
    assert!(show["changes"].is_array(), "{show}");
    let log = s.run(&["log", "--json"]).success().json();
    assert_eq!(log["commits"][0]["hash"], show["hash"], "{log}");
    assert!(log.get("next-page-token").is_none(), "{log}");
}

#[test]
fn a_dry_run_merge_changes_nothing_and_a_merge_lands() {
    let s = setup();
    s.create_namespace("default", "db");
    s.run(&["branch", "create", "dev"]).success();
    s.set_property("default@dev", "db", "owner", "ana");
    let before = s.head("main");

    let dry = s.run(&["merge", "dev", "--dry-run"]).success();
    assert!(
        dry.stdout.starts_with("Would fast-forward main from ")
            && dry.stdout.contains("Dry run: nothing was changed."),
        "{dry:?}"
    );
    assert!(dry.stdout.contains("modified  db"), "{dry:?}");
    assert_eq!(s.head("main"), before, "a dry run moves nothing");
    let dry = s
        .run(&["merge", "dev", "--dry-run", "--json"])
        .success()
        .json();
    assert_eq!(dry["dry-run"], true, "{dry}");
    assert_eq!(dry["result"], "fast-forward", "{dry}");

    let merged = s.run(&["merge", "dev"]).success();
    assert!(
        merged.stdout.starts_with("Fast-forwarded main from "),
        "{merged:?}"
    );
    assert_eq!(s.head("main"), s.head("dev"));
    let again = s.run(&["merge", "dev"]).success();
    assert!(again.stdout.starts_with("Already up to date"), "{again:?}");

    // --no-ff makes a merge commit even when main could fast-forward.
    s.set_property("default@dev", "db", "owner", "bo");
    let merged = s
        .run(&["merge", "dev", "--no-ff", "-m", "bring dev"])
        .success();
    assert!(
        merged
            .stdout
            .starts_with("Merged dev into main: main is now at "),
        "{merged:?}"
    );
    let head = s.run(&["log", "-n", "1", "--json"]).success().json();
    assert_eq!(head["commits"][0]["message"], "bring dev");
    assert_eq!(head["commits"][0]["parents"].as_array().unwrap().len(), 2);
}

#[test]
fn a_conflicting_merge_exits_1_and_prints_the_conflicts() {
    let s = setup();
    s.create_namespace("default", "db");
    s.run(&["branch", "create", "dev"]).success();
    s.set_property("default", "db", "k", "ours");
    s.set_property("default@dev", "db", "k", "theirs");
    let before = s.head("main");

    let conflicted = s.run(&["merge", "dev"]).fails_with(1);
    let row: Vec<&str> = conflicted
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("db "))
        .unwrap_or_else(|| panic!("the conflicting key is printed: {conflicted:?}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[..2], ["db", "both-modified"], "{conflicted:?}");
    assert!(
        conflicted.stdout.contains("{k=ours}") && conflicted.stdout.contains("{k=theirs}"),
        "ours and theirs are shown: {conflicted:?}"
    );
    assert_eq!(s.head("main"), before, "nothing changed");

    let json = s.run(&["merge", "dev", "--json"]).fails_with(1).json();
    assert_eq!(json["result"], "conflicted", "{json}");
    assert_eq!(json["conflicts"][0]["key"], json!(["db"]), "{json}");

    s.run(&["merge", "dev", "--dry-run"]).fails_with(1);
    let resolved = s.run(&["merge", "dev", "--resolve", "db=theirs"]).success();
    assert!(
        resolved.stdout.starts_with("Merged dev into main"),
        "{resolved:?}"
    );
    assert!(
        resolved.stdout.contains("Resolved conflicts (1):"),
        "{resolved:?}"
    );
    let ls = s.run(&["ls"]).success();
    assert!(ls.stdout.contains("{k=theirs}"), "{ls:?}");
}

#[test]
fn unknown_references_catalogs_and_servers_are_clear_errors() {
    let s = setup();
    // The contract answers an unknown reference with 400: bad input, exit 2.
    let unknown = s.run(&["show", "nosuch"]).fails_with(2);
    assert!(unknown.stderr.contains("`nosuch`"), "{unknown:?}");
    let unknown = s.run(&["merge", "nosuch"]).fails_with(2);
    assert!(unknown.stderr.contains("`nosuch`"), "{unknown:?}");
    let unknown = s.run(&["branch", "delete", "nosuch"]).fails_with(2);
    assert!(unknown.stderr.contains("`nosuch`"), "{unknown:?}");

    let catalog = s
        .run(&["branch", "list", "--catalog", "nope"])
        .fails_with(3);
    assert!(catalog.stderr.contains("`nope`"), "{catalog:?}");
    let catalog = s.run(&["merge", "dev", "--catalog", "nope"]).fails_with(3);
    assert!(catalog.stderr.contains("`nope`"), "{catalog:?}");

    let config = s.config.path();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let down = pangolin(config, Some(&dead), &["branch", "list"]).fails_with(4);
    assert!(
        down.stderr.contains("cannot connect to the server at"),
        "{down:?}"
    );
    let https = pangolin(config, Some("https://example.com"), &["branch"]).fails_with(2);
    assert!(
        https.stderr.contains("https is not supported yet"),
        "{https:?}"
    );
    let key = s.run(&["log", "--table", "a..b"]).fails_with(2);
    assert!(key.stderr.contains("`a..b` is not a key"), "{key:?}");
    let time = s.run(&["log", "--since", "last tuesday"]).fails_with(2);
    assert!(time.stderr.contains("is not a time"), "{time:?}");
}

#[test]
fn log_pages_until_n_commits_and_filters() {
    let s = setup();
    s.create_namespace("default", "db");
    s.create_namespace("default", "other");
    for i in 0..5 {
        s.set_property("default", "db", "n", &i.to_string());
    }
    // 1 catalog creation + 2 namespaces + 5 updates.
    let all = s.run(&["log", "--oneline"]).success();
    assert_eq!(all.stdout.lines().count(), 8, "{all:?}");
    for line in all.stdout.lines() {
        let (hash, _) = line.split_once(' ').unwrap();
        assert!(is_short_hash(hash), "{all:?}");
    }

    let three = s
        .run(&["log", "-n", "3", "--oneline", "--page-size", "2"])
        .success();
    let expected: Vec<&str> = all.stdout.lines().take(3).collect();
    assert_eq!(three.stdout.lines().collect::<Vec<_>>(), expected);
    let json = s
        .run(&["log", "-n", "3", "--json", "--page-size", "2"])
        .success()
        .json();
    assert_eq!(json["commits"].as_array().unwrap().len(), 3, "{json}");

    let long = s.run(&["log", "-n", "1"]).success();
    assert!(long.stdout.starts_with("commit "), "{long:?}");
    assert!(long.stdout.contains("\nAuthor: "), "{long:?}");
    assert!(
        long.stdout.contains("(just now)") || long.stdout.contains(" ago)"),
        "a relative time: {long:?}"
    );

    let table = s.run(&["log", "--table", "other", "--oneline"]).success();
    assert_eq!(
        table.stdout.lines().count(),
        1,
        "only the commit that made it: {table:?}"
    );
    let nobody = s.run(&["log", "--author", "nobody-at-all"]).success();
    assert_eq!(nobody.stdout, "No commits.\n");
    let recent = s.run(&["log", "--since", "1h", "--oneline"]).success();
    assert_eq!(recent.stdout, all.stdout);
    let future = s.run(&["log", "--until", "2000-01-01"]).success();
    assert_eq!(future.stdout, "No commits.\n");
}

#[test]
fn show_diff_and_ls_describe_the_catalog() {
    let s = setup();
    s.create_namespace("default", "db");
    s.run(&["branch", "create", "dev"]).success();
    s.set_property("default@dev", "db", "owner", "ana");
    s.create_namespace("default@dev", "fresh");

    let show = s.run(&["show", "dev"]).success();
    assert!(
        show.stdout
            .starts_with(&format!("commit {}\n", s.head("dev"))),
        "{show:?}"
    );
    assert!(
        show.stdout
            .contains("Changes (1):\n  added  fresh  namespace"),
        "{show:?}"
    );

    let diff = s.run(&["diff", "main", "dev"]).success();
    assert!(diff.stdout.starts_with("2 changes from main ("), "{diff:?}");
    assert!(diff.stdout.contains("modified  db"), "{diff:?}");
    assert!(diff.stdout.contains("added     fresh"), "{diff:?}");
    let only = s
        .run(&["diff", "main", "dev", "--prefix", "fresh", "--json"])
        .success()
        .json();
    assert_eq!(only["changes"].as_array().unwrap().len(), 1, "{only}");
    assert_eq!(only["changes"][0]["key"], json!(["fresh"]), "{only}");
    let same = s.run(&["diff", "main", "main"]).success();
    assert!(same.stdout.starts_with("No differences"), "{same:?}");

    let ls = s.run(&["ls", "dev"]).success();
    let lines: Vec<&str> = ls.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["KEY", "TYPE", "DETAIL"]
    );
    assert!(
        lines[1].starts_with("db ") && lines[1].contains("{owner=ana}"),
        "{ls:?}"
    );
    assert!(lines[2].starts_with("fresh "), "{ls:?}");
    let main = s.run(&["ls"]).success();
    assert!(
        !main.stdout.contains("fresh"),
        "ls defaults to main: {main:?}"
    );

    // Iceberg tables: each change says in words what changed in the metadata.
    s.iceberg(
        "POST",
        "/v1/default/namespaces/db/tables",
        json!({"name": "orders", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": false}]}}),
    );
    s.iceberg(
        "POST",
        "/v1/default/namespaces/db/tables/orders",
        json!({"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"owner": "ana"}}]}),
    );
    let show = s.run(&["show", "main"]).success();
    assert!(
        show.stdout
            .contains("  modified  db.orders  iceberg-table\n      properties set: owner\n"),
        "{show:?}"
    );
    let ls = s.run(&["ls", "main", "db"]).success();
    assert!(
        ls.stdout.contains("db.orders  iceberg-table  no snapshot"),
        "{ls:?}"
    );
    let json = s.run(&["ls", "dev", "fresh", "--json"]).success().json();
    assert_eq!(json["entries"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(json["hash"].as_str().unwrap(), s.head("dev"));
}

#[test]
fn cherry_pick_and_revert_land_and_report_conflicts() {
    let s = setup();
    s.create_namespace("default", "db");
    s.run(&["branch", "create", "dev"]).success();
    s.create_namespace("default@dev", "picked");
    let pick = s.head("dev");
    s.set_property("default@dev", "db", "k", "dev");

    let dry = s.run(&["cherry-pick", &pick, "--dry-run"]).success();
    assert!(
        dry.stdout
            .starts_with("Would cherry-pick 1 commit onto main"),
        "{dry:?}"
    );
    let picked = s.run(&["cherry-pick", &pick[..12]]).success();
    assert!(
        picked
            .stdout
            .starts_with("Cherry-picked 1 commit onto main: main is now at "),
        "{picked:?}"
    );
    assert!(s.run(&["ls"]).success().stdout.contains("picked"));

    let reverted = s.run(&["revert", "main"]).success();
    assert!(
        reverted.stdout.starts_with("Reverted main on main"),
        "{reverted:?}"
    );
    assert!(!s.run(&["ls"]).success().stdout.contains("picked"));

    // Picking dev's property change onto a main that changed the same property conflicts.
    s.set_property("default", "db", "k", "main");
    let conflicted = s
        .run(&["cherry-pick", "dev", "--onto", "main"])
        .fails_with(1);
    assert!(conflicted.stdout.contains("db"), "{conflicted:?}");
    assert!(
        conflicted.stdout.contains("both-modified"),
        "{conflicted:?}"
    );
    let theirs = s
        .run(&["cherry-pick", "dev", "--strategy", "prefer-theirs"])
        .success();
    assert!(theirs.stdout.starts_with("Cherry-picked"), "{theirs:?}");
    assert!(s.run(&["ls"]).success().stdout.contains("{k=dev}"));
}

#[test]
fn catalogs_lists_the_servers_catalogs() {
    let s = setup();
    let catalogs = s.run(&["catalogs"]).success();
    let lines: Vec<&str> = catalogs.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["NAME", "DEFAULT", "BRANCH"]
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["*", "default", "main"]
    );
}

#[test]
fn events_are_listed_filtered_resumed_and_followed() {
    let s = setup();
    s.create_namespace("default", "db");
    s.set_property("default", "db", "owner", "ana");
    let all = s.run(&["events"]).success();
    let lines: Vec<&str> = all.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "three events and the cursor: {all:?}");
    let kinds: Vec<&str> = lines[..3]
        .iter()
        .map(|l| l.split_whitespace().nth(3).unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "create-branch",
            "create-namespace",
            "update-namespace-properties"
        ]
    );
    assert!(lines[1].contains("  db  "), "{all:?}");
    assert!(lines[3].starts_with("next cursor: "), "{all:?}");

    let json = s.run(&["events", "--json", "-n", "2"]).success();
    let events: Vec<Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{json:?}");
    let second = events[1]["cursor"].as_str().unwrap();
    assert_eq!(json.stderr.trim(), format!("next cursor: {second}"));
    let rest = s.run(&["events", "--after", second]).success();
    assert_eq!(rest.stdout.lines().count(), 2, "{rest:?}");
    assert!(rest.stdout.contains("update-namespace-properties"));
    let only = s
        .run(&["events", "--type", "create-namespace", "--json"])
        .success();
    assert_eq!(only.stdout.lines().count(), 1, "{only:?}");
    s.run(&["events", "--type", "explode"]).fails_with(2);
    s.run(&["events", "--after", "x.y"]).fails_with(2);

    // Following: the command waits for the next change and prints it.
    let last = all
        .stdout
        .lines()
        .nth(2)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let (config, url) = (s.config.path().to_owned(), s.url());
    let follower = std::thread::spawn(move || {
        pangolin(
            &config,
            Some(&url),
            &["events", "--follow", "--after", &last, "-n", "1"],
        )
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!follower.is_finished(), "it waits for a change");
    s.create_namespace("default", "later");
    let followed = follower.join().unwrap().success();
    assert!(
        followed.stdout.starts_with(char::is_numeric),
        "{followed:?}"
    );
    assert!(
        followed.stdout.contains("create-namespace  later"),
        "{followed:?}"
    );
}
