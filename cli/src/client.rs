//! HTTP to the management API (`docs/management-api.md`): URLs, the bearer token, and the
//! mapping of answers to exit codes.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use url::Url;

use crate::error::{CliError, Exit, Result};
use crate::json::Ordered;
use crate::profile::Settings;

/// How long one request may take; the server gives up on its side after 60 seconds.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(90);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest page the API serves.
pub(crate) const MAX_PAGE: usize = 1000;

/// A client for one server and catalog.
#[derive(Debug)]
pub(crate) struct Client {
    http: reqwest::Client,
    server: Url,
    catalog: String,
    token: Option<String>,
}

/// An answer: its status, its body as text (for `--json`) and parsed (for people).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) text: String,
    pub(crate) body: Value,
}

impl Answer {
    /// The body with object keys in the server's order, for `--json`.
    pub(crate) fn ordered(&self) -> Result<Ordered> {
        if self.text.trim().is_empty() {
            return Ok(Ordered::Null);
        }
        Ordered::parse(&self.text)
    }

    /// The server's `error.message`, when the body has one.
    pub(crate) fn error_message(&self) -> Option<&str> {
        self.body
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
    }
}

/// A request: a path under the server (as segments, each percent-encoded), a query, a body.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    method: Method,
    segments: Vec<String>,
    query: Vec<(String, String)>,
    body: Option<Value>,
}

impl Request {
    pub(crate) fn new(method: Method, segments: &[&str]) -> Self {
        Self {
            method,
            segments: segments.iter().map(|s| (*s).to_owned()).collect(),
            query: Vec::new(),
            body: None,
        }
    }

    /// Adds a query parameter.
    pub(crate) fn query(mut self, name: &str, value: impl Into<String>) -> Self {
        self.query.push((name.to_owned(), value.into()));
        self
    }

    /// Adds a query parameter when there is a value.
    pub(crate) fn query_opt(self, name: &str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(value) => self.query(name, value),
            None => self,
        }
    }

    pub(crate) fn json(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }
}

impl Client {
    pub(crate) fn new(settings: &Settings) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("pangolin-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::server(format!("setting up HTTP: {e}")))?;
        Ok(Self {
            http,
            server: settings.server.clone(),
            catalog: settings.catalog.clone(),
            token: settings.token.clone(),
        })
    }

    pub(crate) fn catalog(&self) -> &str {
        &self.catalog
    }

    /// A request to the server's catalogs list.
    pub(crate) fn catalogs_request() -> Request {
        Request::new(Method::GET, &["api", "v1", "catalogs"])
    }

    /// A request under `/api/v1/catalogs/{catalog}/`.
    pub(crate) fn request(&self, method: Method, segments: &[&str]) -> Request {
        let mut all = vec!["api", "v1", "catalogs", self.catalog.as_str()];
        all.extend_from_slice(segments);
        Request::new(method, &all)
    }

    fn url(&self, request: &Request) -> Url {
        let mut url = self.server.clone();
        url.set_query(None);
        url.set_fragment(None);
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(&request.segments);
        }
        if !request.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&request.query);
        }
        url
    }

    /// Sends a request and returns the answer whatever its status; only a failure to talk
    /// to the server at all is an error.
    pub(crate) async fn send(&self, request: &Request) -> Result<Answer> {
        let url = self.url(request);
        let mut builder = self.http.request(request.method.clone(), url.clone());
        if let Some(token) = &self.token {
            builder = builder.bearer_auth(token);
        }
        if let Some(body) = &request.body {
            builder = builder.json(body);
        }
        let response = builder.send().await.map_err(|e| self.network_error(&e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| self.network_error(&e))?;
        let body = if text.trim().is_empty() {
            Value::Null
        } else {
            match serde_json::from_str(&text) {
                Ok(body) => body,
                // Not JSON (a proxy's page?): keep the status, which says enough.
                Err(_) if !status.is_success() => Value::Null,
                Err(e) => {
                    return Err(CliError::server(format!(
                        "{} {} answered with invalid JSON: {e}",
                        request.method,
                        url.path()
                    )));
                }
            }
        };
        Ok(Answer { status, text, body })
    }

    /// Sends a request; any status but success is an error with its exit code.
    pub(crate) async fn call(&self, request: &Request) -> Result<Answer> {
        let answer = self.send(request).await?;
        if answer.status.is_success() {
            Ok(answer)
        } else {
            Err(status_error(&answer))
        }
    }

    /// Every page of a list, following `next-page-token` until there is none or `limit`
    /// items of `field` were read. `page_size` caps each page.
    pub(crate) async fn pages(
        &self,
        request: &Request,
        field: &str,
        limit: Option<usize>,
        page_size: usize,
        mut each: impl FnMut(&Answer) -> Result<()>,
    ) -> Result<Vec<Answer>> {
        let mut answers = Vec::new();
        let mut seen = 0;
        let mut token: Option<String> = None;
        loop {
            let size = match limit {
                Some(limit) => (limit - seen).clamp(1, page_size),
                None => page_size,
            };
            let page = request
                .clone()
                .query("pageSize", size.to_string())
                .query_opt("pageToken", token.take());
            let answer = self.call(&page).await?;
            seen += answer
                .body
                .get(field)
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            each(&answer)?;
            token = answer
                .body
                .get("next-page-token")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            answers.push(answer);
            if token.is_none() || limit.is_some_and(|limit| seen >= limit) {
                return Ok(answers);
            }
        }
    }

    fn network_error(&self, error: &reqwest::Error) -> CliError {
        let server = self.server.as_str().trim_end_matches('/');
        if error.is_timeout() {
            return CliError::server(format!(
                "the server at {server} did not answer within {} seconds",
                REQUEST_TIMEOUT.as_secs()
            ));
        }
        // The innermost cause says what happened ("Connection refused").
        let mut cause: &dyn std::error::Error = error;
        while let Some(next) = cause.source() {
            cause = next;
        }
        if error.is_connect() {
            CliError::server(format!("cannot connect to the server at {server}: {cause}"))
        } else {
            CliError::server(format!("talking to the server at {server}: {cause}"))
        }
    }
}

/// The error for an answer that is not a success: the server's message, and the exit code
/// its status means.
pub(crate) fn status_error(answer: &Answer) -> CliError {
    let status = answer.status;
    let message = answer.error_message().map_or_else(
        || {
            format!(
                "the server answered {status}{}",
                if answer.text.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", answer.text.trim().lines().next().unwrap_or(""))
                }
            )
        },
        str::to_owned,
    );
    let exit = match status {
        StatusCode::CONFLICT => Exit::Conflict,
        StatusCode::NOT_FOUND => Exit::NotFound,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            return CliError::usage(format!("the server refused the credentials: {message}"));
        }
        s if s.is_client_error() => Exit::Usage,
        _ => Exit::Server,
    };
    CliError::new(exit, message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn client(server: &str) -> Client {
        Client::new(&Settings {
            server: Url::parse(server).unwrap(),
            catalog: "default".into(),
            token: None,
            json: false,
        })
        .unwrap()
    }

    #[test]
    fn urls_encode_references_and_keys() {
        let c = client("http://localhost:8080");
        let request = c
            .request(Method::GET, &["refs", "main#3fa9c1e2", "log"])
            .query("key", "sales\u{1f}orders");
        assert_eq!(
            c.url(&request).as_str(),
            "http://localhost:8080/api/v1/catalogs/default/refs/main%233fa9c1e2/log?key=sales%1Forders"
        );
        let request = c.request(Method::GET, &["refs", "team/feature"]);
        assert!(c.url(&request).as_str().ends_with("/refs/team%2Ffeature"));
    }

    #[test]
    fn a_server_under_a_path_keeps_it() {
        let c = client("http://localhost:8080/pangolin/");
        assert_eq!(
            c.url(&Client::catalogs_request()).as_str(),
            "http://localhost:8080/pangolin/api/v1/catalogs"
        );
    }

    fn answer(status: u16, body: Value) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            text: body.to_string(),
            body,
        }
    }

    #[test]
    fn statuses_map_to_exit_codes_with_the_servers_message() {
        let error = |status| json!({"error": {"message": "what went wrong", "code": status}});
        for (status, exit) in [
            (400, Exit::Usage),
            (404, Exit::NotFound),
            (409, Exit::Conflict),
            (422, Exit::Usage),
            (500, Exit::Server),
            (503, Exit::Server),
        ] {
            let e = status_error(&answer(status, error(status)));
            assert_eq!((e.exit, e.message.as_str()), (exit, "what went wrong"));
        }
        let e = status_error(&answer(502, Value::Null));
        assert_eq!(e.exit, Exit::Server);
        assert!(e.message.contains("502"), "{e}");
    }
}
