//! Calls of the REST routes with JSON bodies, the parts of an Iceberg error body, and a table
//! schema as clients send it: what the table, management and admin tests all need.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::call;

pub async fn get(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    call(app, Method::GET, uri, None).await
}

pub async fn post(app: &axum::Router, uri: &str, body: Value) -> (StatusCode, Value) {
    call(app, Method::POST, uri, Some(body)).await
}

pub fn error_type(value: &Value) -> &str {
    value["error"]["type"].as_str().unwrap_or_default()
}

pub fn message(value: &Value) -> &str {
    value["error"]["message"].as_str().unwrap_or_default()
}

pub fn schema() -> Value {
    json!({
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "name", "required": false, "type": "string"}
        ]
    })
}
