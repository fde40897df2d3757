//! Webhook subscriptions of a catalog: create, list, show, change, delete, and what their
//! delivery did (the attempts log and the dead letters). Delivery itself runs in
//! [`crate::webhooks`].

use std::collections::BTreeSet;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::Catalog;
use pangolin_catalog::address::rfc3339;
use pangolin_catalog::events::Cursor;
use pangolin_catalog::tenancy::{Name, RecordsError, Versioned};
use pangolin_catalog::webhooks::{
    Attempt, AttemptOutcome, CreateWebhookError, DeadLetter, DeleteWebhookError, DeliveryState,
    Filter, GetWebhookError, NewWebhook, SigningSecret, Subscription, UpdateWebhookError,
    WebhookPatch, Webhooks,
};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::admin::PageParams;
use super::{decode_token, encode_token, open, page_size};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::security::{Caller, unauthorized};
use crate::state::AppState;

/// Which events a webhook receives; as the events feed's filters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FilterView {
    /// Operation types (`create-table`, `update-table`, ...); every type when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<String>>,
    /// Only events about keys at or under this one (its levels); no ref events then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Vec<String>>,
    /// Only events of this branch or tag.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

impl From<FilterView> for Filter {
    fn from(view: FilterView) -> Self {
        Self {
            types: view.types.map(|t| t.into_iter().collect::<BTreeSet<_>>()),
            prefix: view.prefix,
            reference: view.reference,
        }
    }
}

impl From<&Filter> for FilterView {
    fn from(filter: &Filter) -> Self {
        Self {
            types: filter.types.as_ref().map(|t| t.iter().cloned().collect()),
            prefix: filter.prefix.clone(),
            reference: filter.reference.clone(),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CreateWebhook {
    /// Where deliveries are POSTed: an `http` or `https` URL without credentials.
    pub url: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub filter: FilterView,
    /// Attempts at one event before it becomes a dead letter (1 to 30; 10 when absent).
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// The signing secret, `whsec_` and 24 to 64 bytes in base64; a random one when absent.
    #[serde(default)]
    pub secret: Option<String>,
    /// Deliver the events after this cursor (`0`: every event kept); from now on when absent.
    #[serde(default)]
    pub after: Option<String>,
}

/// Changes to a webhook; what is absent stays as it is.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct UpdateWebhook {
    #[serde(default)]
    pub url: Option<String>,
    /// An empty description removes it.
    #[serde(default)]
    pub description: Option<String>,
    /// Replaces the whole filter.
    #[serde(default)]
    pub filter: Option<FilterView>,
    /// A disabled webhook receives nothing and keeps its place; enabled again, it goes on
    /// from there.
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// A new signing secret; `generate` for a random one, shown in the answer.
    #[serde(default)]
    pub secret: Option<String>,
}

/// Where a webhook's delivery is.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct DeliveryView {
    /// Every event up to this cursor was delivered or dead-lettered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    pub delivered: u64,
    pub dead_letters: u64,
    pub attempts: u64,
    /// The event waiting for another attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_delivered_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct RetryView {
    pub event: String,
    pub attempts: u32,
    pub next_attempt_at: String,
    pub last_error: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct WebhookView {
    pub id: String,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub filter: FilterView,
    pub enabled: bool,
    pub max_attempts: u32,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
    pub delivery: DeliveryView,
}

/// A webhook with its signing secret: answered only when the secret is set.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct WebhookWithSecret {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// `whsec_...`: receivers verify `webhook-signature` with it. Not shown again.
    pub secret: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct AttemptView {
    pub number: u64,
    /// The event's cursor, sent as `webhook-id`.
    pub event: String,
    pub event_type: String,
    /// Which attempt at this event.
    pub attempt: u32,
    pub at: String,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `delivered`, `retrying` or `dead-lettered`.
    pub outcome: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct AttemptList {
    /// Newest first.
    pub attempts: Vec<AttemptView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct DeadLetterView {
    pub event: String,
    pub event_type: String,
    pub attempts: u32,
    pub last_error: String,
    pub at: String,
    /// The body that was sent (the CloudEvents envelope).
    pub body: serde_json::Value,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct DeadLetterList {
    /// Oldest first.
    pub dead_letters: Vec<DeadLetterView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

fn delivery_view(state: DeliveryState) -> DeliveryView {
    DeliveryView {
        after: state.after,
        delivered: state.delivered,
        dead_letters: state.dead_letters,
        attempts: state.attempts,
        retry: state.retry.map(|r| RetryView {
            event: r.event,
            attempts: r.attempts,
            next_attempt_at: rfc3339(r.next_at),
            last_error: r.last_error,
        }),
        last_delivered_at: state.last_delivered_at.map(rfc3339),
    }
}

fn webhook_view(subscription: &Subscription, state: DeliveryState) -> WebhookView {
    WebhookView {
        id: subscription.id.clone(),
        url: subscription.url.clone(),
        description: subscription.description.clone(),
        filter: FilterView::from(&subscription.filter),
        enabled: subscription.enabled,
        max_attempts: subscription.max_attempts,
        created_by: subscription.created_by.clone(),
        created_at: rfc3339(subscription.created_at),
        updated_at: rfc3339(subscription.updated_at),
        delivery: delivery_view(state),
    }
}

fn attempt_view(attempt: Attempt) -> AttemptView {
    AttemptView {
        number: attempt.number,
        event: attempt.event,
        event_type: attempt.event_type,
        attempt: attempt.attempt,
        at: rfc3339(attempt.at),
        duration_ms: attempt.duration_ms,
        status: attempt.status,
        error: attempt.error,
        outcome: match attempt.outcome {
            AttemptOutcome::Delivered => "delivered",
            AttemptOutcome::Retrying => "retrying",
            AttemptOutcome::DeadLettered => "dead-lettered",
        }
        .to_owned(),
    }
}

fn dead_letter_view(letter: DeadLetter) -> DeadLetterView {
    DeadLetterView {
        body: serde_json::from_str(&letter.body).unwrap_or(serde_json::Value::String(letter.body)),
        event: letter.event,
        event_type: letter.event_type,
        attempts: letter.attempts,
        last_error: letter.last_error,
        at: rfc3339(letter.at),
    }
}

fn not_found(message: String) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "NoSuchWebhookException", message)
}

fn records_error(error: RecordsError) -> ApiError {
    ApiError::internal(&error)
}

fn get_error(error: GetWebhookError) -> ApiError {
    match error {
        GetWebhookError::NotFound { .. } => not_found(error.to_string()),
        GetWebhookError::Records(e) => records_error(e),
    }
}

fn parse_secret(text: &str) -> Result<SigningSecret, ApiError> {
    SigningSecret::parse(text).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// The webhooks of `catalog` and the names its records are kept under.
struct Scope {
    webhooks: Webhooks,
    catalog: Catalog,
    tenant: Name,
    name: Name,
}

async fn scope(state: &AppState, catalog: &str) -> Result<Scope, ApiError> {
    let catalog = open(state, catalog).await?;
    let invalid = |e: pangolin_catalog::tenancy::NameError| ApiError::bad_request(e.to_string());
    Ok(Scope {
        webhooks: state.catalogs.tenancy().webhooks(),
        tenant: Name::new("tenant", catalog.tenant()).map_err(invalid)?,
        name: Name::new("catalog", catalog.name()).map_err(invalid)?,
        catalog,
    })
}

impl Scope {
    async fn show(&self, subscription: &Versioned<Subscription>) -> Result<WebhookView, ApiError> {
        let state = self
            .webhooks
            .state(&subscription.value)
            .await
            .map_err(records_error)?;
        Ok(webhook_view(&subscription.value, state.value))
    }

    async fn get(&self, id: &str) -> Result<Versioned<Subscription>, ApiError> {
        self.webhooks
            .get(&self.tenant, &self.name, id)
            .await
            .map_err(get_error)
    }
}

/// Subscribes an endpoint to the catalog's events. Deliveries are POSTed as CloudEvents,
/// signed as Standard Webhooks specifies; the answer holds the secret, shown only here.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/webhooks", tag = "webhooks",
    params(("catalog" = String, Path)), request_body = CreateWebhook,
    responses((status = 201, body = WebhookWithSecret), (status = 400), (status = 404)))]
pub async fn create(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(body): JsonBody<CreateWebhook>,
) -> Result<(StatusCode, Json<WebhookWithSecret>), ApiError> {
    let caller = Caller::current().ok_or_else(|| unauthorized("not signed in"))?;
    let scope = scope(&state, &catalog).await?;
    let secret = body.secret.as_deref().map(parse_secret).transpose()?;
    let after = match body.after.as_deref() {
        Some(after) => Some(
            after
                .parse::<Cursor>()
                .map_err(|e| ApiError::bad_request(format!("invalid after: {e}")))?,
        ),
        None => scope.catalog.events_end().await?,
    };
    let new = NewWebhook {
        url: body.url,
        description: body.description.filter(|d| !d.is_empty()),
        filter: body.filter.into(),
        max_attempts: body.max_attempts,
        secret,
        after,
    };
    let (created, secret) = scope
        .webhooks
        .create(
            &scope.tenant,
            &scope.name,
            new,
            caller.name(),
            Timestamp::now(),
        )
        .await
        .map_err(|e| match e {
            CreateWebhookError::Invalid(_) => ApiError::bad_request(e.to_string()),
            CreateWebhookError::TooMany(_) => ApiError::new(
                StatusCode::CONFLICT,
                "TooManyWebhooksException",
                e.to_string(),
            ),
            CreateWebhookError::Seal(e) => ApiError::internal(&e),
            CreateWebhookError::Records(e) => records_error(e),
        })?;
    let webhook = scope.show(&created).await?;
    Ok((
        StatusCode::CREATED,
        Json(WebhookWithSecret {
            webhook,
            secret: secret.reveal().to_string(),
        }),
    ))
}

/// The catalog's webhooks, by id.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/webhooks", tag = "webhooks",
    params(("catalog" = String, Path), PageParams),
    responses((status = 200, body = WebhookList)))]
pub async fn list(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(paging): QueryParams<PageParams>,
) -> Result<Json<WebhookList>, ApiError> {
    let scope = scope(&state, &catalog).await?;
    let after = paging
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(decode_token)
        .transpose()?
        .map(|id| Name::new("page token", &id).map_err(|e| ApiError::bad_request(e.to_string())))
        .transpose()?;
    let page = scope
        .webhooks
        .list(
            &scope.tenant,
            &scope.name,
            after.as_ref(),
            page_size(paging.page_size)?,
        )
        .await
        .map_err(records_error)?;
    let mut webhooks = Vec::with_capacity(page.items.len());
    for subscription in &page.items {
        webhooks.push(scope.show(subscription).await?);
    }
    Ok(Json(WebhookList {
        webhooks,
        next_page_token: page.next_after.map(|n| encode_token(n.as_str())),
    }))
}

/// One webhook and where its delivery is.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/webhooks/{webhook}", tag = "webhooks",
    params(("catalog" = String, Path), ("webhook" = String, Path)),
    responses((status = 200, body = WebhookView), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams((catalog, id)): PathParams<(String, String)>,
) -> Result<Json<WebhookView>, ApiError> {
    let scope = scope(&state, &catalog).await?;
    let subscription = scope.get(&id).await?;
    Ok(Json(scope.show(&subscription).await?))
}

/// Changes a webhook. With a new `secret` the answer shows it; deliveries from then on are
/// signed with it.
#[utoipa::path(patch, path = "/api/v1/catalogs/{catalog}/webhooks/{webhook}", tag = "webhooks",
    params(("catalog" = String, Path), ("webhook" = String, Path)), request_body = UpdateWebhook,
    responses((status = 200, body = WebhookView), (status = 400), (status = 404)))]
pub async fn update(
    State(state): State<AppState>,
    PathParams((catalog, id)): PathParams<(String, String)>,
    JsonBody(body): JsonBody<UpdateWebhook>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let scope = scope(&state, &catalog).await?;
    let secret = match body.secret.as_deref() {
        None => None,
        Some("generate") => Some(SigningSecret::generate()),
        Some(text) => Some(parse_secret(text)?),
    };
    let shown = secret.as_ref().map(|s| s.reveal().to_string());
    let patch = WebhookPatch {
        url: body.url,
        description: body.description,
        filter: body.filter.map(Into::into),
        enabled: body.enabled,
        max_attempts: body.max_attempts,
        secret,
    };
    let updated = scope
        .webhooks
        .update(&scope.tenant, &scope.name, &id, patch, Timestamp::now())
        .await
        .map_err(|e| match e {
            UpdateWebhookError::NotFound { .. } => not_found(e.to_string()),
            UpdateWebhookError::Invalid(_) => ApiError::bad_request(e.to_string()),
            UpdateWebhookError::Seal(e) => ApiError::internal(&e),
            UpdateWebhookError::Records(e) => records_error(e),
        })?;
    let webhook = scope.show(&updated).await?;
    let answer = match shown {
        Some(secret) => serde_json::to_value(WebhookWithSecret { webhook, secret }),
        None => serde_json::to_value(webhook),
    }
    .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(answer))
}

/// Deletes a webhook with its delivery log and dead letters; delivery stops.
#[utoipa::path(delete, path = "/api/v1/catalogs/{catalog}/webhooks/{webhook}", tag = "webhooks",
    params(("catalog" = String, Path), ("webhook" = String, Path)),
    responses((status = 204), (status = 404)))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams((catalog, id)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = scope(&state, &catalog).await?;
    scope
        .webhooks
        .delete(&scope.tenant, &scope.name, &id)
        .await
        .map_err(|e| match e {
            DeleteWebhookError::NotFound { .. } => not_found(e.to_string()),
            DeleteWebhookError::Records(e) => records_error(e),
        })?;
    Ok(StatusCode::NO_CONTENT)
}

/// The webhook's delivery attempts, newest first (the last thousand are kept).
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/webhooks/{webhook}/attempts",
    tag = "webhooks", params(("catalog" = String, Path), ("webhook" = String, Path), PageParams),
    responses((status = 200, body = AttemptList), (status = 404)))]
pub async fn attempts(
    State(state): State<AppState>,
    PathParams((catalog, id)): PathParams<(String, String)>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<AttemptList>, ApiError> {
    let scope = scope(&state, &catalog).await?;
    let subscription = scope.get(&id).await?;
    let before = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid page token `{t}`")))
        })
        .transpose()?;
    let (attempts, more) = scope
        .webhooks
        .attempts(&subscription.value, before, page_size(params.page_size)?)
        .await
        .map_err(records_error)?;
    let next_page_token = more
        .then(|| attempts.last().map(|a| a.number.to_string()))
        .flatten();
    Ok(Json(AttemptList {
        attempts: attempts.into_iter().map(attempt_view).collect(),
        next_page_token,
    }))
}

/// The webhook's dead letters (events given up on after the last attempt), oldest first.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters",
    tag = "webhooks", params(("catalog" = String, Path), ("webhook" = String, Path), PageParams),
    responses((status = 200, body = DeadLetterList), (status = 404)))]
pub async fn dead_letters(
    State(state): State<AppState>,
    PathParams((catalog, id)): PathParams<(String, String)>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<DeadLetterList>, ApiError> {
    let scope = scope(&state, &catalog).await?;
    let subscription = scope.get(&id).await?;
    let after = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<Cursor>()
                .map_err(|_| ApiError::bad_request(format!("invalid page token `{t}`")))
        })
        .transpose()?;
    let (letters, more) = scope
        .webhooks
        .dead_letters(
            &subscription.value,
            after.as_ref(),
            page_size(params.page_size)?,
        )
        .await
        .map_err(records_error)?;
    let next_page_token = more
        .then(|| letters.last().map(|l| l.event.clone()))
        .flatten();
    Ok(Json(DeadLetterList {
        dead_letters: letters.into_iter().map(dead_letter_view).collect(),
        next_page_token,
    }))
}

/// The dead letter of `event`, or 404.
async fn dead_letter_of(
    scope: &Scope,
    subscription: &Subscription,
    event: &str,
) -> Result<(Cursor, DeadLetter), ApiError> {
    let missing = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchDeadLetterException",
            format!(
                "webhook `{}` has no dead letter for event `{}`",
                subscription.id,
                event.chars().take(64).collect::<String>()
            ),
        )
    };
    let cursor = event.parse::<Cursor>().map_err(|_| missing())?;
    let letter = scope
        .webhooks
        .dead_letter(subscription, &cursor)
        .await
        .map_err(records_error)?
        .ok_or_else(missing)?;
    Ok((cursor, letter.value))
}

/// What sending a dead letter again came to.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct RedeliveryView {
    /// The endpoint answered 2xx: the dead letter is gone.
    pub delivered: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// Sends a dead letter's body to the webhook's endpoint again, signed with the webhook's
/// current secret and with the event's cursor as `webhook-id` (so a receiver that saw it
/// before can tell). Delivered, the dead letter is removed; otherwise it stays. The answer is
/// `200` either way and says what the endpoint did.
#[utoipa::path(post,
    path = "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}/redeliver",
    tag = "webhooks",
    params(("catalog" = String, Path), ("webhook" = String, Path), ("event" = String, Path)),
    responses((status = 200, body = RedeliveryView), (status = 404)))]
pub async fn redeliver(
    State(state): State<AppState>,
    PathParams((catalog, id, event)): PathParams<(String, String, String)>,
) -> Result<Json<RedeliveryView>, ApiError> {
    let scope = scope(&state, &catalog).await?;
    let subscription = scope.get(&id).await?.value;
    let (cursor, letter) = dead_letter_of(&scope, &subscription, &event).await?;
    let secret = scope
        .webhooks
        .secret(&subscription)
        .map_err(|e| ApiError::internal(&e))?;
    let client = crate::webhooks::client(crate::webhooks::WebhookSettings::default().timeout);
    let sent = crate::webhooks::send(
        &client,
        &subscription.url,
        &secret,
        &letter.event,
        Timestamp::now().as_millis().div_euclid(1000),
        letter.body.into_bytes(),
    )
    .await;
    if sent.delivered() {
        scope
            .webhooks
            .remove_dead_letter(&subscription, &cursor)
            .await
            .map_err(records_error)?;
    }
    Ok(Json(RedeliveryView {
        delivered: sent.delivered(),
        status: sent.status,
        error: sent.error,
        duration_ms: u64::try_from(sent.took.as_millis()).unwrap_or(u64::MAX),
    }))
}

/// Discards a dead letter (handled some other way).
#[utoipa::path(delete,
    path = "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}",
    tag = "webhooks",
    params(("catalog" = String, Path), ("webhook" = String, Path), ("event" = String, Path)),
    responses((status = 204), (status = 404)))]
pub async fn discard_dead_letter(
    State(state): State<AppState>,
    PathParams((catalog, id, event)): PathParams<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = scope(&state, &catalog).await?;
    let subscription = scope.get(&id).await?.value;
    let (cursor, _) = dead_letter_of(&scope, &subscription, &event).await?;
    scope
        .webhooks
        .remove_dead_letter(&subscription, &cursor)
        .await
        .map_err(records_error)?;
    Ok(StatusCode::NO_CONTENT)
}
