//! What the web UI's tests share: requests as a browser sends them (form bodies, the session
//! cookie), and reading what pages carry (the CSRF token).

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use tower::ServiceExt;

/// Sends a request with optional form body and cookie; returns status, headers and text.
pub async fn fetch(
    app: &axum::Router,
    method: Method,
    uri: &str,
    form: Option<&str>,
    cookie: Option<&str>,
) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::builder().method(method).uri(uri);
    if form.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    let body = form.map_or_else(Body::empty, |f| Body::from(f.to_owned()));
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
}

pub async fn page(app: &axum::Router, uri: &str) -> String {
    let (status, headers, text) = fetch(app, Method::GET, uri, None, None).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {text}");
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{uri}"
    );
    text
}

pub async fn post_json(app: &axum::Router, uri: &str, body: serde_json::Value) {
    let (status, _, value) = super::send(app, Method::POST, uri, Some(body.to_string()), &[]).await;
    assert!(status.is_success(), "{uri}: {status} {value}");
}

/// Posts the sign-in form as a browser does: first the form (its login token and cookie), then
/// `form` with that token.
pub async fn sign_in(app: &axum::Router, form: &str) -> (StatusCode, HeaderMap, String) {
    let (status, headers, page) = fetch(app, Method::GET, "/ui/login", None, None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let token = page
        .split(r#"name="login" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let form = format!("{form}&login={token}");
    fetch(app, Method::POST, "/ui/login", Some(&form), Some(&cookie)).await
}

/// The session cookie a sign-in through the form sets.
pub async fn ui_session(app: &axum::Router, form: &str) -> String {
    let (status, headers, text) = sign_in(app, form).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

pub fn csrf_of(page: &str) -> String {
    page.split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned()
}
