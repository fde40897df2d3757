//! One attempt at delivering one body to one endpoint.

use std::time::{Duration, Instant};

use pangolin_catalog::webhooks::SigningSecret;

use super::envelope::CONTENT_TYPE;

/// What came of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The endpoint's status, when it answered.
    pub status: Option<u16>,
    /// Why the attempt failed; `None` when the endpoint answered 2xx.
    pub error: Option<String>,
    pub took: Duration,
}

impl Sent {
    pub fn delivered(&self) -> bool {
        self.error.is_none()
    }
}

/// The longest part of an endpoint's answer kept in an error, so a receiver's error page
/// does not fill the delivery log.
const ANSWER_SHOWN: usize = 200;

/// The HTTP client deliveries go through: no redirects followed (a receiver moves by having
/// its subscription changed), every request bounded by `timeout`.
pub fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("pangolin-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "building the webhook client failed; using the default one");
            reqwest::Client::new()
        })
}

/// POSTs `body` to `url`, signed with `secret` as message `id` at `timestamp` (Unix seconds).
pub async fn send(
    client: &reqwest::Client,
    url: &str,
    secret: &SigningSecret,
    id: &str,
    timestamp: i64,
    body: Vec<u8>,
) -> Sent {
    exchange(client, url, secret, id, timestamp, body, false)
        .await
        .0
}

/// The most of a 2xx answer's body [`ask`] reads.
const ANSWER_READ: usize = 64 * 1024;

/// [`send`], also reading what a 2xx answer says (its first 64 KiB): for endpoints whose
/// answer is a decision, such as checks of merge requests.
pub async fn ask(
    client: &reqwest::Client,
    url: &str,
    secret: &SigningSecret,
    id: &str,
    timestamp: i64,
    body: Vec<u8>,
) -> (Sent, Vec<u8>) {
    exchange(client, url, secret, id, timestamp, body, true).await
}

async fn exchange(
    client: &reqwest::Client,
    url: &str,
    secret: &SigningSecret,
    id: &str,
    timestamp: i64,
    body: Vec<u8>,
    read_answer: bool,
) -> (Sent, Vec<u8>) {
    let signature = secret.sign(id, timestamp, &body);
    let started = Instant::now();
    let answer = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE)
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await;
    let mut read = Vec::new();
    let (status, error) = match answer {
        Ok(mut answer) if answer.status().is_success() => {
            let status = answer.status().as_u16();
            let mut error = None;
            while read_answer && read.len() < ANSWER_READ {
                match answer.chunk().await {
                    Ok(Some(chunk)) => read.extend_from_slice(&chunk),
                    Ok(None) => break,
                    Err(e) => {
                        error = Some(format!("reading the answer failed: {}", root(&e)));
                        break;
                    }
                }
            }
            read.truncate(ANSWER_READ);
            (Some(status), error)
        }
        Ok(answer) => {
            let status = answer.status();
            let text = answer.text().await.unwrap_or_default();
            let shown: String = text.chars().take(ANSWER_SHOWN).collect();
            let error = if shown.trim().is_empty() {
                format!("the endpoint answered {status}")
            } else {
                format!("the endpoint answered {status}: {}", shown.trim())
            };
            (Some(status.as_u16()), Some(error))
        }
        Err(error) if error.is_timeout() => (None, Some("no answer within the timeout".to_owned())),
        Err(error) if error.is_connect() => {
            (None, Some(format!("could not connect: {}", root(&error))))
        }
        Err(error) => (None, Some(format!("request failed: {}", root(&error)))),
    };
    (
        Sent {
            status,
            error,
            took: started.elapsed(),
        },
        read,
    )
}

/// The innermost cause, which names what actually went wrong (refused, unknown host).
fn root(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
