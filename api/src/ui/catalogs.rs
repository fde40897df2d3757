//! The catalog list and a catalog's branches and tags.

use axum::extract::{RawQuery, State};
use maud::html;

use super::session::Session;
use super::{Chrome, PageResult, enc, fail, page, pager, short};
use crate::extract::{PathParams, QueryParams};
use crate::management::{catalogs, refs};
use crate::state::AppState;

/// `/ui`: the catalogs the caller may read something in.
pub async fn index(State(state): State<AppState>, session: Session) -> PageResult {
    let list = catalogs::list(State(state)).await.map_err(fail)?.0;
    let body = html! {
        @if list.catalogs.is_empty() {
            p.empty { "No catalog you may read. An administrator creates catalogs and grants roles." }
        } @else {
            table {
                thead { tr { th scope="col" { "Catalog" } th scope="col" { "Warehouse" } th scope="col" { "Default branch" } } }
                tbody {
                    @for catalog in &list.catalogs {
                        tr {
                            td { a href={ "/ui/catalogs/" (enc(&catalog.name)) } { (catalog.name) } }
                            td { (catalog.warehouse) }
                            td { code { (catalog.default_branch) } }
                        }
                    }
                }
            }
        }
    };
    Ok(page(&Chrome::of(&session), "Catalogs", body))
}

/// `/ui/catalogs/{catalog}`: branches and tags, where each points and how far each branch is
/// from the default branch.
pub async fn refs(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<refs::ListParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let list = refs::list(
        State(state.clone()),
        PathParams(catalog.clone()),
        QueryParams(params),
    )
    .await
    .map_err(fail)?
    .0;
    // How old each head is: one cached object read per ref of the page.
    let opened = crate::management::open(&state, &catalog)
        .await
        .map_err(fail)?;
    let mut ages = Vec::with_capacity(list.refs.len());
    for r in &list.refs {
        let time = match r.hash.parse::<pangolin_store::ObjectId>() {
            Ok(id) => opened
                .odb()
                .commit(&id)
                .await
                .ok()
                .map(|c| pangolin_catalog::rfc3339(c.time)),
            Err(_) => None,
        };
        ages.push(time);
    }
    let base = format!("/ui/catalogs/{}", enc(&catalog));
    let chrome = Chrome::of(&session);
    let body = html! {
        nav aria-label="Catalog" {
            a href={ (base) "/log" } { "Commit log" } " · "
            a href={ (base) "/entries" } { "Browse" } " · "
            a href={ (base) "/compare" } { "Compare and merge" } " · "
            a href={ (base) "/merge-requests" } { "Merge requests" } " · "
            a href={ (base) "/remotes" } { "Remotes" }
        }
        h2 { "Branches and tags" }
        @if list.refs.is_empty() {
            p.empty { "No branches or tags match." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "Name" } th scope="col" { "Type" } th scope="col" { "Head" } th scope="col" { "Committed" }
                    th scope="col" { "Ahead of main" } th scope="col" { "Behind main" }
                    th scope="col" { span.muted { "Delete" } }
                } }
                tbody {
                    @for (r, age) in list.refs.iter().zip(&ages) {
                        tr {
                            td { a href={ (base) "/log?ref=" (enc(&r.name)) } { (r.name) } }
                            td { span.badge { (r.kind) } }
                            td { a.hash href={ (base) "/commits/" (r.hash) } { (short(&r.hash)) } }
                            td { @if let Some(time) = age { (super::when(time)) } }
                            td { (r.ahead.map(|n| n.to_string()).unwrap_or_default()) }
                            td { (r.behind.map(|n| n.to_string()).unwrap_or_default()) }
                            td {
                                @if r.name != pangolin_catalog::DEFAULT_BRANCH {
                                    form.inline method="post" action={ (base) "/refs/" (enc(&r.name)) "/delete" } {
                                        input type="hidden" name="csrf" value=(chrome.csrf());
                                        input type="hidden" name="expected" value=(r.hash);
                                        button type="submit" aria-label={ "Delete " (r.name) } { "Delete" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (pager(&base, query.as_deref(), list.next_page_token.as_deref()))
        }
        h2 { "New branch or tag" }
        form method="post" action={ (base) "/refs" } {
            input type="hidden" name="csrf" value=(chrome.csrf());
            label for="name" { "Name" }
            input #name type="text" name="name" required;
            label for="type" { "Type" }
            select #type name="type" { option value="branch" { "branch" } option value="tag" { "tag" } }
            label for="from" { "From (a reference, commit or time)" }
            input #from type="text" name="from" value="main";
            p { button type="submit" { "Create" } }
        }
    };
    Ok(page(&chrome, &catalog, body))
}
