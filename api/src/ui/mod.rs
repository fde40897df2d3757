//! The web UI at `/ui`: server-rendered pages over the management API's own handlers, so a
//! page shows exactly what the API would answer the same caller, through the same route layer
//! and the same authorization (every UI route is declared in `security::routes` with the need
//! of the API route it renders). Templates are `maud` (escaping by construction); the one
//! stylesheet is compiled into the binary; pages need no JavaScript.

pub mod admin;
pub mod audit;
pub mod browse;
pub mod catalogs;
pub mod history;
pub mod manage;
pub mod merge;
pub mod merge_requests;
pub mod provider_session;
pub mod provider_sign_in;
pub mod remotes;
pub mod session;
pub mod table;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::{DOCTYPE, Markup, html};

use crate::error::ApiError;
use crate::security::Caller;
use crate::state::AppState;

/// The stylesheet, served at `/ui/style.css`.
const STYLE: &str = include_str!("style.css");

/// The UI's routes; the route layer in front of them is the API's.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(catalogs::index))
        .route("/ui/style.css", get(style))
        .route(
            "/ui/admin/users",
            get(admin::users_page).post(admin::create_user),
        )
        .route("/ui/admin/users/{user}/disabled", post(admin::set_disabled))
        .route(
            "/ui/admin/service-users",
            get(admin::service_users_page).post(admin::create_service_user),
        )
        .route(
            "/ui/admin/service-users/{name}/keys",
            get(admin::keys_page).post(admin::create_key),
        )
        .route(
            "/ui/admin/roles",
            get(admin::roles_page).post(admin::create_role),
        )
        .route("/ui/admin/roles/{role}", get(admin::role_page))
        .route("/ui/admin/roles/{role}/members", post(admin::membership))
        .route(
            "/ui/admin/service-users/{name}/keys/{key}/revoke",
            post(admin::revoke_key),
        )
        .route(
            "/ui/admin/warehouses",
            get(admin::warehouses_page).post(admin::create_warehouse),
        )
        .route("/ui/admin/catalogs", post(admin::create_catalog))
        .route(
            "/ui/admin/tenants",
            get(admin::tenants_page).post(admin::create_tenant),
        )
        .route("/ui/audit", get(audit::log))
        .route("/ui/audit/verify", get(audit::verify))
        .route("/ui/login", get(session::form).post(session::login))
        .route("/ui/login/oidc", get(provider_sign_in::start))
        .route("/ui/login/oidc/callback", get(provider_sign_in::callback))
        .route("/ui/logout", post(session::logout))
        .route("/ui/catalogs/{catalog}", get(catalogs::refs))
        .route("/ui/catalogs/{catalog}/refs", post(manage::create_ref))
        .route(
            "/ui/catalogs/{catalog}/refs/{name}/delete",
            post(manage::delete_ref),
        )
        .route("/ui/catalogs/{catalog}/log", get(history::log))
        .route(
            "/ui/catalogs/{catalog}/commits/{reference}",
            get(history::commit),
        )
        .route("/ui/catalogs/{catalog}/entries", get(browse::entries))
        .route("/ui/catalogs/{catalog}/table", get(table::table))
        .route("/ui/catalogs/{catalog}/compare", get(merge::compare))
        .route("/ui/catalogs/{catalog}/merge", post(merge::merge))
        .route("/ui/catalogs/{catalog}/pick", post(merge::pick))
        .route(
            "/ui/catalogs/{catalog}/merge-requests",
            get(merge_requests::list).post(merge_requests::create),
        )
        .route(
            "/ui/catalogs/{catalog}/merge-requests/{number}",
            get(merge_requests::show),
        )
        .route(
            "/ui/catalogs/{catalog}/merge-requests/{number}/checks",
            post(merge_requests::run_checks),
        )
        .route(
            "/ui/catalogs/{catalog}/merge-requests/{number}/merge",
            post(merge_requests::merge),
        )
        .route(
            "/ui/catalogs/{catalog}/merge-requests/{number}/close",
            post(merge_requests::close),
        )
        .route("/ui/catalogs/{catalog}/remotes", get(remotes::list))
}

async fn style() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        STYLE,
    )
        .into_response()
}

/// What every page's header needs of the request: the session's CSRF token for the sign-out
/// form.
#[derive(Debug, Default)]
pub struct Chrome {
    csrf: String,
}

impl Chrome {
    pub fn of(session: &session::Session) -> Self {
        Self {
            csrf: session.csrf(),
        }
    }

    /// The CSRF token every form of the page carries.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// A whole page: the header with who is signed in, the title and the body.
pub fn page(chrome: &Chrome, title: &str, body: Markup) -> Markup {
    let caller = Caller::current().filter(|_| !chrome.csrf.is_empty());
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Pangolin" }
                link rel="stylesheet" href="/ui/style.css";
            }
            body {
                header {
                    a.brand href="/ui" { "Pangolin" }
                    nav aria-label="Main" { a href="/ui" { "Catalogs" } " · " a href="/ui/audit" { "Audit log" } " · " a href="/ui/admin/users" { "Administration" } }
                    @if let Some(caller) = caller {
                        span.muted { "Signed in as " (caller.name()) }
                        form.inline method="post" action="/ui/logout" {
                            input type="hidden" name="csrf" value=(chrome.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// A refusal or failure as a page with the API's status and message (a 403 says which
/// privilege is missing, as the API's message does).
pub fn error_page(error: &ApiError) -> Response {
    let title = match error.status {
        StatusCode::FORBIDDEN => "Not allowed",
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::BAD_REQUEST => "Bad request",
        StatusCode::UNAUTHORIZED => "Sign in needed",
        _ => "Something went wrong",
    };
    let body = html! {
        div.error role="alert" {
            p { (error.message) }
            p.muted { "HTTP " (error.status.as_u16()) " · " (error.kind) }
        }
        p { a href="/ui" { "Back to the catalogs" } }
    };
    (error.status, page(&Chrome::default(), title, body)).into_response()
}

/// What a form's handler answers: on success, the page to show next (post, redirect, get);
/// otherwise the refusal as a page.
pub fn after<T>(outcome: Result<T, ApiError>, next: &str) -> Response {
    match outcome {
        Ok(_) => axum::response::Redirect::to(next).into_response(),
        Err(error) => error_page(&error),
    }
}

/// A page or its error page.
pub type PageResult = Result<Markup, Response>;

pub fn fail(error: ApiError) -> Response {
    error_page(&error)
}

/// "3 minutes ago" for an RFC 3339 time, with the exact time on hover.
pub fn when(time: &str) -> Markup {
    let relative = time
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| relative(jiff::Timestamp::now().as_second() - t.as_second()));
    html! { time datetime=(time) title=(time) { (relative.unwrap_or_else(|| time.to_owned())) } }
}

fn relative(seconds: i64) -> String {
    let (n, unit) = match seconds.max(0) {
        s if s < 60 => return "just now".to_owned(),
        s if s < 3_600 => (s / 60, "minute"),
        s if s < 86_400 => (s / 3_600, "hour"),
        s if s < 30 * 86_400 => (s / 86_400, "day"),
        s if s < 365 * 86_400 => (s / (30 * 86_400), "month"),
        s => (s / (365 * 86_400), "year"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

/// A "next page" link: the page's own query with the next page token.
pub fn pager(path: &str, query: Option<&str>, next: Option<&str>) -> Markup {
    pager_as("pageToken", path, query, next)
}

/// [`pager`] for listings whose token parameter has another name (`page-token` for the
/// administration API's).
pub fn pager_as(param: &str, path: &str, query: Option<&str>, next: Option<&str>) -> Markup {
    let Some(next) = next else {
        return html! {};
    };
    let mut pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .filter(|(k, _)| k != param)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
    pairs.push((param.to_owned(), next.to_owned()));
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    html! { p.pager { a rel="next" href={ (path) "?" (query) } { "Next page →" } } }
}

/// The first 12 characters of a hash, as the command line shows them.
pub fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// What a path segment or query value keeps as it is: letters, digits and `-._~`.
const URL_SAFE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A path segment or query value, percent-encoded.
pub fn enc(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, URL_SAFE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_read_like_a_person_says_them() {
        assert_eq!(relative(5), "just now");
        assert_eq!(relative(60), "1 minute ago");
        assert_eq!(relative(7_200), "2 hours ago");
        assert_eq!(relative(3 * 86_400), "3 days ago");
    }

    #[test]
    fn text_from_the_catalog_is_escaped() {
        let markup = html! { td { ("<script>alert(1)</script>") } };
        assert_eq!(
            markup.into_string(),
            "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"
        );
    }
}
