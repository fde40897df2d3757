//! HTTP to the management API (`docs/management-api.md`): URLs, the bearer token (refreshed
//! once when the server refuses it), and the mapping of answers to exit codes.

use std::sync::Mutex;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use url::Url;

use crate::error::{CliError, Exit, Result};
use crate::json::Ordered;
use crate::profile::{OidcSession, Saved, Settings};

/// How long one request may take; the server gives up on its side after 60 seconds.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(90);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a streamed request (a bundle's export or import) may take at most.
const STREAM_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The largest page the API serves.
pub(crate) const MAX_PAGE: usize = 1000;

/// A client for one server and catalog.
#[derive(Debug)]
pub(crate) struct Client {
    http: reqwest::Client,
    server: Url,
    catalog: String,
    /// Behind a lock because a refresh replaces the tokens while requests borrow the client.
    session: Mutex<Session>,
}

/// The credentials a client sends, and where refreshed ones are kept.
#[derive(Clone, Default)]
struct Session {
    token: Option<String>,
    refresh_token: Option<String>,
    saved_in: Option<Saved>,
    oidc: Option<OidcSession>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("saved_in", &self.saved_in)
            .field("oidc", &self.oidc)
            .finish()
    }
}

/// The tokens of a sign-in or a refresh (`POST /api/v1/login`, `/api/v1/token/refresh`).
#[derive(Clone)]
pub(crate) struct Tokens {
    pub(crate) access: String,
    pub(crate) refresh: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokens(<redacted>)")
    }
}

impl Tokens {
    /// The tokens in a sign-in or refresh answer.
    pub(crate) fn from_answer(answer: &Answer) -> Result<Self> {
        let field = |name: &str| {
            answer
                .body
                .get(name)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
        };
        let access = field("access_token")
            .ok_or_else(|| CliError::server("the server's sign-in answer has no access_token"))?;
        Ok(Self {
            access,
            refresh: field("refresh_token"),
        })
    }
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
    headers: Vec<(&'static str, String)>,
    body: Option<Value>,
}

impl Request {
    pub(crate) fn new(method: Method, segments: &[&str]) -> Self {
        Self {
            method,
            segments: segments.iter().map(|s| (*s).to_owned()).collect(),
            query: Vec::new(),
            headers: Vec::new(),
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

    /// Adds a header when there is a value.
    pub(crate) fn header_opt(
        mut self,
        name: &'static str,
        value: Option<impl Into<String>>,
    ) -> Self {
        if let Some(value) = value {
            self.headers.push((name, value.into()));
        }
        self
    }

    /// A request under `/api/v1/`, for routes outside a catalog.
    pub(crate) fn api(method: Method, segments: &[&str]) -> Self {
        let mut all = vec!["api", "v1"];
        all.extend_from_slice(segments);
        Self::new(method, &all)
    }
}

/// The query parameter names a list route pages with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paging {
    pub(crate) size: &'static str,
    pub(crate) token: &'static str,
}

impl Paging {
    /// The catalog routes' `pageSize` and `pageToken`.
    pub(crate) const CAMEL: Self = Self {
        size: "pageSize",
        token: "pageToken",
    };
    /// The audit and admin routes' `page-size` and `page-token`.
    pub(crate) const KEBAB: Self = Self {
        size: "page-size",
        token: "page-token",
    };
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
            session: Mutex::new(Session {
                token: settings.token.clone(),
                refresh_token: settings.refresh_token.clone(),
                saved_in: settings.saved_in.clone(),
                oidc: settings.oidc.clone(),
            }),
        })
    }

    /// The server's URL, without a trailing slash, for messages.
    pub(crate) fn server(&self) -> &str {
        self.server.as_str().trim_end_matches('/')
    }

    fn session(&self) -> Session {
        match self.session.lock() {
            Ok(session) => session.clone(),
            // A panic while holding the lock cannot leave a half-written session behind.
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_session(&self, change: impl FnOnce(&mut Session)) {
        match self.session.lock() {
            Ok(mut session) => change(&mut session),
            Err(poisoned) => change(&mut poisoned.into_inner()),
        }
    }

    /// The token sent as `Authorization: Bearer`, if any.
    pub(crate) fn token(&self) -> Option<String> {
        self.session().token
    }

    /// The refresh token, if any.
    pub(crate) fn refresh_token(&self) -> Option<String> {
        self.session().refresh_token
    }

    /// The identity provider that issued the tokens, if one did (`login --oidc`).
    pub(crate) fn oidc_issuer(&self) -> Option<String> {
        self.session().oidc.map(|o| o.issuer)
    }

    /// The profile the tokens came from, if they came from one.
    pub(crate) fn saved_in(&self) -> Option<Saved> {
        self.session().saved_in
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
    /// to the server at all is an error. When the server refuses the token (401) and a
    /// refresh token is kept, the tokens are refreshed once and the request sent again.
    pub(crate) async fn send(&self, request: &Request) -> Result<Answer> {
        let answer = self.send_as(request, self.token().as_deref()).await?;
        if answer.status != StatusCode::UNAUTHORIZED {
            return Ok(answer);
        }
        match self.refresh().await? {
            Some(token) => self.send_as(request, Some(&token)).await,
            None => Ok(answer),
        }
    }

    /// Trades the refresh token (usable once) for new tokens, keeps them, and saves them in
    /// the profile they came from. `None` when there is no refresh token or the server
    /// refuses it; then it is forgotten, so the next command does not try it again.
    pub(crate) async fn refresh(&self) -> Result<Option<String>> {
        let Some(refresh) = self.refresh_token() else {
            return Ok(None);
        };
        let session = self.session();
        let saved_in = session.saved_in;
        let forget = |refused: bool| -> Result<Option<String>> {
            self.set_session(|s| s.refresh_token = None);
            if let Some(saved) = &saved_in
                && refused
            {
                saved.update(|p| {
                    p.token = None;
                    p.refresh_token = None;
                })?;
            }
            Ok(None)
        };
        let tokens = if let Some(oidc) = &session.oidc {
            let client = pangolin_oidc::OAuthClient {
                id: &oidc.client_id,
                secret: None,
            };
            let http = pangolin_oidc::http_client().map_err(|e| {
                CliError::server(format!("refreshing the sign-in of {}: {e}", oidc.issuer))
            })?;
            match pangolin_oidc::refresh(&http, &oidc.token_endpoint, client, &refresh).await {
                Ok(answer) => Tokens {
                    access: answer.access_token,
                    // A provider that does not rotate refresh tokens answers without one.
                    refresh: answer.refresh_token.or(Some(refresh)),
                },
                Err(pangolin_oidc::FlowError::Refused { .. }) => return forget(true),
                Err(error @ pangolin_oidc::FlowError::Unavailable { .. }) => {
                    return Err(CliError::server(format!(
                        "refreshing the sign-in of {}: {error}",
                        oidc.issuer
                    )));
                }
            }
        } else {
            let request = Request::api(Method::POST, &["token", "refresh"])
                .json(serde_json::json!({ "refresh_token": refresh }));
            let answer = self.send_as(&request, None).await?;
            if !answer.status.is_success() {
                return forget(answer.status == StatusCode::UNAUTHORIZED);
            }
            Tokens::from_answer(&answer)?
        };
        self.set_session(|s| {
            s.token = Some(tokens.access.clone());
            s.refresh_token = tokens.refresh.clone();
        });
        if let Some(saved) = &saved_in {
            saved.update(|p| {
                p.token = Some(tokens.access.clone());
                p.refresh_token = tokens.refresh.clone();
            })?;
        }
        Ok(Some(tokens.access))
    }

    /// Sends a request once, with the given bearer token.
    pub(crate) async fn send_as(&self, request: &Request, token: Option<&str>) -> Result<Answer> {
        let url = self.url(request);
        let mut builder = self.http.request(request.method.clone(), url.clone());
        if let Some(token) = token {
            builder = builder.bearer_auth(token);
        }
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
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

    /// Sends a request whose answer (or, with `body`, whose body) may be large: it may take
    /// up to a day instead of the usual timeout, and the answer is returned to be read as it
    /// streams. `body` is asked again when
    /// the token was refreshed and the request is sent a second time. A failure status is an
    /// error with its exit code, as for [`Client::call`].
    pub(crate) async fn open(
        &self,
        request: &Request,
        body: impl Fn() -> Result<Option<(&'static str, reqwest::Body)>>,
    ) -> Result<reqwest::Response> {
        let mut refreshed = false;
        loop {
            let token = self.token();
            let mut builder = self
                .http
                .request(request.method.clone(), self.url(request))
                .timeout(STREAM_TIMEOUT);
            if let Some(token) = &token {
                builder = builder.bearer_auth(token);
            }
            for (name, value) in &request.headers {
                builder = builder.header(*name, value);
            }
            if let Some(json) = &request.body {
                builder = builder.json(json);
            }
            if let Some((content_type, body)) = body()? {
                builder = builder
                    .header(reqwest::header::CONTENT_TYPE, content_type)
                    .body(body);
            }
            let response = builder.send().await.map_err(|e| self.network_error(&e))?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            if status == StatusCode::UNAUTHORIZED && !refreshed && self.refresh().await?.is_some() {
                refreshed = true;
                continue;
            }
            let text = response.text().await.unwrap_or_default();
            let answer = Answer {
                status,
                body: serde_json::from_str(&text).unwrap_or(Value::Null),
                text,
            };
            if status == StatusCode::UNAUTHORIZED && token.is_none() {
                return Err(CliError::auth(
                    "not signed in: sign in with `pangolin login --user NAME`, or pass a \
                     service user's key with --api-key",
                ));
            }
            return Err(status_error(&answer));
        }
    }

    /// Sends a request; any status but success is an error with its exit code.
    pub(crate) async fn call(&self, request: &Request) -> Result<Answer> {
        let answer = self.send(request).await?;
        if answer.status.is_success() {
            Ok(answer)
        } else if answer.status == StatusCode::UNAUTHORIZED && self.token().is_none() {
            Err(CliError::auth(
                "not signed in: sign in with `pangolin login --user NAME`, or pass a service \
                 user's key with --api-key",
            ))
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
        each: impl FnMut(&Answer) -> Result<()>,
    ) -> Result<Vec<Answer>> {
        self.pages_with(Paging::CAMEL, request, field, limit, page_size, each)
            .await
    }

    /// [`Client::pages`] for a route that names its paging parameters `paging`.
    pub(crate) async fn pages_with(
        &self,
        paging: Paging,
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
                .query(paging.size, size.to_string())
                .query_opt(paging.token, token.take());
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
        StatusCode::UNAUTHORIZED => {
            return CliError::auth(format!(
                "the server refused the credentials ({message}): sign in again with \
                 `pangolin login`"
            ));
        }
        StatusCode::FORBIDDEN => {
            return CliError::auth(format!("not allowed: {message}"));
        }
        StatusCode::TOO_MANY_REQUESTS => Exit::Auth,
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
            refresh_token: None,
            saved_in: None,
            oidc: None,
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
        for status in [401, 403, 429] {
            let e = status_error(&answer(status, error(status)));
            assert_eq!(e.exit, Exit::Auth, "{status}");
            assert!(e.message.contains("what went wrong"), "{e}");
        }
        let e = status_error(&answer(401, error(401)));
        assert!(e.message.contains("pangolin login"), "{e}");
        let e = status_error(&answer(502, Value::Null));
        assert_eq!(e.exit, Exit::Server);
        assert!(e.message.contains("502"), "{e}");
    }
}
