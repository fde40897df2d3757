//! Administration of the caller's tenant: users, service users and their API keys (a new key's
//! secret shown once), roles with their grants and members, and warehouses (their credentials
//! never shown, only which fields are set). Each page and form runs the administration API's
//! handler, under the same need.

use axum::extract::{Form, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::manage::csrf_refused;
use super::session::Session;
use super::{Chrome, PageResult, enc, error_page, fail, page, pager_as};
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::management::admin::api_keys;
use crate::management::admin::service_users::{self, CreateServiceUser};
use crate::management::admin::users::{self, CreateUser, SetDisabled};
use crate::management::admin::{PageParams, roles, warehouses};
use crate::state::AppState;

fn admin_nav() -> Markup {
    html! {
        nav aria-label="Administration" {
            a href="/ui/admin/users" { "Users" } " · "
            a href="/ui/admin/service-users" { "Service users" } " · "
            a href="/ui/admin/roles" { "Roles" } " · "
            a href="/ui/admin/warehouses" { "Warehouses" } " · "
            a href="/ui/admin/tenants" { "Tenants" } " · "
            a href="/ui/audit" { "Audit log" }
        }
    }
}

/// `/ui/admin/users`: the tenant's users, a form for a new one, and disabling.
pub async fn users_page(
    State(state): State<AppState>,
    session: Session,
    QueryParams(params): QueryParams<PageParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let list = users::list(State(state), QueryParams(params))
        .await
        .map_err(fail)?
        .0;
    let chrome = Chrome::of(&session);
    let body = html! {
        (admin_nav())
        @if list.users.is_empty() { p.empty { "No users in this tenant yet." } } @else {
            table {
                thead { tr { th scope="col" { "User" } th scope="col" { "Administrator" }
                    th scope="col" { "State" } th scope="col" { "Since" } th scope="col" { span.muted { "Change" } } } }
                tbody { @for user in &list.users { tr {
                    td { code { (user.id) } } td { @if user.admin { "yes" } @else { span.muted { "no" } } }
                    td { @if user.disabled { span.badge { "disabled" } } @else { "active" } }
                    td { (super::when(&user.created_at)) }
                    td { form.inline method="post" action={ "/ui/admin/users/" (enc(&user.username)) "/disabled" } {
                        input type="hidden" name="csrf" value=(chrome.csrf());
                        input type="hidden" name="disabled" value=(if user.disabled { "false" } else { "true" });
                        button type="submit" { @if user.disabled { "Enable" } @else { "Disable" } }
                    } }
                } } }
            }
        }
        (pager_as("page-token", "/ui/admin/users", query.as_deref(), list.next_page_token.as_deref()))
        h2 { "New user" }
        form method="post" action="/ui/admin/users" {
            input type="hidden" name="csrf" value=(chrome.csrf());
            label for="username" { "User name" }
            input #username type="text" name="username" required;
            label for="password" { "Password " span.muted { "(12 characters at least)" } }
            input #password type="password" name="password" autocomplete="new-password" required;
            label { input type="checkbox" name="admin" value="true"; " Administrator of the tenant" }
            p { button type="submit" { "Create" } }
        }
    };
    Ok(page(&chrome, "Users", body))
}

#[derive(Deserialize)]
pub struct NewUser {
    #[serde(default)]
    csrf: String,
    username: String,
    password: String,
    #[serde(default)]
    admin: Option<String>,
}

impl std::fmt::Debug for NewUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewUser")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

pub async fn create_user(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<NewUser>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let body = CreateUser {
        username: form.username.trim().to_owned(),
        password: form.password,
        admin: form.admin.is_some(),
    };
    super::after(
        users::create(State(state), JsonBody(body)).await,
        "/ui/admin/users",
    )
}

#[derive(Debug, Deserialize)]
pub struct Disable {
    #[serde(default)]
    csrf: String,
    disabled: bool,
}

pub async fn set_disabled(
    State(state): State<AppState>,
    session: Session,
    PathParams(user): PathParams<String>,
    Form(form): Form<Disable>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let body = SetDisabled {
        disabled: form.disabled,
    };
    super::after(
        users::set_disabled(State(state), PathParams(user), JsonBody(body)).await,
        "/ui/admin/users",
    )
}

/// `/ui/admin/service-users`: the tenant's service users and a form for a new one.
pub async fn service_users_page(
    State(state): State<AppState>,
    session: Session,
    QueryParams(params): QueryParams<PageParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let list = service_users::list(State(state), QueryParams(params))
        .await
        .map_err(fail)?
        .0;
    let chrome = Chrome::of(&session);
    let body = html! {
        (admin_nav())
        @if list.service_users.is_empty() { p.empty { "No service users in this tenant yet." } } @else {
            table {
                thead { tr { th scope="col" { "Service user" } th scope="col" { "State" } th scope="col" { "Keys" } } }
                tbody { @for service in &list.service_users { tr {
                    td { code { (service.id) } }
                    td { @if service.disabled { span.badge { "disabled" } } @else { "active" } }
                    td { a href={ "/ui/admin/service-users/" (enc(&service.name)) "/keys" } { "API keys" } }
                } } }
            }
        }
        (pager_as("page-token", "/ui/admin/service-users", query.as_deref(), list.next_page_token.as_deref()))
        h2 { "New service user" }
        form method="post" action="/ui/admin/service-users" {
            input type="hidden" name="csrf" value=(chrome.csrf());
            label for="name" { "Name" }
            input #name type="text" name="name" required;
            p { button type="submit" { "Create" } }
        }
    };
    Ok(page(&chrome, "Service users", body))
}

#[derive(Debug, Deserialize)]
pub struct NewServiceUser {
    #[serde(default)]
    csrf: String,
    name: String,
}

pub async fn create_service_user(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<NewServiceUser>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let body = CreateServiceUser {
        name: form.name.trim().to_owned(),
    };
    super::after(
        service_users::create(State(state), JsonBody(body)).await,
        "/ui/admin/service-users",
    )
}

/// `/ui/admin/service-users/{name}/keys`: a service user's keys (never their secrets).
pub async fn keys_page(
    State(state): State<AppState>,
    session: Session,
    PathParams(service): PathParams<String>,
) -> PageResult {
    let list = api_keys::list(State(state), PathParams(service.clone()))
        .await
        .map_err(fail)?
        .0;
    let chrome = Chrome::of(&session);
    let body = html! {
        (admin_nav())
        @if list.keys.is_empty() { p.empty { "No keys yet." } } @else {
            table {
                thead { tr { th scope="col" { "Key id" } th scope="col" { "Created" }
                    th scope="col" { "Expires" } th scope="col" { "Revoked" } th scope="col" { "Last used" }
                    th scope="col" { span.muted { "Revoke" } } } }
                tbody { @for key in &list.keys { tr {
                    td { code { (key.id) } } td { (super::when(&key.created_at)) }
                    td { (key.expires_at.clone().unwrap_or_else(|| "never".to_owned())) }
                    td { (key.revoked_at.clone().unwrap_or_default()) }
                    td { (key.last_used_at.clone().unwrap_or_default()) }
                    td { @if key.revoked_at.is_none() {
                        form.inline method="post" action={ "/ui/admin/service-users/" (enc(&service)) "/keys/" (enc(&key.id)) "/revoke" } {
                            input type="hidden" name="csrf" value=(chrome.csrf());
                            button type="submit" aria-label={ "Revoke key " (key.id) } { "Revoke" }
                        }
                    } }
                } } }
            }
        }
        form method="post" action={ "/ui/admin/service-users/" (enc(&service)) "/keys" } {
            input type="hidden" name="csrf" value=(chrome.csrf());
            p { button type="submit" { "Create a key" } }
        }
    };
    Ok(page(&chrome, &format!("API keys of {service}"), body))
}

#[derive(Debug, Deserialize)]
pub struct NewKey {
    #[serde(default)]
    csrf: String,
}

/// Creates a key and shows its secret, this once: the page is not cached and nothing else ever
/// shows the secret again.
pub async fn create_key(
    State(state): State<AppState>,
    session: Session,
    PathParams(service): PathParams<String>,
    Form(form): Form<NewKey>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    // An empty body: a key that does not expire, as the API's default.
    match api_keys::create(
        State(state),
        PathParams(service.clone()),
        bytes::Bytes::new(),
    )
    .await
    {
        Ok((_, created)) => {
            let created = created.0;
            let body = html! {
                (admin_nav())
                div role="status" {
                    p { "The key of " code { (service) } ". Copy it now: it is shown this once and never again." }
                    pre { code { (created.key) } }
                    p.muted { "For the OAuth2 client-credentials flow: client id " code { (created.client_id) } "." }
                }
                p { a href={ "/ui/admin/service-users/" (enc(&service)) "/keys" } { "Back to the keys" } }
            };
            (
                StatusCode::CREATED,
                [(axum::http::header::CACHE_CONTROL, "no-store")],
                page(&Chrome::of(&session), "New API key", body),
            )
                .into_response()
        }
        Err(error) => error_page(&error),
    }
}

/// `/ui/admin/roles`: the tenant's roles and their grants.
pub async fn roles_page(
    State(state): State<AppState>,
    session: Session,
    QueryParams(params): QueryParams<PageParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let list = roles::list(State(state), QueryParams(params))
        .await
        .map_err(fail)?
        .0;
    let chrome = Chrome::of(&session);
    let body = html! {
        (admin_nav())
        @if list.roles.is_empty() { p.empty { "No roles in this tenant yet." } } @else {
            table {
                thead { tr { th scope="col" { "Role" } th scope="col" { "Grants" } th scope="col" { "State" } } }
                tbody { @for role in &list.roles { tr {
                    td { a href={ "/ui/admin/roles/" (enc(&role.name)) } { code { (role.name) } } }
                    td { ul.changes { @for grant in &role.grants {
                        li { (serde_json::to_string(grant).unwrap_or_default()) }
                    } } }
                    td { @if role.disabled { span.badge { "disabled" } } @else { "active" } }
                } } }
            }
        }
        (pager_as("page-token", "/ui/admin/roles", query.as_deref(), list.next_page_token.as_deref()))
        h2 { "New role" }
        form method="post" action="/ui/admin/roles" {
            input type="hidden" name="csrf" value=(chrome.csrf());
            label for="name" { "Name" }
            input #name type="text" name="name" required;
            label for="grants" { "Grants " span.muted { "(JSON, as the API takes them)" } }
            textarea #grants name="grants" rows="4" cols="70" required {
                r#"[{"privilege": "read", "resource": {"type": "catalog", "catalog": "lake"}}]"#
            }
            p { button type="submit" { "Create" } }
        }
        p.muted { "Every grant is checked against what you may grant yourself." }
    };
    Ok(page(&chrome, "Roles", body))
}

/// `/ui/admin/warehouses`: where each warehouse keeps its files, and which credential fields
/// are set (never their values).
pub async fn warehouses_page(
    State(state): State<AppState>,
    session: Session,
    QueryParams(params): QueryParams<PageParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let list = warehouses::list(State(state), QueryParams(params))
        .await
        .map_err(fail)?
        .0;
    let chrome = Chrome::of(&session);
    let body = html! {
        (admin_nav())
        @if list.warehouses.is_empty() { p.empty { "No warehouses in this tenant yet." } } @else {
            table {
                thead { tr { th scope="col" { "Warehouse" } th scope="col" { "Storage" } th scope="col" { "Credentials" } } }
                tbody { @for warehouse in &list.warehouses { tr {
                    td { code { (warehouse.name) } }
                    td { code { (serde_json::to_string(&warehouse.storage).unwrap_or_default()) } }
                    td { (serde_json::to_string(&warehouse.credentials).unwrap_or_default()) }
                } } }
            }
        }
        (pager_as("page-token", "/ui/admin/warehouses", query.as_deref(), list.next_page_token.as_deref()))
        h2 { "New warehouse" }
        form method="post" action="/ui/admin/warehouses" {
            input type="hidden" name="csrf" value=(chrome.csrf());
            label for="name" { "Name" }
            input #name type="text" name="name" required;
            label for="storage" { "Storage " span.muted { "(JSON, as the API takes it)" } }
            textarea #storage name="storage" rows="2" cols="70" required { r#"{"type": "local", "root": "/srv/lake"}"# }
            label for="credentials" { "Credentials " span.muted { "(JSON; stored encrypted, never shown again)" } }
            textarea #credentials name="credentials" rows="2" cols="70" {}
            p { button type="submit" { "Create" } }
        }
        h2 { "New catalog" }
        form method="post" action="/ui/admin/catalogs" {
            input type="hidden" name="csrf" value=(chrome.csrf());
            label for="catalog" { "Name" }
            input #catalog type="text" name="name" required;
            label for="warehouse" { "Warehouse" }
            input #warehouse type="text" name="warehouse" required;
            p { button type="submit" { "Create" } }
        }
    };
    Ok(page(&chrome, "Warehouses and catalogs", body))
}

/// `/ui/admin/tenants`: the deployment's tenants (root only, as in the API).
pub async fn tenants_page(
    State(state): State<AppState>,
    session: Session,
    QueryParams(params): QueryParams<PageParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let list = crate::management::admin::tenants::list(State(state), QueryParams(params))
        .await
        .map_err(fail)?
        .0;
    let chrome = Chrome::of(&session);
    let body = html! {
        (admin_nav())
        @if list.tenants.is_empty() { p.empty { "No tenants." } } @else {
            table {
                thead { tr { th scope="col" { "Tenant" } th scope="col" { "Description" } th scope="col" { "Created" } } }
                tbody { @for tenant in &list.tenants { tr {
                    td { code { (tenant.name) } }
                    td { (tenant.description.clone().unwrap_or_default()) }
                    td { (super::when(&tenant.created_at)) }
                } } }
            }
        }
        (pager_as("page-token", "/ui/admin/tenants", query.as_deref(), list.next_page_token.as_deref()))
        h2 { "New tenant" }
        form method="post" action="/ui/admin/tenants" {
            input type="hidden" name="csrf" value=(chrome.csrf());
            label for="name" { "Name" }
            input #name type="text" name="name" required;
            label for="description" { "Description" }
            input #description type="text" name="description";
            label for="admin" { "First administrator " span.muted { "(optional)" } }
            input #admin type="text" name="admin";
            label for="password" { "Their password" }
            input #password type="password" name="password" autocomplete="new-password";
            p { button type="submit" { "Create" } }
        }
    };
    Ok(page(&chrome, "Tenants", body))
}

#[derive(Debug, Deserialize)]
pub struct NewRole {
    #[serde(default)]
    csrf: String,
    name: String,
    /// The grants as the API takes them: a JSON list of `{"privilege", "resource", "branches"?}`.
    grants: String,
}

/// `POST /ui/admin/roles`: a new role, through the API's handler and its anti-escalation checks.
pub async fn create_role(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<NewRole>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let body = serde_json::json!({"name": form.name.trim(), "grants": serde_json::from_str::<serde_json::Value>(&form.grants)
        .unwrap_or(serde_json::Value::String(form.grants.clone()))});
    let request = match serde_json::from_value::<roles::CreateRole>(body) {
        Ok(request) => request,
        Err(e) => {
            return error_page(&crate::error::ApiError::bad_request(format!(
                "the grants must be a JSON list of {{\"privilege\", \"resource\", \"branches\"?}}: {e}"
            )));
        }
    };
    super::after(
        roles::create(State(state), JsonBody(request)).await,
        "/ui/admin/roles",
    )
}

/// `/ui/admin/roles/{role}`: who the role is bound to, and forms to bind and unbind.
pub async fn role_page(
    State(state): State<AppState>,
    session: Session,
    PathParams(role): PathParams<String>,
    QueryParams(params): QueryParams<PageParams>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let members = roles::members(State(state), PathParams(role.clone()), QueryParams(params))
        .await
        .map_err(fail)?
        .0;
    let chrome = Chrome::of(&session);
    let action = format!("/ui/admin/roles/{}/members", enc(&role));
    let body = html! {
        (admin_nav())
        @if members.members.is_empty() { p.empty { "The role is bound to no one." } } @else {
            table {
                thead { tr { th scope="col" { "Member" } th scope="col" { span.muted { "Remove" } } } }
                tbody { @for member in &members.members { tr {
                    td { code { (member) } }
                    td { form.inline method="post" action=(action) {
                        input type="hidden" name="csrf" value=(chrome.csrf());
                        input type="hidden" name="principal" value=(member);
                        input type="hidden" name="bind" value="false";
                        button type="submit" aria-label={ "Unbind " (member) } { "Unbind" }
                    } }
                } } }
            }
        }
        (pager_as("page-token", &format!("/ui/admin/roles/{}", enc(&role)), query.as_deref(), members.next_page_token.as_deref()))
        h2 { "Bind the role" }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(chrome.csrf());
            input type="hidden" name="bind" value="true";
            label for="principal" { "Principal " span.muted { "(user:acme/ana, service:acme/etl)" } }
            input #principal type="text" name="principal" required;
            p { button type="submit" { "Bind" } }
        }
    };
    Ok(page(&chrome, &format!("Role {role}"), body))
}

#[derive(Debug, Deserialize)]
pub struct Membership {
    #[serde(default)]
    csrf: String,
    principal: String,
    bind: bool,
}

/// `POST /ui/admin/roles/{role}/members`: binds or unbinds a principal.
pub async fn membership(
    State(state): State<AppState>,
    session: Session,
    PathParams(role): PathParams<String>,
    Form(form): Form<Membership>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let path = PathParams((role.clone(), form.principal.trim().to_owned()));
    let outcome = if form.bind {
        roles::bind(State(state), path).await
    } else {
        roles::unbind(State(state), path).await
    };
    match outcome {
        Ok(_) => Redirect::to(&format!("/ui/admin/roles/{}", enc(&role))).into_response(),
        Err(error) => error_page(&error),
    }
}

#[derive(Debug, Deserialize)]
pub struct Revoke {
    #[serde(default)]
    csrf: String,
}

/// `POST /ui/admin/service-users/{name}/keys/{key}/revoke`: the key stops working now.
pub async fn revoke_key(
    State(state): State<AppState>,
    session: Session,
    PathParams((service, key)): PathParams<(String, String)>,
    Form(form): Form<Revoke>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    super::after(
        api_keys::revoke(State(state), PathParams((service.clone(), key))).await,
        &format!("/ui/admin/service-users/{}/keys", enc(&service)),
    )
}

/// A request body for an administration API handler, from a form's fields put together as
/// JSON; a body the API would refuse to parse is a page that says why.
fn request<T: serde::de::DeserializeOwned>(
    body: serde_json::Value,
) -> Result<T, crate::error::ApiError> {
    serde_json::from_value(body).map_err(|e| crate::error::ApiError::bad_request(format!("{e}")))
}

/// A JSON form field, or the text itself when it is not JSON (the API then says what is wrong).
fn json_field(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
}

#[derive(Deserialize)]
pub struct NewWarehouse {
    #[serde(default)]
    csrf: String,
    name: String,
    storage: String,
    #[serde(default)]
    credentials: String,
}

impl std::fmt::Debug for NewWarehouse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewWarehouse")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// `POST /ui/admin/warehouses`: a new warehouse; its credentials are stored encrypted and never
/// shown again.
pub async fn create_warehouse(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<NewWarehouse>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let mut body =
        serde_json::json!({"name": form.name.trim(), "storage": json_field(&form.storage)});
    if !form.credentials.trim().is_empty() {
        body["credentials"] = json_field(&form.credentials);
    }
    let body = match request(body) {
        Ok(body) => body,
        Err(error) => return error_page(&error),
    };
    super::after(
        warehouses::create(State(state), JsonBody(body)).await,
        "/ui/admin/warehouses",
    )
}

#[derive(Debug, Deserialize)]
pub struct NewCatalog {
    #[serde(default)]
    csrf: String,
    name: String,
    warehouse: String,
}

/// `POST /ui/admin/catalogs`: a new catalog on a warehouse of the tenant.
pub async fn create_catalog(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<NewCatalog>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let body = match request(serde_json::json!({
        "name": form.name.trim(), "warehouse": form.warehouse.trim()
    })) {
        Ok(body) => body,
        Err(error) => return error_page(&error),
    };
    super::after(
        crate::management::admin::catalogs::create(State(state), JsonBody(body)).await,
        &format!("/ui/catalogs/{}", enc(form.name.trim())),
    )
}

#[derive(Deserialize)]
pub struct NewTenant {
    #[serde(default)]
    csrf: String,
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    admin: String,
    #[serde(default)]
    password: String,
}

impl std::fmt::Debug for NewTenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewTenant")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// `POST /ui/admin/tenants` (root): a new tenant, with its first administrator when named.
pub async fn create_tenant(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<NewTenant>,
) -> Response {
    if !session.accepts(&form.csrf) {
        return csrf_refused();
    }
    let mut body = serde_json::json!({"name": form.name.trim()});
    if !form.description.trim().is_empty() {
        body["description"] = form.description.trim().into();
    }
    if !form.admin.trim().is_empty() {
        body["admin"] =
            serde_json::json!({"username": form.admin.trim(), "password": form.password});
    }
    let body = match request(body) {
        Ok(body) => body,
        Err(error) => return error_page(&error),
    };
    super::after(
        crate::management::admin::tenants::create(State(state), JsonBody(body)).await,
        "/ui/admin/tenants",
    )
}
