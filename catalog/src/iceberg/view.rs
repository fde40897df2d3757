//! Iceberg view metadata: the view `metadata.json` of the view spec, the commit updates and
//! requirements that change it, and the first metadata of a new view.
//!
//! As for tables, the parts the catalog reasons about (ids, versions, the version log) are
//! typed, and everything else a client wrote (schema fields, unknown representations, fields a
//! newer spec adds) is carried through as JSON. The rules follow the spec and the reference
//! implementation: a version identical to a known one reuses its id, `-1` names what this
//! commit added, old versions expire past `version.history.num-entries`, and a replace may not
//! drop a SQL dialect unless `replace.drop-dialect.allowed` says so.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::metadata::Schema;
use super::requirement::RequirementFailed;

/// The only view format version there is.
pub const VIEW_FORMAT_VERSION: u8 = 1;

/// View property: how many versions to keep (at least the current one and those just added).
pub const VERSION_HISTORY_SIZE: &str = "version.history.num-entries";
pub const VERSION_HISTORY_SIZE_DEFAULT: usize = 10;

/// View property: whether a new current version may lack a SQL dialect the old one had.
pub const REPLACE_DROP_DIALECT_ALLOWED: &str = "replace.drop-dialect.allowed";

/// `-1` in an update: what this commit added last.
const LAST_ADDED: i32 = -1;

/// One view's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ViewMetadata {
    pub view_uuid: uuid::Uuid,
    pub format_version: u8,
    pub location: String,
    pub schemas: Vec<Schema>,
    pub current_version_id: i32,
    pub versions: Vec<ViewVersion>,
    #[serde(default)]
    pub version_log: Vec<ViewHistoryEntry>,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// Fields this server does not interpret (a newer spec's), kept as written.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A version of the view's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ViewVersion {
    /// In an `add-view-version` update, `-1` (or any id in use) asks for the next free id.
    pub version_id: i32,
    pub timestamp_ms: i64,
    /// In an `add-view-version` update, `-1` is the schema added earlier in the commit.
    pub schema_id: i32,
    #[serde(default)]
    pub summary: BTreeMap<String, String>,
    pub representations: Vec<ViewRepresentation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_catalog: Option<String>,
    #[serde(default)]
    pub default_namespace: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How the view is defined: `{"type": "sql", "sql": ..., "dialect": ...}`; other types are
/// carried as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewRepresentation {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// When a version became the current one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ViewHistoryEntry {
    pub timestamp_ms: i64,
    pub version_id: i32,
}

impl ViewRepresentation {
    pub const SQL: &'static str = "sql";

    /// A SQL representation.
    pub fn sql(sql: impl Into<String>, dialect: impl Into<String>) -> Self {
        Self {
            kind: Self::SQL.to_owned(),
            sql: Some(sql.into()),
            dialect: Some(dialect.into()),
            extra: Map::new(),
        }
    }

    /// The dialect of a SQL representation, lower-cased as the spec compares dialects.
    pub fn sql_dialect(&self) -> Option<String> {
        (self.kind == Self::SQL)
            .then(|| self.dialect.as_deref().map(str::to_lowercase))
            .flatten()
    }
}

impl ViewVersion {
    /// The SQL dialects of the version, lower-cased.
    pub fn dialects(&self) -> BTreeSet<String> {
        self.representations
            .iter()
            .filter_map(ViewRepresentation::sql_dialect)
            .collect()
    }

    /// Whether two versions define the same view (ids, times and unknown fields aside): adding
    /// one identical to a known version reuses that version.
    pub fn same_definition(&self, other: &ViewVersion) -> bool {
        self.summary == other.summary
            && self.representations == other.representations
            && self.default_catalog == other.default_catalog
            && self.default_namespace == other.default_namespace
            && self.schema_id == other.schema_id
    }
}

impl ViewMetadata {
    pub fn version(&self, id: i32) -> Option<&ViewVersion> {
        self.versions.iter().find(|v| v.version_id == id)
    }

    pub fn current_version(&self) -> Option<&ViewVersion> {
        self.version(self.current_version_id)
    }

    pub fn schema(&self, id: i32) -> Option<&Schema> {
        self.schemas.iter().find(|s| s.schema_id == id)
    }

    /// The schema of the current version.
    pub fn current_schema(&self) -> Option<&Schema> {
        self.current_version()
            .and_then(|v| self.schema(v.schema_id))
    }

    /// Checks that the metadata is whole: a supported format, a location, valid schemas with
    /// unique ids, versions with unique ids whose schemas exist, and a current version.
    pub fn validate(&self) -> Result<(), String> {
        if self.format_version != VIEW_FORMAT_VERSION {
            return Err(format!(
                "view format version {} is not supported (supported: {VIEW_FORMAT_VERSION})",
                self.format_version
            ));
        }
        if self.location.is_empty() {
            return Err("the view has no location".to_owned());
        }
        let mut schema_ids = BTreeSet::new();
        for schema in &self.schemas {
            if !schema_ids.insert(schema.schema_id) {
                return Err(format!("schema id {} is used twice", schema.schema_id));
            }
            schema.check()?;
        }
        let mut version_ids = BTreeSet::new();
        for version in &self.versions {
            if !version_ids.insert(version.version_id) {
                return Err(format!(
                    "view version id {} is used twice",
                    version.version_id
                ));
            }
            if !schema_ids.contains(&version.schema_id) {
                return Err(format!(
                    "view version {}: schema {} is not among the view's schemas",
                    version.version_id, version.schema_id
                ));
            }
        }
        let Some(version) = self.current_version() else {
            return Err(format!(
                "current version {} is not among the view's versions",
                self.current_version_id
            ));
        };
        if self.schema(version.schema_id).is_none() {
            return Err(format!(
                "schema {} of the current version is not among the view's schemas",
                version.schema_id
            ));
        }
        Ok(())
    }
}

/// One update of a view commit. An action this server does not know fails to parse.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ViewUpdate {
    AssignUuid {
        uuid: uuid::Uuid,
    },
    UpgradeFormatVersion {
        #[serde(rename = "format-version")]
        format_version: u8,
    },
    AddSchema {
        schema: Schema,
        /// Deprecated by the spec and meaningless for views; accepted and ignored.
        #[serde(rename = "last-column-id", default)]
        last_column_id: Option<i32>,
    },
    SetLocation {
        location: String,
    },
    SetProperties {
        updates: BTreeMap<String, String>,
    },
    RemoveProperties {
        removals: Vec<String>,
    },
    AddViewVersion {
        #[serde(rename = "view-version")]
        view_version: ViewVersion,
    },
    SetCurrentViewVersion {
        /// `-1`: the version added (or reused) earlier in this commit.
        #[serde(rename = "view-version-id")]
        view_version_id: i32,
    },
}

/// One requirement of a view commit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ViewRequirement {
    AssertViewUuid { uuid: uuid::Uuid },
}

impl ViewRequirement {
    /// Checks the requirement against the view's current metadata.
    pub fn check(&self, current: &ViewMetadata) -> Result<(), RequirementFailed> {
        match self {
            Self::AssertViewUuid { uuid } if *uuid != current.view_uuid => Err(RequirementFailed(
                format!("view uuid is {}, not {uuid}", current.view_uuid),
            )),
            Self::AssertViewUuid { .. } => Ok(()),
        }
    }
}

/// Why a view update cannot be applied: the request is wrong, whatever the view's state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewUpdateError {
    #[error("view format version {0} is not supported (supported: {VIEW_FORMAT_VERSION})")]
    UnsupportedFormatVersion(u8),
    #[error("cannot downgrade the view format version from {from} to {to}")]
    Downgrade { from: u8, to: u8 },
    #[error("cannot reassign the view uuid {current} to {requested}")]
    ReassignUuid {
        current: uuid::Uuid,
        requested: uuid::Uuid,
    },
    #[error("`-1` names the {0} added earlier in this commit, but none was added")]
    NothingAdded(&'static str),
    #[error("there is no {kind} with id {id}")]
    Unknown { kind: &'static str, id: i32 },
    #[error("a view version cannot have two SQL representations for dialect `{0}`")]
    DuplicateDialect(String),
    #[error("a `sql` representation needs both `sql` and `dialect`")]
    IncompleteSql,
    #[error(
        "cannot replace the view: the new version lacks the dialects {missing:?} of the current one (set `{REPLACE_DROP_DIALECT_ALLOWED}` to allow it)"
    )]
    DialectDropped { missing: Vec<String> },
    #[error("the view's location cannot be empty")]
    EmptyLocation,
    #[error("`{VERSION_HISTORY_SIZE}` must be a positive integer, not `{0}`")]
    HistorySize(String),
    /// What the updates ask for breaks a rule of the spec; the message names the field.
    #[error("{0}")]
    Invalid(String),
}

/// Applies updates to a view's metadata, remembering what this commit added so `-1` can name it.
#[derive(Debug)]
pub struct ViewMetadataBuilder {
    meta: ViewMetadata,
    /// The current version before the updates (none for a new view).
    previous: Option<ViewVersion>,
    last_added_schema: Option<i32>,
    last_added_version: Option<i32>,
    added_versions: BTreeSet<i32>,
    /// The version log entry of this commit, when the current version changes.
    history_entry: Option<ViewHistoryEntry>,
}

impl ViewMetadataBuilder {
    /// A builder that changes existing metadata.
    pub fn new(meta: ViewMetadata) -> Self {
        Self {
            previous: meta.current_version().cloned(),
            meta,
            last_added_schema: None,
            last_added_version: None,
            added_versions: BTreeSet::new(),
            history_entry: None,
        }
    }

    /// A builder for a new view: no schemas, no versions yet.
    pub fn blank(view_uuid: uuid::Uuid, location: String) -> Self {
        Self::new(ViewMetadata {
            view_uuid,
            format_version: VIEW_FORMAT_VERSION,
            location,
            schemas: Vec::new(),
            current_version_id: LAST_ADDED,
            versions: Vec::new(),
            version_log: Vec::new(),
            properties: BTreeMap::new(),
            extra: Map::new(),
        })
    }

    pub fn apply_all(
        &mut self,
        updates: &[ViewUpdate],
        now_ms: i64,
    ) -> Result<(), ViewUpdateError> {
        updates.iter().try_for_each(|u| self.apply(u, now_ms))
    }

    pub fn apply(&mut self, update: &ViewUpdate, now_ms: i64) -> Result<(), ViewUpdateError> {
        let meta = &mut self.meta;
        match update {
            ViewUpdate::AssignUuid { uuid } if *uuid != meta.view_uuid => {
                return Err(ViewUpdateError::ReassignUuid {
                    current: meta.view_uuid,
                    requested: *uuid,
                });
            }
            ViewUpdate::AssignUuid { .. } => {}
            ViewUpdate::UpgradeFormatVersion { format_version } => {
                let to = *format_version;
                if to != VIEW_FORMAT_VERSION {
                    return Err(if to < meta.format_version {
                        ViewUpdateError::Downgrade {
                            from: meta.format_version,
                            to,
                        }
                    } else {
                        ViewUpdateError::UnsupportedFormatVersion(to)
                    });
                }
            }
            ViewUpdate::AddSchema { schema, .. } => self.add_schema(schema)?,
            ViewUpdate::SetLocation { location } => {
                let location = location.trim_end_matches('/');
                if location.is_empty() {
                    return Err(ViewUpdateError::EmptyLocation);
                }
                meta.location = location.to_owned();
            }
            ViewUpdate::SetProperties { updates } => {
                meta.properties
                    .extend(updates.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            ViewUpdate::RemoveProperties { removals } => {
                for key in removals {
                    meta.properties.remove(key);
                }
            }
            ViewUpdate::AddViewVersion { view_version } => self.add_version(view_version)?,
            ViewUpdate::SetCurrentViewVersion { view_version_id } => {
                self.set_current_version(*view_version_id, now_ms)?;
            }
        }
        Ok(())
    }

    fn add_schema(&mut self, schema: &Schema) -> Result<(), ViewUpdateError> {
        // Views take every type of the spec: they have no format version of tables to keep.
        schema.check().map_err(ViewUpdateError::Invalid)?;
        let id = Schema::add_or_reuse(&mut self.meta.schemas, schema);
        self.last_added_schema = Some(id);
        Ok(())
    }

    fn add_version(&mut self, version: &ViewVersion) -> Result<(), ViewUpdateError> {
        let mut version = version.clone();
        if version.schema_id == LAST_ADDED {
            version.schema_id = self
                .last_added_schema
                .ok_or(ViewUpdateError::NothingAdded("schema"))?;
        }
        if self.meta.schema(version.schema_id).is_none() {
            return Err(ViewUpdateError::Unknown {
                kind: "schema",
                id: version.schema_id,
            });
        }
        if version.representations.is_empty() {
            return Err(ViewUpdateError::Invalid(format!(
                "view version {}: a version needs at least one representation",
                version.version_id
            )));
        }
        let mut dialects = BTreeSet::new();
        for representation in &version.representations {
            if representation.kind != ViewRepresentation::SQL {
                continue;
            }
            let Some(dialect) = representation.sql_dialect() else {
                return Err(ViewUpdateError::IncompleteSql);
            };
            if representation.sql.is_none() {
                return Err(ViewUpdateError::IncompleteSql);
            }
            if !dialects.insert(dialect.clone()) {
                return Err(ViewUpdateError::DuplicateDialect(dialect));
            }
        }
        let meta = &mut self.meta;
        if let Some(existing) = meta.versions.iter().find(|v| v.same_definition(&version)) {
            self.last_added_version = Some(existing.version_id);
            return Ok(());
        }
        // The id the client asked for, unless it is `-1` or taken: then one above all others.
        let mut id = version.version_id.max(1);
        for known in &meta.versions {
            if known.version_id >= id {
                id = known.version_id + 1;
            }
        }
        version.version_id = id;
        meta.versions.push(version);
        self.added_versions.insert(id);
        self.last_added_version = Some(id);
        Ok(())
    }

    fn set_current_version(&mut self, id: i32, now_ms: i64) -> Result<(), ViewUpdateError> {
        let id = match id {
            LAST_ADDED => self
                .last_added_version
                .ok_or(ViewUpdateError::NothingAdded("view version"))?,
            id => id,
        };
        let meta = &mut self.meta;
        let Some(version) = meta.version(id) else {
            return Err(ViewUpdateError::Unknown {
                kind: "view version",
                id,
            });
        };
        if meta.current_version_id == id {
            return Ok(());
        }
        // A version added by this commit became current when it was made; an older one now.
        let timestamp_ms = if self.added_versions.contains(&id) {
            version.timestamp_ms
        } else {
            now_ms
        };
        meta.current_version_id = id;
        self.history_entry = Some(ViewHistoryEntry {
            timestamp_ms,
            version_id: id,
        });
        Ok(())
    }

    /// The finished metadata: logged, old versions expired, checked whole.
    pub fn build(mut self) -> Result<ViewMetadata, ViewUpdateError> {
        if let Some(entry) = self.history_entry.take() {
            self.meta.version_log.push(entry);
        }
        self.meta.validate().map_err(ViewUpdateError::Invalid)?;
        let meta = &mut self.meta;
        if let (Some(previous), Some(current)) = (&self.previous, meta.current_version())
            && !property_is_true(&meta.properties, REPLACE_DROP_DIALECT_ALLOWED)
        {
            let kept = current.dialects();
            let missing: Vec<String> = previous.dialects().difference(&kept).cloned().collect();
            if !missing.is_empty() {
                return Err(ViewUpdateError::DialectDropped { missing });
            }
        }
        let history_size = match meta.properties.get(VERSION_HISTORY_SIZE) {
            None => VERSION_HISTORY_SIZE_DEFAULT,
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| ViewUpdateError::HistorySize(v.clone()))?,
        };
        let mut keep: BTreeSet<i32> = self.added_versions.clone();
        keep.insert(meta.current_version_id);
        let limit = keep.len().max(history_size);
        if meta.versions.len() > limit {
            // Ids grow with time: keep the current version and the newest others.
            let mut ids: Vec<i32> = meta.versions.iter().map(|v| v.version_id).collect();
            ids.sort_unstable_by(|a, b| b.cmp(a));
            let mut kept = BTreeSet::from([meta.current_version_id]);
            for id in ids {
                if kept.len() >= limit {
                    break;
                }
                kept.insert(id);
            }
            meta.versions.retain(|v| kept.contains(&v.version_id));
            // The log keeps only what follows the last entry naming an expired version.
            let last_gone = meta
                .version_log
                .iter()
                .rposition(|e| !kept.contains(&e.version_id));
            if let Some(last_gone) = last_gone {
                meta.version_log.drain(..=last_gone);
            }
        }
        Ok(self.meta)
    }
}

fn property_is_true(properties: &BTreeMap<String, String>, key: &str) -> bool {
    properties
        .get(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// What a create-view request describes.
#[derive(Debug, Clone, PartialEq)]
pub struct NewView {
    /// Empty: the catalog picks the location.
    pub location: String,
    pub schema: Schema,
    /// Its `schema-id` is ignored: the version uses `schema`. It gets version id 1.
    pub version: ViewVersion,
    pub properties: BTreeMap<String, String>,
}

/// The first metadata of a view: `schema` as schema 0, the version as version 1, current.
pub fn new_view_metadata(
    view: NewView,
    view_uuid: uuid::Uuid,
    now_ms: i64,
) -> Result<ViewMetadata, ViewUpdateError> {
    let location = view.location.trim_end_matches('/').to_owned();
    if location.is_empty() {
        return Err(ViewUpdateError::EmptyLocation);
    }
    let mut builder = ViewMetadataBuilder::blank(view_uuid, location);
    let version = ViewVersion {
        version_id: LAST_ADDED,
        schema_id: LAST_ADDED,
        ..view.version
    };
    builder.apply_all(
        &[
            ViewUpdate::SetProperties {
                updates: view.properties,
            },
            ViewUpdate::AddSchema {
                schema: view.schema,
                last_column_id: None,
            },
            ViewUpdate::AddViewVersion {
                view_version: version,
            },
            ViewUpdate::SetCurrentViewVersion {
                view_version_id: LAST_ADDED,
            },
        ],
        now_ms,
    )?;
    builder.build()
}
