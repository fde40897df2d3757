//! What the view tests share: the JSON of a view as PyIceberg sends it, the metadata made from
//! it, and views created in a `lake::Lake`.

pub use pangolin_catalog::iceberg::view::{ViewHistoryEntry, ViewRepresentation};
pub use pangolin_catalog::iceberg::{
    NewView, ViewMetadata, ViewMetadataBuilder, ViewRequirement, ViewUpdate, ViewUpdateError,
    ViewVersion, new_view_metadata,
};
pub use pangolin_catalog::{LoadedView, ViewError};

use super::lake::{Catalog, CommitError, Reference, Value, json, key, meta};

pub const NOW: i64 = 1_767_225_600_000;
pub const UUID: &str = "fa6506c3-7681-40c8-86dc-e36561f83385";

/// The schema of a view as PyIceberg sends it (`identifier-field-ids: []`, fields in its order).
pub fn pyiceberg_schema() -> Value {
    json!({"type": "struct", "fields": [
        {"id": 1, "name": "id", "type": "long", "required": true},
        {"id": 2, "name": "name", "type": "string", "required": false}
    ], "schema-id": 0, "identifier-field-ids": []})
}

/// PyIceberg 0.12's `CreateViewRequest` body, as `create_view` sends it (no location).
pub fn pyiceberg_create_request() -> Value {
    json!({
        "name": "daily",
        "schema": pyiceberg_schema(),
        "view-version": {
            "version-id": 1, "schema-id": 0, "timestamp-ms": 1_767_225_000_000_i64,
            "summary": {},
            "representations": [{"type": "sql", "sql": "SELECT id, name FROM db.t", "dialect": "spark"}],
            "default-namespace": ["db"]
        },
        "properties": {"owner": "ana"}
    })
}

pub fn new_view(request: &Value, location: &str) -> NewView {
    NewView {
        location: location.to_owned(),
        schema: serde_json::from_value(request["schema"].clone()).unwrap(),
        version: serde_json::from_value(request["view-version"].clone()).unwrap(),
        properties: serde_json::from_value(request["properties"].clone()).unwrap(),
    }
}

pub fn created(request: &Value) -> ViewMetadata {
    new_view_metadata(
        new_view(request, "s3://b/db/daily/"),
        UUID.parse().unwrap(),
        NOW,
    )
    .unwrap()
}

pub async fn create(catalog: &Catalog, at: &Reference, name: &str) -> LoadedView {
    catalog
        .create_view(
            at,
            &key(name),
            new_view(&pyiceberg_create_request(), ""),
            &meta("create view"),
        )
        .await
        .unwrap()
        .1
}

pub fn rejected(err: CommitError<ViewError>) -> ViewError {
    match err {
        CommitError::Rejected(e) => e,
        other => panic!("not a refusal: {other}"),
    }
}
