//! Reading a password without it reaching the shell's history or the screen.

use std::io::{BufRead, IsTerminal};

use crate::error::{CliError, Result};

/// A password: the first line of standard input when `from_stdin`, else the variable `env`,
/// else asked for on the terminal without echo (`prompt`), else the first line of standard
/// input (a pipe). An empty password is refused.
pub(crate) fn read(prompt: &str, from_stdin: bool, env: &str) -> Result<String> {
    let from_env = std::env::var(env).ok().filter(|p| !p.is_empty());
    let password = if from_stdin {
        first_line_of_stdin()?
    } else if let Some(password) = from_env {
        password
    } else if std::io::stdin().is_terminal() {
        rpassword::prompt_password(prompt)
            .map_err(|e| CliError::usage(format!("reading the password: {e}")))?
    } else {
        first_line_of_stdin()?
    };
    if password.is_empty() {
        return Err(CliError::usage(format!(
            "the password is empty: type it, pipe it to standard input or set {env}"
        )));
    }
    Ok(password)
}

fn first_line_of_stdin() -> Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::usage(format!("reading the password from standard input: {e}")))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}
