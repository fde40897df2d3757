//! The text after each command's options: examples, notes, and the exit codes.

/// The exit codes in one line, for every client command's help.
const EXIT_CODES_SHORT: &str = "Exit codes: 0 success, 1 conflict, 2 usage or bad input, 3 not found, \
4 server or network error, 5 not signed in or not allowed (details: pangolin --help).";

/// `Examples:` with one command per line, then the notes, then the exit codes.
pub(crate) fn after(examples: &[&str], notes: &str) -> String {
    let mut out = String::from("Examples:\n");
    for example in examples {
        out.push_str("  ");
        out.push_str(example);
        out.push('\n');
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(notes);
        out.push('\n');
    }
    out.push('\n');
    out.push_str(EXIT_CODES_SHORT);
    out
}

/// After `pangolin --help`'s list of commands.
pub(crate) fn top() -> String {
    format!(
        "\
Examples:
  pangolin serve                                   # run the server on 127.0.0.1:8080
  pangolin login --server http://127.0.0.1:8080 --user root
  pangolin whoami
  pangolin branch create dev
  pangolin log dev -n 5 --oneline
  pangolin diff main dev
  pangolin merge dev --dry-run
  pangolin merge dev
  pangolin mr create dev -t 'Q3 restatement'       # a merge request, checked before it lands
  pangolin audit log --action auth.login

Every command but `serve` and `bundle verify` talks to a server and takes these options
after its name
(`pangolin branch list --json`):
  --server URL    the server, plain http only: https is not supported yet [env: PANGOLIN_SERVER]
  --catalog NAME  the catalog to work in [env: PANGOLIN_CATALOG]
  --profile NAME  a profile saved by `pangolin login` [env: PANGOLIN_PROFILE]
  --api-key KEY   a service user's API key, instead of the profile's token [env: PANGOLIN_API_KEY]
  --json          print the server's JSON answer, pretty, for scripts
Each setting comes from its option, else its variable, else the profile (`default` unless
named), else the default: http://127.0.0.1:8080 and catalog `default`. A profile's token is
sent as `Authorization: Bearer` to the profile's own server (--api-key, then PANGOLIN_TOKEN,
override it); when the server refuses an expired one, the profile's refresh token gets a new
pair once, saved in the profile. Servers run with --no-auth need no sign-in.
References are branches (main), tags (v1), commits (3fa9c1e2, at least 8 hex digits),
`main#<hash>`, `main#2026-05-01T12:00:00Z` (main as it was then) or `main~3`. Keys are
dotted: sales.orders. Errors are one line on stderr.

{}",
        crate::error::EXIT_CODES
    )
}
