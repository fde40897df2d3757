//! The catalog's entries at any reference: namespaces, tables, views and other assets.

use axum::extract::{RawQuery, State};
use maud::html;

use super::session::Session;
use super::{Chrome, PageResult, enc, fail, page, pager, short};
use crate::extract::{PathParams, QueryParams};
use crate::management::history::{self, EntriesParams};
use crate::state::AppState;

/// `/ui/catalogs/{catalog}/entries?ref=&prefix=`: one page of entries by key.
pub async fn entries(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<EntriesParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let reference = params
        .reference()
        .unwrap_or(pangolin_catalog::DEFAULT_BRANCH)
        .to_owned();
    let shown_prefix = params.prefix().map(|p| p.replace('\u{1f}', "."));
    let listed = history::entries(
        State(state),
        PathParams(catalog.clone()),
        QueryParams(params),
    )
    .await
    .map_err(fail)?
    .0;
    let base = format!("/ui/catalogs/{}", enc(&catalog));
    let body = html! {
        @if let Some(prefix) = &shown_prefix {
            p { "Under " code { (prefix) } " · " a href={ (base) "/entries?ref=" (enc(&reference)) } { "the whole catalog" } }
        }
        p {
            "At " code { (reference) } " (commit "
            a.hash href={ (base) "/commits/" (listed.hash) } { (short(&listed.hash)) } ") in "
            a href=(base) { (catalog) } "."
        }
        form method="get" action={ (base) "/entries" } {
            label for="ref" { "Reference, commit or time" }
            input #ref type="text" name="ref" value=(reference);
            " " button type="submit" { "Show" }
        }
        @if listed.entries.is_empty() {
            p.empty { "Nothing here yet." }
        } @else {
            table {
                thead { tr { th scope="col" { "Key" } th scope="col" { "Kind" } th scope="col" { "Where" } } }
                tbody {
                    @for item in &listed.entries {
                        tr {
                            td {
                                @if item.entry.kind == "namespace" {
                                    a href={ (base) "/entries?ref=" (enc(&reference)) "&prefix=" (enc(&item.key.join("\u{1f}"))) } {
                                        code { (item.key.join(".")) }
                                    }
                                } @else if item.entry.kind == "iceberg-table" {
                                    a href={ (base) "/table?ref=" (enc(&reference)) "&key=" (enc(&item.key.join("\u{1f}"))) } {
                                        code { (item.key.join(".")) }
                                    }
                                } @else {
                                    code { (item.key.join(".")) }
                                }
                            }
                            td { span.badge { (item.entry.kind) } }
                            td.muted { (item.entry.metadata_location.as_deref().or(item.entry.location.as_deref()).unwrap_or("")) }
                        }
                    }
                }
            }
            (pager(&format!("{base}/entries"), query.as_deref(), listed.next_page_token.as_deref()))
        }
    };
    Ok(page(&Chrome::of(&session), "Browse", body))
}
