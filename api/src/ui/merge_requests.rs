//! Merge requests in the UI: the catalog's requests with their state and checks, a form to
//! open one, and a request's page with every check's outcome and its forms (run the checks,
//! merge, close). Each runs the management API's own handler, and so its authorization.

use axum::extract::{Form, State};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::manage::csrf_refused;
use super::session::Session;
use super::{Chrome, enc, error_page, page, short, when};
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::management::merge_requests::{
    self, CheckRunView, CreateMergeRequest, ListParams, MergeMergeRequest, MergeRequestView,
};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    state: Option<String>,
    #[serde(default, rename = "pageToken")]
    page_token: Option<String>,
}

fn base(catalog: &str) -> String {
    format!("/ui/catalogs/{}/merge-requests", enc(catalog))
}

fn verdict_badge(run: Option<&CheckRunView>) -> Markup {
    match run {
        None => html! { span.badge { "not checked" } },
        Some(run) => html! { span.badge.{ "verdict-" (run.verdict) } { (run.verdict) } },
    }
}

/// `GET /ui/catalogs/{catalog}/merge-requests?state=`.
pub async fn list(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    QueryParams(query): QueryParams<ListQuery>,
) -> Response {
    let filter = query.state.clone().filter(|s| !s.is_empty());
    let params = ListParams {
        state: filter.clone(),
        page_token: query.page_token.clone().filter(|t| !t.is_empty()),
        page_size: Some(50),
    };
    let listed = match merge_requests::list(
        State(state),
        PathParams(catalog.clone()),
        QueryParams(params),
    )
    .await
    {
        Ok(listed) => listed.0,
        Err(error) => return error_page(&error),
    };
    let chrome = Chrome::of(&session);
    let base = base(&catalog);
    let body = html! {
        nav aria-label="Catalog" {
            a href={ "/ui/catalogs/" (enc(&catalog)) } { "Branches and tags" } " · "
            a href=(base) { "All" } " · "
            a href={ (base) "?state=open" } { "Open" } " · "
            a href={ (base) "?state=merged" } { "Merged" } " · "
            a href={ (base) "?state=closed" } { "Closed" }
        }
        @if listed.merge_requests.is_empty() {
            p.empty { "No merge requests" @if let Some(s) = &filter { " " (s) } "." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "#" } th scope="col" { "Title" } th scope="col" { "Branches" }
                    th scope="col" { "State" } th scope="col" { "Checks" } th scope="col" { "Author" }
                    th scope="col" { "Opened" }
                } }
                tbody {
                    @for request in &listed.merge_requests {
                        tr {
                            td { (request.number) }
                            td { a href={ (base) "/" (request.number) } { (request.title) } }
                            td { code { (request.source) } " → " code { (request.target) } }
                            td { (request.state) }
                            td { (verdict_badge(request.checks.as_ref())) }
                            td { (request.author) }
                            td { (when(&request.created_at)) }
                        }
                    }
                }
            }
        }
        (super::pager(&base, filter.as_ref().map(|s| format!("state={}", enc(s))).as_deref(),
            listed.next_page_token.as_deref()))
        h2 { "Open a merge request" }
        form method="post" action=(base) {
            input type="hidden" name="csrf" value=(chrome.csrf());
            label for="source" { "Source branch" }
            input #source type="text" name="source" required;
            label for="target" { "Target branch" }
            input #target type="text" name="target" value=(pangolin_catalog::DEFAULT_BRANCH);
            label for="title" { "Title" }
            input #title type="text" name="title" required;
            label for="description" { "Description" }
            textarea #description name="description" rows="3" cols="60" {}
            p { button type="submit" { "Open" } }
        }
    };
    page(&chrome, &format!("Merge requests of {catalog}"), body).into_response()
}

#[derive(Debug, Deserialize)]
pub struct NewRequest {
    #[serde(default)]
    csrf: String,
    source: String,
    #[serde(default)]
    target: String,
    title: String,
    #[serde(default)]
    description: String,
}

/// `POST /ui/catalogs/{catalog}/merge-requests`: opens a request, then shows it.
pub async fn create(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    Form(form): Form<NewRequest>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let request = CreateMergeRequest {
        source: form.source.trim().to_owned(),
        target: Some(form.target.trim().to_owned()).filter(|t| !t.is_empty()),
        title: form.title,
        description: Some(form.description).filter(|d| !d.trim().is_empty()),
    };
    match merge_requests::create(State(state), PathParams(catalog.clone()), JsonBody(request)).await
    {
        Ok((_, created)) => {
            axum::response::Redirect::to(&format!("{}/{}", base(&catalog), created.0.number))
                .into_response()
        }
        Err(error) => error_page(&error),
    }
}

/// `GET /ui/catalogs/{catalog}/merge-requests/{number}`.
pub async fn show(
    State(state): State<AppState>,
    session: Session,
    PathParams((catalog, number)): PathParams<(String, u64)>,
) -> Response {
    let request =
        match merge_requests::get(State(state), PathParams((catalog.clone(), number))).await {
            Ok(request) => request.0,
            Err(error) => return error_page(&error),
        };
    let chrome = Chrome::of(&session);
    let title = format!("Merge request {number}: {}", request.title);
    page(&chrome, &title, request_view(&chrome, &catalog, &request)).into_response()
}

fn request_view(chrome: &Chrome, catalog: &str, request: &MergeRequestView) -> Markup {
    let here = format!("{}/{}", base(catalog), request.number);
    let commits = format!("/ui/catalogs/{}/commits", enc(catalog));
    let failed = request
        .checks
        .as_ref()
        .is_some_and(|run| run.verdict == "failed");
    html! {
        nav aria-label="Catalog" { a href=(base(catalog)) { "All merge requests" } }
        p {
            code { (request.source) } " into " code { (request.target) } ", "
            strong { (request.state) } ", opened by " (request.author) " " (when(&request.created_at))
        }
        @if let Some(description) = &request.description { p { (description) } }
        @if let Some(merged) = &request.merged {
            p {
                "Merged by " (merged.by) " " (when(&merged.at)) " as "
                a.hash href={ (commits) "/" (merged.commit) } { (short(&merged.commit)) }
            }
            @if let Some(reason) = &merged.overridden {
                div.error role="status" { p { "Failed checks were overridden: " (reason) } }
            }
        }
        @if let Some(by) = &request.closed_by { p { "Closed by " (by) "." } }
        h2 { "Checks" }
        @match &request.checks {
            None => p.empty { "The checks have not run yet." },
            Some(run) => (run_view(&commits, run)),
        }
        @if request.state == "open" {
            h2 { "Act" }
            form.inline method="post" action={ (here) "/checks" } {
                input type="hidden" name="csrf" value=(chrome.csrf());
                button type="submit" { "Run the checks" }
            }
            " "
            form.inline method="post" action={ (here) "/merge" } {
                input type="hidden" name="csrf" value=(chrome.csrf());
                button type="submit" { "Merge" }
            }
            " "
            form.inline method="post" action={ (here) "/close" } {
                input type="hidden" name="csrf" value=(chrome.csrf());
                button type="submit" { "Close without merging" }
            }
            @if failed {
                form method="post" action={ (here) "/merge" } {
                    input type="hidden" name="csrf" value=(chrome.csrf());
                    label for="override" { "Merge past the failed checks (administrators): reason" }
                    input #override type="text" name="override_reason" required;
                    " " button type="submit" { "Merge anyway" }
                }
            }
        }
    }
}

fn run_view(commits: &str, run: &CheckRunView) -> Markup {
    html! {
        p {
            (verdict_badge(Some(run))) " on target "
            a.hash href={ (commits) "/" (run.target_head) } { (short(&run.target_head)) }
            " and source "
            a.hash href={ (commits) "/" (run.source_head) } { (short(&run.source_head)) }
            ", run by " (run.ran_by) " " (when(&run.ran_at))
        }
        @if let Some(commit) = &run.merge_commit {
            p.muted { "Judged the merge commit " code { (short(commit)) } ", which changes "
                (run.changed_keys) " keys and is what merging lands." }
        }
        @if !run.conflicts.is_empty() {
            div.error role="status" { p { "Conflicts: " (run.conflicts.join(", ")) } }
        }
        @if run.checks.is_empty() {
            p.muted { "The target asks for no checks." }
        } @else {
            table {
                thead { tr { th scope="col" { "Check" } th scope="col" { "Outcome" } th scope="col" { "Details" } } }
                tbody {
                    @for check in &run.checks {
                        tr {
                            td { (check.description) }
                            td { @if check.passed { "passed" } @else { strong { "failed" } } }
                            td { @for message in &check.messages { div { (message) } } }
                        }
                    }
                }
            }
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct Action {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    override_reason: Option<String>,
}

/// `POST /ui/catalogs/{catalog}/merge-requests/{number}/checks`.
pub async fn run_checks(
    State(state): State<AppState>,
    session: Session,
    PathParams((catalog, number)): PathParams<(String, u64)>,
    Form(form): Form<Action>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let outcome =
        merge_requests::run_checks(State(state), PathParams((catalog.clone(), number))).await;
    super::after(outcome, &format!("{}/{number}", base(&catalog)))
}

/// `POST /ui/catalogs/{catalog}/merge-requests/{number}/merge`.
pub async fn merge(
    State(state): State<AppState>,
    session: Session,
    PathParams((catalog, number)): PathParams<(String, u64)>,
    Form(form): Form<Action>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let body = MergeMergeRequest {
        override_reason: form.override_reason.filter(|r| !r.trim().is_empty()),
    };
    let outcome = merge_requests::merge(
        State(state),
        PathParams((catalog.clone(), number)),
        Some(JsonBody(body)),
    )
    .await;
    super::after(outcome, &format!("{}/{number}", base(&catalog)))
}

/// `POST /ui/catalogs/{catalog}/merge-requests/{number}/close`.
pub async fn close(
    State(state): State<AppState>,
    session: Session,
    PathParams((catalog, number)): PathParams<(String, u64)>,
    Form(form): Form<Action>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let outcome = merge_requests::close(State(state), PathParams((catalog.clone(), number))).await;
    super::after(outcome, &format!("{}/{number}", base(&catalog)))
}
