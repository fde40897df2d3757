//! The baseline: a minimal axum route answering a small fixed JSON body, in this process on a
//! port of its own and a runtime of its own (as the server has), driven by the same generator
//! in the same run. It is the most any HTTP service can do on this machine with this client;
//! every figure is also given as a fraction of its throughput.

use std::net::SocketAddr;
use std::thread::JoinHandle;

use anyhow::Context;
use axum::Router;
use axum::http::header;
use axum::routing::get;
use tokio::sync::oneshot;

use super::api::Api;
use super::driver::{Op, Worker};

/// The route the baseline answers.
pub const PATH: &str = "/baseline";

/// About the size of a small catalog answer's envelope.
const BODY: &str =
    r#"{"identifiers":[{"namespace":["bench"],"name":"hot"}],"next-page-token":null}"#;

/// The running baseline server; stops when dropped.
#[derive(Debug)]
pub struct Baseline {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Baseline {
    pub fn start() -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding a port")?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("baseline")
            .build()
            .context("the baseline's runtime")?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("baseline".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let app = Router::new().route(
                        PATH,
                        get(|| async { ([(header::CONTENT_TYPE, "application/json")], BODY) }),
                    );
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(e) => {
                            eprintln!("baseline: {e}");
                            return;
                        }
                    };
                    let served = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                    if let Err(e) = served {
                        eprintln!("baseline: {e}");
                    }
                });
            })
            .context("starting the baseline thread")?;
        Ok(Self {
            address,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// GETs the fixed answer.
#[derive(Debug)]
pub struct BaselineWorker {
    pub api: Api,
}

impl Worker for BaselineWorker {
    async fn op(&mut self) -> anyhow::Result<Op> {
        self.api
            .get(PATH)
            .await?
            .expect(reqwest::StatusCode::OK, "baseline")?;
        Ok(Op::default())
    }
}
