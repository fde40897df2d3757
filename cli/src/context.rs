//! What every client command works with: the client, and how to print.

use jiff::Timestamp;

use crate::client::{Answer, Client};
use crate::error::Result;
use crate::json::Ordered;
use crate::output::Style;
use crate::profile::{self, GlobalArgs};

#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) client: Client,
    /// `--json`: print the server's answers instead of text.
    pub(crate) json: bool,
    pub(crate) style: Style,
    /// When the command started, for relative times.
    pub(crate) now: Timestamp,
}

impl Context {
    pub(crate) fn new(args: &GlobalArgs) -> Result<Self> {
        let settings = profile::settings(args)?;
        Ok(Self {
            client: Client::new(&settings)?,
            json: settings.json,
            style: Style::for_stdout(),
            now: Timestamp::now(),
        })
    }

    /// Prints an answer's JSON as the server sent it.
    pub(crate) fn print_answer(&self, answer: &Answer) -> Result<()> {
        print_json(&answer.ordered()?);
        Ok(())
    }
}

/// Prints a listing's pages as one JSON answer, for `--json`: the items of `field` of every
/// page, at most `limit`.
pub(crate) fn print_pages(answers: &[Answer], field: &str, limit: Option<usize>) -> Result<()> {
    let pages = answers
        .iter()
        .map(Answer::ordered)
        .collect::<Result<Vec<_>>>()?;
    print_json(&crate::json::join_pages(pages, field, limit));
    Ok(())
}

/// Prints JSON, pretty.
pub(crate) fn print_json(value: &Ordered) {
    print!("{}", value.pretty());
}
