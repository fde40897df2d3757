//! Compare and merge: what merging a source into a target would change (the management API's
//! dry run), its conflicts with a choice per key, and the merge itself, through the API's
//! merge handler and so its authorization: a caller who may not merge sees why, and no button.

use axum::extract::{Form, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::manage::csrf_refused;
use super::session::Session;
use super::{Chrome, enc, error_page, page, short};
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::management::merge::{self, HistoryResult, MergeRequest, ResolutionRequest};
use crate::state::AppState;

/// Form fields that carry a resolution: `resolve:` and the key's levels joined by `\x1f`.
const RESOLVE: &str = "resolve:";

#[derive(Debug, Deserialize)]
pub struct CompareParams {
    #[serde(default)]
    source: String,
    #[serde(default)]
    target: String,
    /// `auto` or `off`; the catalog's default when empty.
    #[serde(default)]
    tables: String,
}

/// `GET /ui/catalogs/{catalog}/compare?source=&target=`.
pub async fn compare(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<CompareParams>,
) -> Response {
    let chrome = Chrome::of(&session);
    let target = non_empty(&params.target).unwrap_or(pangolin_catalog::DEFAULT_BRANCH);
    let tables = non_empty(&params.tables);
    let Some(source) = non_empty(&params.source) else {
        let body = picker(&catalog, "", target, tables);
        return page(&chrome, "Compare and merge", body).into_response();
    };
    let mut request = merge_request(source, target, None, Vec::new(), true);
    request.table_merge = tables.map(str::to_owned);
    let outcome = merge::merge(State(state), PathParams(catalog.clone()), JsonBody(request)).await;
    let (status, body) = match outcome {
        Ok((status, result)) => (
            status,
            html! {
                (picker(&catalog, source, target, tables))
                (result_view(&chrome, &catalog, (source, target, tables), &result.0))
            },
        ),
        // Whoever may not merge into the target still sees the comparison page, without a
        // button, and why.
        Err(error) if error.status == StatusCode::FORBIDDEN => (
            StatusCode::OK,
            html! {
                (picker(&catalog, source, target, tables))
                div.error role="status" { p { "You may not merge into " code { (target) } ": " (error.message) } }
            },
        ),
        Err(error) => return error_page(&error),
    };
    let status = if status == StatusCode::CONFLICT {
        StatusCode::OK
    } else {
        status
    };
    (status, page(&chrome, "Compare and merge", body)).into_response()
}

fn non_empty(value: &str) -> Option<&str> {
    Some(value.trim()).filter(|v| !v.is_empty())
}

fn merge_request(
    source: &str,
    target: &str,
    expected: Option<String>,
    resolutions: Vec<ResolutionRequest>,
    dry_run: bool,
) -> MergeRequest {
    MergeRequest {
        source: source.to_owned(),
        target: Some(target.to_owned()),
        expected_target_head: expected,
        dry_run,
        fast_forward: None,
        squash: false,
        strategy: None,
        resolutions,
        message: None,
        table_merge: None,
    }
}

fn picker(catalog: &str, source: &str, target: &str, tables: Option<&str>) -> Markup {
    html! {
        form method="get" action={ "/ui/catalogs/" (enc(catalog)) "/compare" } {
            label for="source" { "Source (any reference)" }
            input #source type="text" name="source" value=(source) required;
            label for="target" { "Target branch" }
            input #target type="text" name="target" value=(target);
            label for="tables" { "Tables both sides changed" }
            select #tables name="tables" {
                option value="" selected[tables.is_none()] { "as the catalog merges them" }
                option value="auto" selected[tables == Some("auto")] { "merge their changes when they commute" }
                option value="off" selected[tables == Some("off")] { "are conflicts" }
            }
            " " button type="submit" { "Compare" }
        }
    }
}

fn result_view(
    chrome: &Chrome,
    catalog: &str,
    (source, target, tables): (&str, &str, Option<&str>),
    result: &HistoryResult,
) -> Markup {
    let base = format!("/ui/catalogs/{}", enc(catalog));
    let verdict = match result.result.as_str() {
        "up-to-date" => "Nothing to merge: the target has everything the source has.",
        "fast-forward" => "The target would move forward to the source.",
        "conflicted" => "Both sides changed the same entries: choose a side for each below.",
        _ => "A merge commit would combine both sides.",
    };
    html! {
        h2 { "Merging " code { (source) } " into " code { (target) } }
        p { (verdict) " The target is at "
            a.hash href={ (base) "/commits/" (result.previous_head) } { (short(&result.previous_head)) } "." }
        @if !result.changes.is_empty() {
            h3 { "Changes to the target" }
            table {
                thead { tr { th scope="col" { "Entry" } th scope="col" { "Change" } th scope="col" { "In words" } } }
                tbody { @for change in &result.changes { tr {
                    td { code { (change.key.join(".")) } } td { span.badge { (change.kind) } }
                    td { ul.changes { @for line in &change.summary { li { (line) } } } }
                } } }
            }
        }
        @if !result.table_merges.is_empty() {
            h3 { "Tables both sides changed, merged inside" }
            ul { @for table in &result.table_merges {
                li { code { (table.key.join(".")) } ": " (table.plan.join("; ")) }
            } }
        }
        @if result.result != "up-to-date" {
            form method="post" action={ (base) "/merge" } {
                input type="hidden" name="csrf" value=(chrome.csrf());
                input type="hidden" name="source" value=(source);
                input type="hidden" name="target" value=(target);
                input type="hidden" name="tables" value=(tables.unwrap_or_default());
                input type="hidden" name="expected" value=(result.previous_head);
                @if !result.conflicts.is_empty() {
                    h3 { "Conflicts" }
                    table {
                        thead { tr { th scope="col" { "Entry" } th scope="col" { "Conflict" } th scope="col" { "Keep" } } }
                        tbody { @for conflict in &result.conflicts {
                            @let field = format!("{RESOLVE}{}", conflict.key.join("\u{1f}"));
                            @let id = format!("resolve-{}", conflict.key.join("-"));
                            tr {
                                td { label for=(id) { code { (conflict.key.join(".")) } } }
                                td {
                                    span.badge { (conflict.kind) }
                                    @if let Some(reason) = &conflict.reason { div.muted { (reason) } }
                                }
                                td { select id=(id) name=(field) required {
                                    option value="" { "choose…" }
                                    option value="ours" { "the target's (" (target) ")" }
                                    option value="theirs" { "the source's (" (source) ")" }
                                } }
                            }
                        } }
                    }
                }
                p { button type="submit" { "Merge into " (target) } }
            }
        }
    }
}

/// `POST /ui/catalogs/{catalog}/merge`: the merge, from the target head the page showed, with
/// the chosen resolutions; then the merge's commit page, or the conflicts again.
pub async fn merge(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    if !session.accepts(&field("csrf")) {
        return csrf_refused();
    }
    let resolutions: Vec<ResolutionRequest> = fields
        .iter()
        .filter_map(|(k, v)| {
            let key = k.strip_prefix(RESOLVE)?;
            (!v.is_empty()).then(|| ResolutionRequest {
                key: key.split('\u{1f}').map(str::to_owned).collect(),
                take: v.clone(),
            })
        })
        .collect();
    let (source, target) = (field("source"), field("target"));
    let tables = Some(field("tables")).filter(|t| !t.is_empty());
    let expected = Some(field("expected")).filter(|e| !e.is_empty());
    let mut request = merge_request(&source, &target, expected, resolutions, false);
    request.table_merge = tables.clone();
    match merge::merge(State(state), PathParams(catalog.clone()), JsonBody(request)).await {
        Ok((StatusCode::CONFLICT, result)) => {
            let chrome = Chrome::of(&session);
            let body = html! {
                div.error role="alert" { p { "The merge still has conflicts: nothing was changed." } }
                (result_view(&chrome, &catalog, (&source, &target, tables.as_deref()), &result.0))
            };
            (
                StatusCode::CONFLICT,
                page(&chrome, "Compare and merge", body),
            )
                .into_response()
        }
        Ok((_, result)) => {
            let head = result
                .0
                .target_head
                .clone()
                .unwrap_or(result.0.previous_head.clone());
            Redirect::to(&format!("/ui/catalogs/{}/commits/{head}", enc(&catalog))).into_response()
        }
        Err(error) => error_page(&error),
    }
}

#[derive(Debug, Deserialize)]
pub struct PickForm {
    #[serde(default)]
    csrf: String,
    /// `cherry-pick` or `revert`.
    action: String,
    commit: String,
    /// The branch to apply it to.
    branch: String,
}

/// `POST /ui/catalogs/{catalog}/pick`: cherry-picks a commit onto a branch, or reverts it on
/// one, through the API's handlers; then the new commit's page, or the conflicts (nothing
/// changed: settle them from the command line or the API, which take resolutions).
pub async fn pick(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    Form(form): Form<PickForm>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let branch = Some(form.branch.trim().to_owned()).filter(|b| !b.is_empty());
    let outcome = match form.action.as_str() {
        "cherry-pick" => {
            let request = merge::CherryPickRequest {
                commits: vec![form.commit.clone()],
                onto: branch,
                expected_target_head: None,
                dry_run: false,
                squash: false,
                strategy: None,
                resolutions: Vec::new(),
                message: None,
            };
            merge::cherry_pick(State(state), PathParams(catalog.clone()), JsonBody(request)).await
        }
        "revert" => {
            let request = merge::RevertRequest {
                commit: form.commit.clone(),
                on: branch,
                expected_target_head: None,
                dry_run: false,
                strategy: None,
                resolutions: Vec::new(),
                message: None,
            };
            merge::revert(State(state), PathParams(catalog.clone()), JsonBody(request)).await
        }
        other => {
            return error_page(&crate::error::ApiError::bad_request(format!(
                "`{other}` is neither `cherry-pick` nor `revert`"
            )));
        }
    };
    match outcome {
        Ok((StatusCode::CONFLICT, result)) => {
            let chrome = Chrome::of(&session);
            let body = html! {
                div.error role="alert" {
                    p { "It conflicts with " (result.0.conflicts.len()) " changed entries: nothing was changed." }
                }
                ul { @for conflict in &result.0.conflicts { li { code { (conflict.key.join(".")) } " " span.badge { (conflict.kind) } } } }
            };
            (StatusCode::CONFLICT, page(&chrome, "Not applied", body)).into_response()
        }
        Ok((_, result)) => {
            let head = result
                .0
                .target_head
                .clone()
                .unwrap_or(result.0.previous_head.clone());
            Redirect::to(&format!("/ui/catalogs/{}/commits/{head}", enc(&catalog))).into_response()
        }
        Err(error) => error_page(&error),
    }
}

/// The cherry-pick and revert forms of a commit's page.
pub fn pick_forms(chrome: &Chrome, catalog: &str, commit: &str) -> Markup {
    html! {
        h2 { "Apply this commit elsewhere" }
        form method="post" action={ "/ui/catalogs/" (enc(catalog)) "/pick" } {
            input type="hidden" name="csrf" value=(chrome.csrf());
            input type="hidden" name="commit" value=(commit);
            label for="branch" { "Branch" }
            input #branch type="text" name="branch" value=(pangolin_catalog::DEFAULT_BRANCH) required;
            p {
                button type="submit" name="action" value="cherry-pick" { "Cherry-pick onto the branch" }
                " "
                button type="submit" name="action" value="revert" { "Revert on the branch" }
            }
        }
    }
}
