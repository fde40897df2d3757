//! The body of a delivery: the event as the feed shows it, in a CloudEvents 1.0 envelope
//! (structured mode, `application/cloudevents+json`).

use pangolin_catalog::webhooks::Subscription;
use serde::Serialize;

use crate::management::events::EventView;

/// The media type of a delivery's body.
pub const CONTENT_TYPE: &str = "application/cloudevents+json";

/// The prefix of every delivery's CloudEvents `type`; the event's operation type follows.
pub const TYPE_PREFIX: &str = "pangolin.catalog.";

#[derive(Debug, Serialize)]
struct Envelope<'a> {
    specversion: &'static str,
    /// The event's cursor: unique within the catalog, the same on every retry.
    id: &'a str,
    source: String,
    #[serde(rename = "type")]
    kind: String,
    /// The branch or tag, and the key the event is about.
    subject: String,
    time: String,
    datacontenttype: &'static str,
    pangolintenant: &'a str,
    pangolincatalog: &'a str,
    pangolinwebhook: &'a str,
    data: &'a EventView,
}

/// The JSON body delivering `event` to `subscription`.
pub fn body(subscription: &Subscription, event: &EventView) -> Result<Vec<u8>, serde_json::Error> {
    let subject = match &event.identifier {
        Some(levels) => format!("{}/{}", event.reference, levels.join(".")),
        None => event.reference.clone(),
    };
    serde_json::to_vec(&Envelope {
        specversion: "1.0",
        id: &event.cursor,
        source: format!(
            "/tenants/{}/catalogs/{}",
            subscription.tenant, subscription.catalog
        ),
        kind: format!("{TYPE_PREFIX}{}", event.operation_type),
        subject,
        time: pangolin_catalog::address::rfc3339(pangolin_store::Timestamp::from_millis(
            event.timestamp_ms,
        )),
        datacontenttype: "application/json",
        pangolintenant: subscription.tenant.as_str(),
        pangolincatalog: subscription.catalog.as_str(),
        pangolinwebhook: &subscription.id,
        data: event,
    })
}
