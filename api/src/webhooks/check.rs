//! Webhook checks of merge requests: the request and the merge commit it would land, POSTed
//! to a webhook subscription's endpoint and signed with its secret, whose answer decides.
//!
//! The endpoint answers 2xx with `{"passed": true|false, "messages": ["..."]}`. Anything else
//! (another status, no answer, a body that does not say) fails the check: a check that cannot
//! be asked must not let the merge through.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use pangolin_catalog::events::Change;
use pangolin_catalog::merge_requests::{CheckInput, ExternalChecks, ExternalVerdict};
use pangolin_catalog::tenancy::Name;
use pangolin_catalog::webhooks::Webhooks;
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use super::envelope::CONTENT_TYPE;
use super::send;

/// The CloudEvents `type` of a check's request.
pub const CHECK_TYPE: &str = "pangolin.merge-request.check";

/// The most changes one check's request lists; `changes-truncated` says when there were more.
const MAX_CHANGES: usize = 1_000;

/// Asks the endpoints of one catalog's webhooks.
#[derive(Debug)]
pub struct WebhookChecks {
    webhooks: Webhooks,
    tenant: Name,
    catalog: Name,
    client: reqwest::Client,
}

impl WebhookChecks {
    pub fn new(webhooks: Webhooks, tenant: Name, catalog: Name, timeout: Duration) -> Self {
        Self {
            webhooks,
            tenant,
            catalog,
            client: send::client(timeout),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct RequestData<'a> {
    number: u64,
    title: &'a str,
    source: &'a str,
    target: &'a str,
    author: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct ChangeData {
    operation_type: &'static str,
    identifier: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_identifier: Option<Vec<String>>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct CheckData<'a> {
    merge_request: RequestData<'a>,
    source_head: String,
    target_head: String,
    merge_commit: String,
    changes: Vec<ChangeData>,
    changes_truncated: bool,
}

#[derive(Serialize)]
struct Envelope<'a> {
    specversion: &'static str,
    id: &'a str,
    source: String,
    #[serde(rename = "type")]
    kind: &'static str,
    subject: String,
    time: String,
    datacontenttype: &'static str,
    pangolintenant: &'a str,
    pangolincatalog: &'a str,
    pangolinwebhook: &'a str,
    data: CheckData<'a>,
}

/// What an endpoint answers.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Answer {
    passed: bool,
    #[serde(default)]
    messages: Vec<String>,
}

/// The most of an endpoint's messages kept, and of each message.
const MAX_ANSWER_MESSAGES: usize = 20;
const MAX_MESSAGE_CHARS: usize = 500;

fn body(
    checks: &WebhookChecks,
    webhook: &str,
    id: &str,
    input: &CheckInput<'_>,
) -> Result<Vec<u8>, serde_json::Error> {
    let levels = |key: &pangolin_store::ContentKey| key.elements().map(str::to_owned).collect();
    let changes = input
        .changes
        .iter()
        .filter_map(|event| match &event.change {
            Change::Entry {
                key, previous_key, ..
            } => Some(ChangeData {
                operation_type: event.kind.as_str(),
                identifier: levels(key),
                previous_identifier: previous_key.as_ref().map(levels),
            }),
            _ => None,
        })
        .take(MAX_CHANGES)
        .collect::<Vec<_>>();
    let request = input.request;
    serde_json::to_vec(&Envelope {
        specversion: "1.0",
        id,
        source: format!("/tenants/{}/catalogs/{}", checks.tenant, checks.catalog),
        kind: CHECK_TYPE,
        subject: format!("merge-requests/{}", request.number),
        time: pangolin_catalog::address::rfc3339(Timestamp::now()),
        datacontenttype: "application/json",
        pangolintenant: checks.tenant.as_str(),
        pangolincatalog: checks.catalog.as_str(),
        pangolinwebhook: webhook,
        data: CheckData {
            merge_request: RequestData {
                number: request.number,
                title: &request.title,
                source: request.source.as_str(),
                target: request.target.as_str(),
                author: &request.author,
            },
            source_head: input.source_head.to_hex(),
            target_head: input.target_head.to_hex(),
            merge_commit: input.merge_commit.to_hex(),
            changes_truncated: input.changes.len() > changes.len(),
            changes,
        },
    })
}

impl WebhookChecks {
    async fn check(&self, webhook: &str, input: &CheckInput<'_>) -> ExternalVerdict {
        let subscription = self
            .webhooks
            .get(&self.tenant, &self.catalog, webhook)
            .await
            .map_err(|e| format!("webhook `{webhook}`: {e}"))?;
        let secret = self
            .webhooks
            .secret(&subscription.value)
            .map_err(|e| format!("webhook `{webhook}`: its secret cannot be read: {e}"))?;
        // One id per request and merge commit: a receiver can tell a repeated ask.
        let id = format!(
            "merge-request-{}-{}",
            input.request.number,
            input.merge_commit.short(16)
        );
        let body = body(self, webhook, &id, input)
            .map_err(|e| format!("encoding the check's request: {e}"))?;
        let now = Timestamp::now().as_millis() / 1000;
        let (sent, answer) = send::ask(
            &self.client,
            &subscription.value.url,
            &secret,
            &id,
            now,
            body,
        )
        .await;
        if let Some(error) = sent.error {
            return Err(error);
        }
        let answer: Answer = serde_json::from_slice(&answer).map_err(|e| {
            format!(
                "the endpoint's answer is not `{{\"passed\": true|false, \"messages\": [...]}}` \
                 ({CONTENT_TYPE} was sent; {e})"
            )
        })?;
        let messages = answer
            .messages
            .into_iter()
            .take(MAX_ANSWER_MESSAGES)
            .map(|m| m.chars().take(MAX_MESSAGE_CHARS).collect())
            .collect();
        Ok((answer.passed, messages))
    }
}

impl ExternalChecks for WebhookChecks {
    fn ask<'a>(
        &'a self,
        webhook: &'a str,
        input: &'a CheckInput<'a>,
    ) -> Pin<Box<dyn Future<Output = ExternalVerdict> + Send + 'a>> {
        Box::pin(self.check(webhook, input))
    }
}
