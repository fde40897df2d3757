//! The events feed: a catalog's changes, read off its ref log, in pages after a cursor,
//! long-polled, or followed as Server-Sent Events. Each caller sees only the events about
//! what it may read.

use std::collections::{BTreeSet, VecDeque};
use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{self, KeepAlive, Sse};
use futures::Stream;
use pangolin_catalog::Catalog;
use pangolin_catalog::authz::{self, Privilege, Request, Resource, Role};
use pangolin_catalog::events::{
    Change, Cursor, Event, EventKind, EventPage, EventQuery, EventsError, SnapshotState, TableState,
};
use pangolin_refs::RefName;
use pangolin_store::{Content, ObjectId};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use utoipa::{IntoParams, ToSchema};

use super::views::{EntryView, levels};
use super::{open, page_size, parse_key};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::security::{Caller, unauthorized};
use crate::state::AppState;

/// The longest `wait` a page request may ask for (requests time out after a minute).
const MAX_WAIT: Duration = Duration::from_secs(50);

/// How often a waiting request or a stream looks for new events. Changes made through any
/// server sharing the database are seen within this.
const POLL: Duration = Duration::from_millis(200);

/// Ref-log entries one read goes through at most, so a filter that matches little answers.
const SCAN: usize = 1_000;

/// How long one stream stays open; the client reconnects with `Last-Event-ID` (browsers'
/// `EventSource` does so by itself), which checks its credentials and grants again.
const STREAM_FOR: Duration = Duration::from_secs(600);

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventParams {
    /// Only events after this cursor (an event's `cursor`, or a page's `next-cursor`); from
    /// the oldest event kept when absent.
    after: Option<String>,
    /// Only these operation types, comma separated (`create-table,update-table`).
    types: Option<String>,
    /// Only events about keys at or under this one (levels joined by `%1F`); no ref events.
    prefix: Option<String>,
    /// Only events of this branch or tag.
    #[serde(rename = "ref")]
    reference: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
    /// When no event is there yet, wait up to this long for one (`30s`, `500ms`; at most
    /// 50 s). Not for the stream.
    wait: Option<String>,
}

/// One change.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct EventView {
    /// Where the event is: continue after it with `after=<cursor>`. Also the event's id.
    pub cursor: String,
    /// `create-table`, `update-table`, `drop-table`, `rename-table`, the same for `view` and
    /// `asset`, `create-namespace`, `update-namespace-properties`, `drop-namespace`,
    /// `create-branch`, `move-branch`, `delete-branch`, the same for `tag`, `merge`.
    pub operation_type: String,
    /// When the change was made (the commit's time, or the ref move's).
    pub timestamp_ms: i64,
    /// The branch or tag it happened on.
    #[serde(rename = "ref")]
    pub reference: String,
    /// `branch` or `tag`.
    pub ref_type: String,
    /// The commit that made the change (for a deleted ref, the one it last named).
    pub commit: String,
    /// The commit's author, or who moved the ref.
    pub principal: String,
    pub message: String,
    /// The key the event is about (its levels), for changes to entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identifier: Option<Vec<String>>,
    /// For renames: the key before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<EntryView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<EntryView>,
    /// For tables still there after the event: what their metadata file says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<TableView>,
    /// For ref events: the commit before (absent when the ref was created).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// For ref events: the commit after (absent when the ref was deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// For merges: the merge commit's parents, the branch merged into first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parents: Option<Vec<String>>,
}

/// A table's state after an event.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct TableView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_uuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format_version: Option<u8>,
    /// The current snapshot, if the table has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotView>,
    /// Why the metadata file could not be read (purged or swept since, or storage down).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct SnapshotView {
    pub snapshot_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_snapshot_id: Option<i64>,
    pub sequence_number: i64,
    pub timestamp_ms: i64,
    /// The snapshot summary: `operation`, `added-records`, `total-records`, ...
    pub summary: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventsView {
    pub events: Vec<EventView>,
    /// Continue after this, even when `events` is empty (the read went past events the
    /// filters or grants left out). Absent only for a catalog without events.
    #[serde(rename = "next-cursor", skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

fn events_error(error: EventsError) -> ApiError {
    match error {
        EventsError::Gone { .. } => ApiError::new(
            axum::http::StatusCode::GONE,
            "EventsGoneException",
            error.to_string(),
        ),
        EventsError::Read(e) => e.into(),
        EventsError::Backend(e) => e.into(),
    }
}

fn parse_cursor(field: &str, value: &str) -> Result<Cursor, ApiError> {
    value
        .parse()
        .map_err(|e| ApiError::bad_request(format!("invalid {field}: {e}")))
}

/// `30s`, `500ms`, or plain seconds.
fn parse_wait(value: &str) -> Result<Duration, ApiError> {
    let invalid = || {
        ApiError::bad_request(format!(
            "invalid wait `{value}`: use seconds or milliseconds, like `30s` or `500ms`"
        ))
    };
    let (digits, millis) = if let Some(ms) = value.strip_suffix("ms") {
        (ms, true)
    } else {
        (value.strip_suffix('s').unwrap_or(value), false)
    };
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let n: u64 = digits.parse().map_err(|_| invalid())?;
    let wait = if millis {
        Duration::from_millis(n)
    } else {
        Duration::from_secs(n)
    };
    if wait > MAX_WAIT {
        return Err(ApiError::bad_request(format!(
            "wait `{value}` is longer than the {} s a request may wait",
            MAX_WAIT.as_secs()
        )));
    }
    Ok(wait)
}

impl EventParams {
    fn query(&self, after: Option<Cursor>) -> Result<EventQuery, ApiError> {
        let kinds = match self.types.as_deref().filter(|t| !t.is_empty()) {
            None => None,
            Some(types) => Some(
                types
                    .split(',')
                    .map(|t| {
                        EventKind::parse(t.trim()).ok_or_else(|| {
                            let known: Vec<_> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
                            ApiError::bad_request(format!(
                                "unknown event type `{t}`; known types: {}",
                                known.join(", ")
                            ))
                        })
                    })
                    .collect::<Result<BTreeSet<_>, _>>()?,
            ),
        };
        let prefix = self
            .prefix
            .as_deref()
            .filter(|p| !p.is_empty())
            .map(|p| parse_key("prefix", p))
            .transpose()?;
        let reference = self
            .reference
            .as_deref()
            .filter(|r| !r.is_empty())
            .map(|r| {
                RefName::new(r).map_err(|e| ApiError::bad_request(format!("invalid ref: {e}")))
            })
            .transpose()?;
        Ok(EventQuery {
            after,
            limit: page_size(self.page_size)?,
            scan: SCAN,
            kinds,
            prefix,
            reference,
        })
    }

    fn after(&self) -> Result<Option<Cursor>, ApiError> {
        self.after
            .as_deref()
            .filter(|a| !a.is_empty())
            .map(|a| parse_cursor("after", a))
            .transpose()
    }
}

/// What one caller may see of one catalog's events: those about what it may read, at the
/// event's branch or tag.
struct Visibility {
    caller: Caller,
    roles: Vec<Role>,
    tenant: String,
    catalog: String,
}

impl Visibility {
    async fn of(state: &AppState, catalog: &Catalog) -> Result<Self, ApiError> {
        let caller = Caller::current().ok_or_else(|| unauthorized("not signed in"))?;
        let roles = state.security.roles(&caller).await?;
        Ok(Self {
            caller,
            roles,
            tenant: catalog.tenant().to_owned(),
            catalog: catalog.name().to_owned(),
        })
    }

    /// Reads the caller's roles again (a stream outlives the request's first look).
    async fn refresh(&mut self, state: &AppState) -> Result<(), ApiError> {
        self.roles = state.security.roles(&self.caller).await?;
        Ok(())
    }

    fn allows(&self, event: &Event) -> bool {
        if self.caller.unrestricted || self.caller.principal.is_admin {
            return true;
        }
        let (tenant, catalog) = (self.tenant.as_str(), self.catalog.as_str());
        let request = match &event.change {
            Change::Entry {
                key, before, after, ..
            } => {
                let namespace = after
                    .as_ref()
                    .or(before.as_ref())
                    .is_some_and(|e| matches!(e.content, Content::Namespace { .. }));
                let resource = if namespace {
                    Resource::namespace(tenant, catalog, key.elements())
                } else {
                    let mut levels: Vec<&str> = key.elements().collect();
                    let name = levels.pop().unwrap_or_default();
                    Resource::table(tenant, catalog, levels, name)
                };
                Request::new(Privilege::Read, resource)
            }
            // That a ref moved or a merge happened is visible to whoever may read something
            // at that ref.
            Change::Ref { .. } | Change::Merge { .. } => {
                Request::new(Privilege::Read, Resource::catalog(tenant, catalog))
            }
        }
        .at(event.reference.name.as_str());
        let decision = if matches!(event.change, Change::Entry { .. }) {
            authz::decide(&self.caller.principal, &self.roles, &request)
        } else {
            authz::decide_any(&self.caller.principal, &self.roles, &request)
        };
        decision.is_allowed()
    }
}

fn hex(id: &ObjectId) -> String {
    id.to_hex()
}

/// The events of a page as answered, with what their tables' metadata says.
pub(crate) async fn render(catalog: &Catalog, events: Vec<Event>) -> Vec<EventView> {
    let tables = catalog.event_tables(&events).await;
    events
        .into_iter()
        .zip(tables)
        .map(|(event, table)| view(event, table))
        .collect()
}

fn view(event: Event, table: Option<TableState>) -> EventView {
    let mut view = EventView {
        cursor: event.cursor.to_string(),
        operation_type: event.kind.as_str().to_owned(),
        timestamp_ms: event.time.as_millis(),
        reference: event.reference.name.as_str().to_owned(),
        ref_type: event.reference.kind.as_str().to_owned(),
        commit: hex(&event.commit),
        principal: event.principal,
        message: event.message,
        identifier: None,
        source: None,
        before: None,
        after: None,
        table: table.map(table_view),
        from: None,
        to: None,
        parents: None,
    };
    match event.change {
        Change::Entry {
            key,
            previous_key,
            before,
            after,
        } => {
            view.identifier = Some(levels(&key));
            view.source = previous_key.as_ref().map(levels);
            view.before = before.as_ref().map(EntryView::from);
            view.after = after.as_ref().map(EntryView::from);
        }
        Change::Ref { from, to } => {
            view.from = from.as_ref().map(hex);
            view.to = to.as_ref().map(hex);
        }
        Change::Merge { parents } => view.parents = Some(parents.iter().map(hex).collect()),
    }
    view
}

fn table_view(state: TableState) -> TableView {
    match state {
        TableState::Read {
            table_uuid,
            format_version,
            snapshot,
        } => TableView {
            table_uuid: Some(table_uuid.to_string()),
            format_version: Some(format_version),
            snapshot: snapshot.map(snapshot_view),
            error: None,
        },
        TableState::Unreadable(error) => TableView {
            table_uuid: None,
            format_version: None,
            snapshot: None,
            error: Some(error),
        },
    }
}

fn snapshot_view(s: SnapshotState) -> SnapshotView {
    SnapshotView {
        snapshot_id: s.snapshot_id,
        parent_snapshot_id: s.parent_snapshot_id,
        sequence_number: s.sequence_number,
        timestamp_ms: s.timestamp_ms,
        summary: s.summary,
    }
}

async fn read(
    catalog: &Catalog,
    query: &EventQuery,
    visibility: &Visibility,
) -> Result<EventPage, ApiError> {
    catalog
        .events(query, &|event| visibility.allows(event))
        .await
        .map_err(events_error)
}

/// A page of the catalog's events after a cursor, oldest first; with `wait`, an empty page
/// is answered only once that long passed without a new event.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/events", tag = "events",
    params(("catalog" = String, Path), EventParams),
    responses((status = 200, body = EventsView),
        (status = 410, description = "the events after this cursor were collected with their commits")))]
pub async fn page(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<EventParams>,
) -> Result<Json<EventsView>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let wait = params.wait.as_deref().map(parse_wait).transpose()?;
    let mut query = params.query(params.after()?)?;
    let visibility = Visibility::of(&state, &catalog).await?;
    let deadline = Instant::now() + wait.unwrap_or_default();
    loop {
        let page = read(&catalog, &query, &visibility).await?;
        let now = Instant::now();
        if !page.events.is_empty() || now >= deadline {
            return Ok(Json(EventsView {
                events: render(&catalog, page.events).await,
                next_cursor: page.cursor.map(|c| c.to_string()),
            }));
        }
        // Filters or grants left out what was read: read on at once, wait only at the end.
        let moved = page.cursor != query.after;
        query.after = page.cursor;
        if !moved {
            tokio::time::sleep(POLL.min(deadline - now)).await;
        }
    }
}

/// The catalog's events as Server-Sent Events (`id` is the cursor, `event` the operation
/// type, `data` the event as JSON), from `after` or the `Last-Event-ID` header on, for ten
/// minutes; a client reconnecting with `Last-Event-ID` misses nothing.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/events/stream", tag = "events",
    params(("catalog" = String, Path), EventParams),
    responses((status = 200, description = "the events", content_type = "text/event-stream")))]
pub async fn stream(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<EventParams>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<sse::Event, Infallible>>>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    if params.wait.is_some() {
        return Err(ApiError::bad_request(
            "wait is for pages; a stream waits as long as it is open",
        ));
    }
    let last_id = headers
        .get("last-event-id")
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::bad_request("invalid Last-Event-ID"))
                .and_then(|v| parse_cursor("Last-Event-ID", v))
        })
        .transpose()?;
    let query = params.query(last_id.or(params.after()?))?;
    let visibility = Visibility::of(&state, &catalog).await?;
    let follow = Follow {
        state,
        catalog,
        query,
        visibility,
        until: Instant::now() + STREAM_FOR,
        pending: VecDeque::new(),
    };
    let events = futures::stream::unfold(Some(follow), |follow| async move {
        let mut follow = follow?;
        match follow.next().await {
            Ok(Some(event)) => Some((Ok(event), Some(follow))),
            Ok(None) => None,
            Err(error) => {
                let body = serde_json::json!({
                    "error": {"message": error.message, "type": error.kind, "code": error.status.as_u16()}
                });
                let event = sse::Event::default().event("error").data(body.to_string());
                Some((Ok(event), None))
            }
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// A stream's position and what it read but has not sent yet.
struct Follow {
    state: AppState,
    catalog: Catalog,
    query: EventQuery,
    visibility: Visibility,
    until: Instant,
    pending: VecDeque<EventView>,
}

impl Follow {
    /// The next event to send, waiting for one; `None` when the stream's time is up.
    async fn next(&mut self) -> Result<Option<sse::Event>, ApiError> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                let data = serde_json::to_string(&event).map_err(|e| ApiError::internal(&e))?;
                return Ok(Some(
                    sse::Event::default()
                        .id(event.cursor)
                        .event(event.operation_type)
                        .data(data),
                ));
            }
            if Instant::now() >= self.until {
                return Ok(None);
            }
            self.visibility.refresh(&self.state).await?;
            let page = read(&self.catalog, &self.query, &self.visibility).await?;
            let moved = page.cursor.is_some() && page.cursor != self.query.after;
            if moved {
                self.query.after = page.cursor;
            }
            if page.events.is_empty() {
                if !moved {
                    tokio::time::sleep(POLL).await;
                }
            } else {
                self.pending
                    .extend(render(&self.catalog, page.events).await);
            }
        }
    }
}
