//! Failures of the client commands and the exit codes scripts rely on.
//!
//! Every failure is one line on stderr naming what was wrong, and one of the exit codes in
//! [`EXIT_CODES`]: the help text and the code share this one list.

use std::process::ExitCode;

/// The exit codes, as the help text states them.
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  conflict: a merge, cherry-pick or revert with conflicts (they are printed), a stale
     --expect hash, a name already taken, an audit log whose chain is broken, or a bundle
     that is not whole
  2  usage or bad input, including what the server refuses as bad input (an invalid name,
     an unknown or ambiguous reference)
  3  not found: an unknown catalog, profile, or a route or object the server does not have
  4  server or network error: the server is unreachable, failed, or answered nonsense
  5  not signed in or not allowed: no credential, a wrong password or API key, a session
     that expired (sign in again with `pangolin login`), too many failed sign-ins, or an
     action your roles do not allow";

/// Which exit code a failure ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Conflict = 1,
    Usage = 2,
    NotFound = 3,
    Server = 4,
    Auth = 5,
}

/// A failure: the one line for stderr and the exit code.
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) exit: Exit,
    pub(crate) message: String,
}

impl CliError {
    pub(crate) fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self {
            exit,
            message: message.into(),
        }
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(Exit::NotFound, message)
    }

    pub(crate) fn server(message: impl Into<String>) -> Self {
        Self::new(Exit::Server, message)
    }

    pub(crate) fn auth(message: impl Into<String>) -> Self {
        Self::new(Exit::Auth, message)
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(Exit::Conflict, message)
    }

    /// The exit code for the process.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.exit as u8)
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub(crate) type Result<T, E = CliError> = std::result::Result<T, E>;
