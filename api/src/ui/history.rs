//! A reference's commit log, and one commit with what it changed.

use axum::extract::{RawQuery, State};
use maud::{Markup, html};

use super::session::Session;
use super::{Chrome, PageResult, enc, fail, page, pager, short, when};
use crate::extract::{PathParams, QueryParams};
use crate::management::history::{self, ChangeParams, LogParams};
use crate::management::views::CommitView;
use crate::state::AppState;

/// `/ui/catalogs/{catalog}/log?ref=`: newest first along first parents, a page at a time;
/// merge commits say which branch head they merged.
pub async fn log(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<LogParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let reference = params
        .reference()
        .unwrap_or(pangolin_catalog::DEFAULT_BRANCH)
        .to_owned();
    let log = history::log(
        State(state),
        PathParams(catalog.clone()),
        QueryParams(params),
    )
    .await
    .map_err(fail)?
    .0;
    let base = format!("/ui/catalogs/{}", enc(&catalog));
    let body = html! {
        p { "Commits of " code { (reference) } " in " a href=(base) { (catalog) } ", newest first." }
        @if log.commits.is_empty() {
            p.empty { "No commit matches." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "Commit" } th scope="col" { "Message" }
                    th scope="col" { "Author" } th scope="col" { "When" }
                } }
                tbody { @for commit in &log.commits { (commit_row(&base, commit)) } }
            }
            (pager(&format!("{base}/log"), query.as_deref(), log.next_page_token.as_deref()))
        }
    };
    Ok(page(
        &Chrome::of(&session),
        &format!("Log of {reference}"),
        body,
    ))
}

fn commit_row(base: &str, commit: &CommitView) -> Markup {
    html! {
        tr {
            td { a.hash href={ (base) "/commits/" (commit.hash) } { (short(&commit.hash)) } }
            td {
                (commit.message)
                @if let Some(merged) = commit.parents.get(1) {
                    " " span.badge title="a merge commit" { "merge of "
                        a.hash href={ (base) "/commits/" (merged) } { (short(merged)) } }
                }
            }
            td { (commit.author) }
            td { (when(&commit.time)) }
        }
    }
}

/// `/ui/catalogs/{catalog}/commits/{reference}`: one commit and every entry it changed,
/// against its first parent, with what changed in a table's metadata in words.
pub async fn commit(
    State(state): State<AppState>,
    session: Session,
    PathParams((catalog, reference)): PathParams<(String, String)>,
    QueryParams(params): QueryParams<ChangeParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let detail = history::commit(
        State(state),
        PathParams((catalog.clone(), reference.clone())),
        QueryParams(params),
    )
    .await
    .map_err(fail)?
    .0;
    let base = format!("/ui/catalogs/{}", enc(&catalog));
    let commit = &detail.commit;
    let body = html! {
        table {
            tbody {
                tr { th scope="row" { "Hash" } td.hash { (commit.hash) } }
                tr { th scope="row" { "Message" } td { (commit.message) } }
                tr { th scope="row" { "Author" } td { (commit.author) } }
                tr { th scope="row" { "When" } td { (when(&commit.time)) } }
                tr { th scope="row" { "Parents" } td {
                    @for parent in &commit.parents {
                        a.hash href={ (base) "/commits/" (parent) } { (short(parent)) } " "
                    }
                    @if commit.parents.len() > 1 { span.badge { "merge commit" } }
                } }
            }
        }
        @if !commit.properties.is_empty() {
            details {
                summary { "Properties (" (commit.properties.len()) ")" }
                table { tbody { @for (key, value) in &commit.properties {
                    tr { th scope="row" { code { (key) } } td { (value) } }
                } } }
            }
        }
        h2 { "Changes" }
        @if detail.changes.is_empty() {
            p.empty { "This commit changed no entry." }
        } @else {
            table {
                thead { tr { th scope="col" { "Entry" } th scope="col" { "Change" } th scope="col" { "In words" } } }
                tbody {
                    @for change in &detail.changes {
                        tr {
                            td { code { (change.key.join(".")) } }
                            td { span.badge { (change.kind) } }
                            td { ul.changes { @for line in &change.summary { li { (line) } } } }
                        }
                    }
                }
            }
            (pager(&format!("{base}/commits/{}", enc(&reference)), query.as_deref(), detail.next_page_token.as_deref()))
        }
    };
    Ok(page(
        &Chrome::of(&session),
        &format!("Commit {}", short(&commit.hash)),
        body,
    ))
}
