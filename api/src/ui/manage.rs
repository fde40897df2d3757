//! Forms that change refs: create a branch or tag, delete one. Each runs the management API's
//! own handler (and so its authorization) after the session's CSRF check, then sends the
//! browser back to the page it came from (post, redirect, get).

use axum::extract::{Form, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::session::Session;
use super::{enc, error_page};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::management::refs::{self, CreateRefRequest, DeleteParams};
use crate::state::AppState;

/// The refusal of a form that did not come from a page of this session.
pub fn csrf_refused() -> Response {
    error_page(&ApiError::new(
        StatusCode::FORBIDDEN,
        "ForbiddenException",
        "the form did not come from this session's page (CSRF check failed); reload the page and try again",
    ))
}

#[derive(Debug, Deserialize)]
pub struct NewRef {
    #[serde(default)]
    csrf: String,
    name: String,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    from: Option<String>,
}

/// `POST /ui/catalogs/{catalog}/refs`: a new branch or tag.
pub async fn create_ref(
    State(state): State<AppState>,
    session: Session,
    PathParams(catalog): PathParams<String>,
    Form(form): Form<NewRef>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let request = CreateRefRequest {
        name: form.name.trim().to_owned(),
        kind: form.kind.filter(|k| !k.is_empty()),
        from: form
            .from
            .map(|f| f.trim().to_owned())
            .filter(|f| !f.is_empty()),
    };
    super::after(
        refs::create(State(state), PathParams(catalog.clone()), JsonBody(request)).await,
        &format!("/ui/catalogs/{}", enc(&catalog)),
    )
}

#[derive(Debug, Deserialize)]
pub struct DeleteRef {
    #[serde(default)]
    csrf: String,
    /// The head the page showed: a ref that moved since is not deleted.
    #[serde(default)]
    expected: Option<String>,
}

/// `POST /ui/catalogs/{catalog}/refs/{name}/delete`: deletes a branch or tag, only if it is
/// still where the page showed it.
pub async fn delete_ref(
    State(state): State<AppState>,
    session: Session,
    PathParams((catalog, name)): PathParams<(String, String)>,
    Form(form): Form<DeleteRef>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let params = DeleteParams::expecting(form.expected.filter(|e| !e.is_empty()));
    super::after(
        refs::delete(
            State(state),
            PathParams((catalog.clone(), name)),
            QueryParams(params),
        )
        .await,
        &format!("/ui/catalogs/{}", enc(&catalog)),
    )
}
