//! The audit log: events with the API's filters, a page at a time, and a check of the whole
//! hash chain (root only, as in the API).

use axum::extract::{RawQuery, State};
use maud::html;

use super::session::Session;
use super::{Chrome, PageResult, fail, page, when};
use crate::extract::QueryParams;
use crate::management::audit::{self, AuditParams};
use crate::state::AppState;

/// `/ui/audit`: the caller's tenant's events (root: everyone's), newest first.
pub async fn log(
    State(state): State<AppState>,
    session: Session,
    QueryParams(params): QueryParams<AuditParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let shown = [
        ("principal", params.principal.clone()),
        ("action", params.action.clone()),
        ("resource-type", params.resource_type.clone()),
        ("resource-id", params.resource_id.clone()),
        ("from", params.from.clone()),
        ("until", params.until.clone()),
    ];
    let events = audit::query(State(state), QueryParams(params))
        .await
        .map_err(fail)?
        .0;
    let next = events.next_page_token.as_deref().map(|token| {
        let mut pairs: Vec<(String, String)> =
            url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
                .filter(|(k, _)| k != "page-token")
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
        pairs.push(("page-token".to_owned(), token.to_owned()));
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
    });
    let body = html! {
        p { a href="/ui/audit/verify" { "Verify the chain" } " (root only)" }
        form method="get" action="/ui/audit" {
            @for (name, value) in &shown {
                label for=(name) { (name) }
                input id=(name) type="text" name=(name) value=(value.clone().unwrap_or_default());
            }
            p { button type="submit" { "Filter" } }
        }
        @if events.events.is_empty() {
            p.empty { "No event matches." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "#" } th scope="col" { "When" } th scope="col" { "Who" }
                    th scope="col" { "Action" } th scope="col" { "On" } th scope="col" { "Outcome" }
                    th scope="col" { "Details" }
                } }
                tbody { @for event in &events.events { tr {
                    td { (event.sequence) } td { (when(&event.time)) } td { (event.principal) }
                    td { code { (event.action) } } td { (event.resource_type) " " code { (event.resource_id) } }
                    td { span.badge { (event.outcome) } }
                    td.muted { @for (k, v) in &event.details { (k) "=" (v) " " } }
                } } }
            }
            @if let Some(next) = next {
                p.pager { a rel="next" href={ "/ui/audit?" (next) } { "Next page →" } }
            }
        }
    };
    Ok(page(&Chrome::of(&session), "Audit log", body))
}

/// `/ui/audit/verify`: recomputes the whole hash chain.
pub async fn verify(State(state): State<AppState>, session: Session) -> PageResult {
    let report = audit::verify_chain(State(state)).await.map_err(fail)?.0;
    let body = html! {
        @if report.intact {
            p { "The chain is intact: " (report.checked) " events checked, each linked to the one before and carrying the hash of its contents." }
        } @else {
            div.error role="alert" {
                p { "The chain is broken after " (report.checked) " events." }
                p { (report.problem.clone().unwrap_or_default()) }
            }
        }
        p { a href="/ui/audit" { "Back to the audit log" } }
    };
    Ok(page(&Chrome::of(&session), "Audit chain", body))
}
