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
    QueryParams(table): QueryParams<TableFilter>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let reference = params
        .reference()
        .unwrap_or(pangolin_catalog::DEFAULT_BRANCH)
        .to_owned();
    // The form names a table as people write it (`sales.orders`); the API takes its levels.
    let params = match table
        .table
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        Some(dotted) if params.filters().3.is_none() => {
            params.with_key(dotted.split('.').collect::<Vec<_>>().join("\u{1f}"))
        }
        _ => params,
    };
    let (author, since, until, key) = params.filters();
    let (author, since, until) = (author.to_owned(), since.to_owned(), until.to_owned());
    let key = key.map(str::to_owned);
    let shown_table = key.as_deref().map(|k| k.replace('\u{1f}', "."));
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
        form method="get" action={ (base) "/log" } {
            input type="hidden" name="ref" value=(reference);
            label for="table" { "Table (changed by the commit)" }
            input #table type="text" name="table" value=(shown_table.clone().unwrap_or_default()) placeholder="sales.orders";
            label for="author" { "Author" }
            input #author type="text" name="author" value=(author) placeholder="user:acme/ana";
            label for="since" { "Since (RFC 3339)" }
            input #since type="text" name="since" value=(since) placeholder="2026-11-30T00:00:00Z";
            label for="until" { "Until (RFC 3339)" }
            input #until type="text" name="until" value=(until);
            p { button type="submit" { "Filter" } }
        }
        @if log.commits.is_empty() {
            p.empty { "No commit matches." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { span.muted { "Graph" } } th scope="col" { "Commit" } th scope="col" { "Message" }
                    th scope="col" { "Author" } th scope="col" { "When" }
                } }
                tbody { @for commit in &log.commits { (commit_row(&base, commit, key.as_deref())) } }
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

/// The UI's own filter: a table named with dots.
#[derive(Debug, serde::Deserialize)]
pub struct TableFilter {
    table: Option<String>,
}

/// One commit of the log; with a table filter, a link to that table as the commit left it.
fn commit_row(base: &str, commit: &CommitView, key: Option<&str>) -> Markup {
    let merged = commit.parents.get(1);
    html! {
        tr {
            // The first-parent line runs down the column; a merge branches off to the head it
            // merged, whose own line is one click away.
            td.graph aria-hidden="true" {
                @if merged.is_some() { span.node.merge { "◆" } span.branch { "╮" } }
                @else { span.node { "●" } }
            }
            td {
                a.hash href={ (base) "/commits/" (commit.hash) } { (short(&commit.hash)) }
                @if let Some(key) = key {
                    " " a href={ (base) "/table?ref=" (commit.hash) "&key=" (enc(key)) } { "table then" }
                }
            }
            td {
                (commit.message)
                @if let Some(merged) = merged {
                    " " span.badge title="a merge commit" { "merge of "
                        a.hash href={ (base) "/commits/" (merged) } { (short(merged)) } }
                    " " a href={ (base) "/log?ref=" (merged) } { "its line" }
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
    let chrome = Chrome::of(&session);
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
        (super::merge::pick_forms(&chrome, &catalog, &commit.hash))
    };
    Ok(page(
        &chrome,
        &format!("Commit {}", short(&commit.hash)),
        body,
    ))
}
