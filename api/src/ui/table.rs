//! One Iceberg table at a reference: its schema, partitioning, order, properties, snapshots
//! and refs, its history in the catalog's log, and how to read it from each client.

use axum::extract::State;
use axum::http::HeaderMap;
use maud::{Markup, html};
use pangolin_catalog::iceberg::TableMetadata;
use pangolin_catalog::iceberg::schema::Schema;
use pangolin_catalog::iceberg::types::{StructType, Type};
use serde::Deserialize;

use super::session::Session;
use super::{Chrome, PageResult, enc, fail, page};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::management::{open, parse_key, parse_spec};
use crate::state::AppState;

/// At most this many snapshots are listed, newest first.
const SNAPSHOTS_SHOWN: usize = 50;

#[derive(Debug, Deserialize)]
pub struct TableParams {
    /// Levels joined by the unit separator, as the API's `key`.
    key: String,
    #[serde(rename = "ref")]
    reference: Option<String>,
}

/// `/ui/catalogs/{catalog}/table?key=&ref=`.
pub async fn table(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<TableParams>,
) -> PageResult {
    let reference = params
        .reference
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| pangolin_catalog::DEFAULT_BRANCH.to_owned());
    let opened = open(&state, &catalog).await.map_err(fail)?;
    let at = parse_spec("ref", &reference).map_err(fail)?;
    let key = parse_key("key", &params.key).map_err(fail)?;
    let loaded = opened
        .load_table(&at, &key)
        .await
        .map_err(|e| fail(ApiError::from(e)))?;
    let meta = &loaded.metadata;
    let dotted = key.to_string();
    let base = format!("/ui/catalogs/{}", enc(&catalog));
    let history = format!(
        "{base}/log?ref={}&key={}",
        enc(&reference),
        enc(&params.key)
    );
    let body = html! {
        p {
            "At " code { (reference) } " in " a href=(base) { (catalog) } ". "
            a href=(history) { "This table's history in the catalog's log" } "."
        }
        table { tbody {
            tr { th scope="row" { "Metadata file" } td { code { (loaded.metadata_location.as_deref().unwrap_or("")) } } }
            tr { th scope="row" { "Location" } td { code { (meta.location) } } }
            tr { th scope="row" { "Format version" } td { (meta.format_version) } }
            tr { th scope="row" { "Table uuid" } td.hash { (meta.table_uuid) } }
        } }
        h2 { "Schema" }
        @match meta.current_schema() {
            Some(schema) => (schema_table(schema)),
            None => p.empty { "The table has no current schema." },
        }
        h2 { "Partitioning" }
        (partitioning(meta))
        h2 { "Sort order" }
        (sort_order(meta))
        h2 { "Properties" }
        @if meta.properties.is_empty() { p.empty { "No properties." } } @else {
            table { tbody { @for (k, v) in &meta.properties { tr { th scope="row" { code { (k) } } td { (v) } } } } }
        }
        h2 { "Snapshots" }
        (snapshots(meta))
        h2 { "Refs" }
        @if meta.refs.is_empty() { p.empty { "No snapshot refs: the table has no data yet." } } @else {
            table {
                thead { tr { th scope="col" { "Name" } th scope="col" { "Type" } th scope="col" { "Snapshot" } } }
                tbody { @for (name, r) in &meta.refs { tr {
                    td { code { (name) } } td { span.badge { (format!("{:?}", r.kind).to_lowercase()) } } td.hash { (r.snapshot_id) }
                } } }
            }
        }
        h2 { "Read it" }
        (snippets(&headers, &catalog, &reference, &key))
    };
    Ok(page(&Chrome::of(&session), &dotted, body))
}

fn schema_table(schema: &Schema) -> Markup {
    let mut rows = Vec::new();
    flatten(&schema.fields, "", &mut rows);
    html! {
        table {
            thead { tr { th scope="col" { "Id" } th scope="col" { "Column" } th scope="col" { "Type" }
                th scope="col" { "Required" } th scope="col" { "Doc" } } }
            tbody { @for (id, path, kind, required, doc) in rows { tr {
                td { (id) } td { code { (path) } } td { code { (kind) } }
                td { @if required { "yes" } @else { span.muted { "no" } } } td { (doc) }
            } } }
        }
        @if let Some(ids) = schema.identifier_field_ids.as_ref().filter(|ids| !ids.is_empty()) {
            p { "Identifier fields: " @for id in ids { code { (id) } " " } }
        }
    }
}

/// Every field with its dotted path, nested fields after their parent.
fn flatten(fields: &StructType, path: &str, out: &mut Vec<(i32, String, String, bool, String)>) {
    for field in &fields.fields {
        let here = if path.is_empty() {
            field.name.clone()
        } else {
            format!("{path}.{}", field.name)
        };
        out.push((
            field.id,
            here.clone(),
            field.field_type.describe(),
            field.required,
            field.doc.clone().unwrap_or_default(),
        ));
        nested(&field.field_type, &here, out);
    }
}

fn nested(kind: &Type, path: &str, out: &mut Vec<(i32, String, String, bool, String)>) {
    match kind {
        Type::Primitive(_) => {}
        Type::Struct(s) => flatten(s, path, out),
        Type::List(l) => nested(&l.element, &format!("{path}.element"), out),
        Type::Map(m) => {
            nested(&m.key, &format!("{path}.key"), out);
            nested(&m.value, &format!("{path}.value"), out);
        }
    }
}

fn column_name(meta: &TableMetadata, id: Option<i32>) -> String {
    let index = meta.current_schema().map(Schema::index);
    id.and_then(|id| index.as_ref()?.get(&id).map(|f| f.path.clone()))
        .unwrap_or_else(|| id.map_or_else(|| "?".to_owned(), |id| format!("column {id}")))
}

fn partitioning(meta: &TableMetadata) -> Markup {
    let Some(spec) = meta.spec(meta.default_spec_id) else {
        return html! { p.empty { "No default partition spec." } };
    };
    html! {
        @if spec.fields.is_empty() { p.empty { "Not partitioned." } } @else {
            table {
                thead { tr { th scope="col" { "Field" } th scope="col" { "Transform" } th scope="col" { "Source" } } }
                tbody { @for field in &spec.fields { tr {
                    td { code { (field.name) } } td { code { (field.transform) } }
                    td { code { (column_name(meta, field.source_id().ok())) } }
                } } }
            }
        }
    }
}

fn sort_order(meta: &TableMetadata) -> Markup {
    let fields = meta
        .sort_order(meta.default_sort_order_id)
        .map(|o| o.fields.clone())
        .unwrap_or_default();
    html! {
        @if fields.is_empty() { p.empty { "Unsorted." } } @else {
            ol { @for field in &fields {
                li {
                    code { (column_name(meta, field["source-id"].as_i64().and_then(|v| i32::try_from(v).ok()))) }
                    " " (field["transform"].as_str().unwrap_or("")) " "
                    (field["direction"].as_str().unwrap_or("")) ", " (field["null-order"].as_str().unwrap_or(""))
                }
            } }
        }
    }
}

fn snapshots(meta: &TableMetadata) -> Markup {
    let mut listed: Vec<_> = meta.snapshots.iter().collect();
    listed.sort_by_key(|s| std::cmp::Reverse(s.timestamp_ms));
    let total = listed.len();
    html! {
        @if listed.is_empty() { p.empty { "No snapshots yet." } } @else {
            table {
                thead { tr { th scope="col" { "Snapshot" } th scope="col" { "Operation" }
                    th scope="col" { "Records added" } th scope="col" { "Data files added" }
                    th scope="col" { "Total records" } th scope="col" { "Committed" } } }
                tbody { @for s in listed.iter().take(SNAPSHOTS_SHOWN) { tr {
                    td.hash { (s.snapshot_id)
                        @if meta.current_snapshot_id == Some(s.snapshot_id) { " " span.badge { "current" } } }
                    td { (s.operation().unwrap_or("")) }
                    td { (s.summary.get("added-records").map_or("", String::as_str)) }
                    td { (s.summary.get("added-data-files").map_or("", String::as_str)) }
                    td { (s.summary.get("total-records").map_or("", String::as_str)) }
                    td { (super::when(&millis_rfc3339(s.timestamp_ms))) }
                } } }
            }
            @if total > SNAPSHOTS_SHOWN { p.muted { "The newest " (SNAPSHOTS_SHOWN) " of " (total) " snapshots." } }
        }
    }
}

fn millis_rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| t.to_string())
}

/// How to read the table at this reference from PyIceberg, Spark SQL and DuckDB.
fn snippets(
    headers: &HeaderMap,
    catalog: &str,
    reference: &str,
    key: &pangolin_store::ContentKey,
) -> Markup {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1:8080");
    let uri = format!("http://{host}");
    let levels: Vec<&str> = key.elements().collect();
    let (namespace, name) = levels.split_at(levels.len().saturating_sub(1));
    let name = name.first().copied().unwrap_or("");
    let at_ref = if reference == pangolin_catalog::DEFAULT_BRANCH {
        name.to_owned()
    } else {
        format!("{name}@{reference}")
    };
    let dotted_ns = namespace.join(".");
    let python = format!(
        "from pyiceberg.catalog.rest import RestCatalog\n\
         catalog = RestCatalog(\"{catalog}\", uri=\"{uri}\", warehouse=\"{catalog}\")\n\
         table = catalog.load_table(\"{dotted_ns}.{at_ref}\")\n\
         print(table.scan().to_arrow())"
    );
    let spark = format!("SELECT * FROM {catalog}.{dotted_ns}.`{at_ref}`");
    let duckdb = format!(
        "INSTALL iceberg; LOAD iceberg;\n\
         ATTACH '{catalog}' AS {catalog} (TYPE iceberg, ENDPOINT '{uri}', AUTHORIZATION_TYPE 'none');\n\
         SELECT * FROM {catalog}.{dotted_ns}.\"{at_ref}\";"
    );
    html! {
        h3 { "PyIceberg" } pre { code { (python) } }
        h3 { "Spark SQL " span.muted { "(an Iceberg REST catalog named " code { (catalog) } ")" } } pre { code { (spark) } }
        h3 { "DuckDB" } pre { code { (duckdb) } }
    }
}
