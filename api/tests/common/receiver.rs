//! A webhook endpoint on a local port that records what it receives and answers as a test
//! tells it to: accept, fail a number of times, always fail, or hang until released.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use pangolin_api::webhooks::WebhookSettings;
use serde_json::Value;
use tokio::sync::Notify;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Accept,
    /// Answer 500 this many more times, then accept.
    Fail(u32),
    AlwaysFail,
    /// Keep the request open until [`Receiver::release`].
    Hang,
}

/// One request as received, with the status it was answered.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
    pub content_type: String,
    pub body: Vec<u8>,
    pub status: u16,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Debug)]
struct Inner {
    mode: Mode,
    received: Vec<Received>,
    hanging: usize,
    /// The body of every 2xx answer.
    answer: String,
}

#[derive(Debug, Clone)]
pub struct Receiver {
    inner: Arc<Mutex<Inner>>,
    release: Arc<Notify>,
    pub url: String,
}

impl Receiver {
    pub async fn start(mode: Mode) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let receiver = Self {
            inner: Arc::new(Mutex::new(Inner {
                mode,
                received: Vec::new(),
                hanging: 0,
                answer: String::new(),
            })),
            release: Arc::new(Notify::new()),
            url,
        };
        let app = Router::new()
            .route("/hook", post(receive))
            .with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        receiver
    }

    pub fn set(&self, mode: Mode) {
        self.inner.lock().unwrap().mode = mode;
    }

    /// Answers 2xx with this body from now on.
    pub fn answer(&self, body: &str) {
        self.inner.lock().unwrap().answer = body.to_owned();
    }

    /// Answers every hanging request.
    pub fn release(&self) {
        self.set(Mode::Accept);
        self.release.notify_waiters();
    }

    /// Everything received so far, answered or not.
    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().received.clone()
    }

    /// The requests answered 2xx, in order.
    pub fn delivered(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| (200..300).contains(&r.status))
            .collect()
    }

    pub fn hanging(&self) -> usize {
        self.inner.lock().unwrap().hanging
    }
}

async fn receive(
    State(receiver): State<Receiver>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> (StatusCode, String) {
    let header = |name: &str| {
        headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let mut received = Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp").parse().unwrap_or(-1),
        signature: header("webhook-signature"),
        content_type: header("content-type"),
        body: body.to_vec(),
        status: 200,
    };
    let mode = {
        let mut inner = receiver.inner.lock().unwrap();
        let mode = inner.mode;
        match mode {
            Mode::Accept => {}
            Mode::Fail(n) => {
                inner.mode = if n <= 1 {
                    Mode::Accept
                } else {
                    Mode::Fail(n - 1)
                };
                received.status = 500;
            }
            Mode::AlwaysFail => received.status = 500,
            Mode::Hang => inner.hanging += 1,
        }
        if mode != Mode::Hang {
            inner.received.push(received.clone());
        }
        mode
    };
    if mode == Mode::Hang {
        receiver.release.notified().await;
        let mut inner = receiver.inner.lock().unwrap();
        inner.hanging -= 1;
        inner.received.push(received.clone());
    }
    let answer = receiver.inner.lock().unwrap().answer.clone();
    (StatusCode::from_u16(received.status).unwrap(), answer)
}

/// Settings that make a test's deliveries quick.
pub fn quick() -> WebhookSettings {
    WebhookSettings {
        timeout: Duration::from_secs(5),
        retry_initial: Duration::from_millis(50),
        retry_max: Duration::from_millis(200),
        poll: Duration::from_millis(50),
        scan: Duration::from_millis(50),
        lease: Duration::from_secs(30),
    }
}

/// Waits until `done` holds, checking every 50 ms; fails after a minute (a liveness bound,
/// not a measure of speed).
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("gave up waiting until {what}");
}
