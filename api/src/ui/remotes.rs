//! Remotes in the UI: each remote catalog with where its branches and tags were when last
//! fetched, linked to their commits (which a fetch brought here) and to the comparison that
//! would merge them into the branch of the same name. Through the management API's own
//! handler, and so its authorization.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use maud::html;

use super::session::Session;
use super::{Chrome, enc, error_page, page, short, when};
use crate::extract::PathParams;
use crate::management::remotes;
use crate::state::AppState;

/// `GET /ui/catalogs/{catalog}/remotes`.
pub async fn list(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
) -> Response {
    let listed = match remotes::list(State(state), PathParams(catalog.clone())).await {
        Ok(listed) => listed.0,
        Err(error) => return error_page(&error),
    };
    let chrome = Chrome::of(&session);
    let base = format!("/ui/catalogs/{}", enc(&catalog));
    let body = html! {
        nav aria-label="Catalog" {
            a href=(base) { "Branches and tags" } " · "
            a href={ (base) "/log" } { "Commit log" }
        }
        @if listed.remotes.is_empty() {
            p.empty { "No remotes. Add one with " code { "pangolin remote add NAME URL" } "." }
        }
        @for remote in &listed.remotes {
            h2 { (remote.name) }
            p {
                "Catalog " code { (remote.catalog) } " on " code { (remote.url) } ", added by "
                (remote.added_by) " " (when(&remote.added_at)) ". "
                @match (&remote.fetched_at, &remote.fetched_by) {
                    (Some(at), Some(by)) => { "Last fetched by " (by) " " (when(at)) "." }
                    _ => { "Never fetched." }
                }
            }
            @if !remote.refs.is_empty() {
                table {
                    thead { tr {
                        th scope="col" { "Tracking ref" } th scope="col" { "Type" }
                        th scope="col" { "Commit" } th scope="col" { span.muted { "Merge" } }
                    } }
                    tbody {
                        @for r in &remote.refs {
                            @let hash = r.hash.to_hex();
                            tr {
                                td { code { (remote.name) "/" (r.name.as_str()) } }
                                td { (r.kind.as_str()) }
                                td { a href={ (base) "/commits/" (hash) } { code { (short(&hash)) } } }
                                td {
                                    @if r.kind == pangolin_refs::RefKind::Branch {
                                        a href={ (base) "/compare?source=" (hash) "&target=" (enc(r.name.as_str())) } {
                                            "Compare with " code { (r.name.as_str()) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    page(&chrome, &format!("Remotes of {catalog}"), body).into_response()
}
