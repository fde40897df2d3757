//! The bulk loader: catalogs of any size and histories of any depth, written through the
//! catalog layer into the database a server is about to open (never while one runs).
//!
//! A catalog of `n` tables is one real table (`bench.seed`, created as the server creates
//! tables: its metadata file written with `FileIo`) and one catalog commit putting `n` table
//! entries, in [`NAMESPACES`] namespaces, that all point at the seed's metadata file. Tables
//! that share a metadata file are still separate tables to the server: a commit to one writes
//! that table's next file and changes only its entry. History is many small commits through
//! `Catalog::commit`, each with its ref-log entry, exactly as the server writes them.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use pangolin_catalog::iceberg::{FileIo, NewTable};
use pangolin_catalog::{Catalog, CommitMeta, Edits, PlanFuture, RefSpec, Warehouse};
use pangolin_store::{Content, ContentId, ContentKey, Entry, ObjectCache, ObjectId, Odb, tree};
use serde_json::json;
use uuid::Uuid;

use super::backend::Opened;

/// Bulk tables are spread over this many namespaces (`ns_00`...).
pub const NAMESPACES: u64 = 10;
/// The namespace of the tables workloads address by name.
pub const BENCH: &str = "bench";
/// Where `create-table` creates its tables.
pub const MADE: &str = "made";
/// Read by the load workloads; never written.
pub const HOT: &str = "hot";
/// Written by one writer.
pub const ONE: &str = "one";
/// Written by eight writers at once.
pub const SHARED: &str = "shared";
/// Changed on `main` before each merge, so that merges are three-way.
pub const MAIN_SIDE: &str = "main_side";
/// Writers of `commit-8-tables`.
pub const WRITERS: usize = 8;

/// The writer tables: `w0` ... `w7`.
pub fn writer_table(w: usize) -> String {
    format!("w{w}")
}

/// Bulk table `i`: `(namespace, name)`.
pub fn bulk_table(i: u64) -> (String, String) {
    (format!("ns_{:02}", i % NAMESPACES), format!("t_{i:06}"))
}

/// A schema of a few columns, as clients send it.
pub fn schema() -> serde_json::Value {
    json!({
        "type": "struct",
        "schema-id": 0,
        "fields": [
            { "id": 1, "name": "id", "required": true, "type": "long" },
            { "id": 2, "name": "item", "required": false, "type": "string" },
            { "id": 3, "name": "at", "required": false, "type": "timestamptz" },
        ],
    })
}

fn key(levels: &[&str]) -> anyhow::Result<ContentKey> {
    ContentKey::new(levels.iter().copied()).context("a fixture key")
}

fn meta(message: &str) -> CommitMeta {
    CommitMeta {
        principal: "bench".to_owned(),
        message: message.to_owned(),
        properties: BTreeMap::new(),
    }
}

/// The default catalog as the server opens it: tenant `default`, warehouse
/// `<data-dir>/warehouse`.
fn catalog(opened: &Opened, data_dir: &Path) -> anyhow::Result<Catalog> {
    let dir = data_dir.join("warehouse");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = std::fs::canonicalize(&dir)?;
    let warehouse = Warehouse::new(
        format!("file://{}", dir.display()),
        Arc::new(FileIo::new(16 << 20)),
    );
    let cache = Arc::new(ObjectCache::new(512 << 20));
    Ok(Catalog::open(opened.store(), cache, "default", "default")?.with_warehouse(warehouse))
}

/// A plan that puts the same edits whatever the head (the loader is the only writer).
fn put(edits: Edits) -> impl FnMut(Odb, ObjectId) -> PlanFuture<Infallible> {
    let edits = Arc::new(edits);
    move |_, _| {
        let edits = edits.clone();
        Box::pin(async move { Ok(Edits::clone(&edits)) })
    }
}

/// Creates the default catalog with the fixture tables and `tables` bulk tables.
pub async fn load_catalog(opened: &Opened, data_dir: &Path, tables: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    let store = opened.store();
    let cache = Arc::new(ObjectCache::new(64 << 20));
    Catalog::create(store, cache, "default", "default", "bench")
        .await
        .context("creating the catalog")?;
    let catalog = catalog(opened, data_dir)?;
    let main = catalog.default_branch();
    for namespace in [BENCH, MADE] {
        catalog
            .create_namespace(
                &main,
                &key(&[namespace])?,
                BTreeMap::new(),
                &meta("namespace"),
            )
            .await?;
    }
    let seed = key(&[BENCH, "seed"])?;
    let table = NewTable {
        location: String::new(),
        schema: serde_json::from_value(schema())?,
        partition_spec: None,
        sort_order: None,
        properties: BTreeMap::new(),
    };
    catalog
        .create_table(&main, &seed, table, &meta("seed"))
        .await?;
    let head = catalog.resolve(&RefSpec::parse("main")?).await?.commit;
    let tree = catalog.odb().commit(&head).await?.tree;
    let content = tree::get(catalog.odb(), &tree, &seed)
        .await?
        .context("the seed table is in the catalog")?
        .content;

    let table = |levels: &[&str]| -> anyhow::Result<(ContentKey, Option<Entry>)> {
        Ok((key(levels)?, Some(Entry::new(content.clone()))))
    };
    let mut edits = Edits::new();
    for n in 0..NAMESPACES {
        let namespace = Content::Namespace {
            properties: BTreeMap::new(),
        };
        edits.insert(key(&[&format!("ns_{n:02}")])?, Some(Entry::new(namespace)));
    }
    let mut fixtures = vec![HOT.to_owned(), ONE.to_owned(), SHARED.to_owned()];
    fixtures.push(MAIN_SIDE.to_owned());
    fixtures.extend((0..WRITERS).map(writer_table));
    for name in &fixtures {
        let (k, e) = table(&[BENCH, name])?;
        edits.insert(k, e);
    }
    for i in 0..tables {
        let (namespace, name) = bulk_table(i);
        let (k, e) = table(&[&namespace, &name])?;
        edits.insert(k, e);
    }
    catalog
        .commit(&main, &meta(&format!("load {tables} tables")), put(edits))
        .await?;
    eprintln!(
        "   loaded {tables} tables in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Adds commits `from..to` to `main`: each changes one of 16 small entries (`bench.h0`...,
/// generic assets), the smallest change a catalog commit can be.
pub async fn grow_history(
    opened: &Opened,
    data_dir: &Path,
    from: u64,
    to: u64,
) -> anyhow::Result<()> {
    if to <= from {
        return Ok(());
    }
    let started = Instant::now();
    let catalog = catalog(opened, data_dir)?;
    let main = catalog.default_branch();
    let step = ((to - from) / 10).max(1000);
    for i in from..to {
        let slot = i % 16;
        let entry = Entry {
            content_id: ContentId::from_uuid(Uuid::from_u128(u128::from(slot) + 1)),
            content: Content::Generic {
                kind: "bench-history".to_owned(),
                location: format!("file:///bench/history/{i}"),
                properties: BTreeMap::new(),
            },
        };
        let edits = Edits::from([(key(&[BENCH, &format!("h{slot}")])?, Some(entry))]);
        catalog
            .commit(&main, &meta(&format!("history {i}")), put(edits))
            .await?;
        if (i + 1 - from).is_multiple_of(step) {
            eprintln!(
                "   history: {} of {to} commits ({:.0}/s)",
                i + 1,
                (i + 1 - from) as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "   grew history from {from} to {to} commits in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
