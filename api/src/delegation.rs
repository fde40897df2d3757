//! Delegated storage access in table answers: when a client asks for it with
//! `X-Iceberg-Access-Delegation`, credentials for the table's own files (STS keys for its S3
//! prefixes, SAS tokens for its Azure directories, downscoped OAuth tokens for its GCS
//! prefixes), read-only or read-write as the caller's
//! privileges on the table and branch allow, or the settings of the remote signer; and the
//! signing route itself. Each credential is audited once per principal, without the secret.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use pangolin_catalog::authz::Privilege;
use pangolin_catalog::iceberg::TableMetadata;
use pangolin_catalog::{Catalog, RefSpec, TableError, Warehouse};
use pangolin_delegation::Access;
use pangolin_delegation::azure::{AdlsDirectory, SasSigner};
use pangolin_delegation::gcs::{Downscoper, GcsPrefix, TokenError};
use pangolin_delegation::s3::sign::{SignError, SignRequest, Signed};
use pangolin_delegation::s3::{S3Prefix, VendError};
use pangolin_records::Outcome;
use pangolin_store::ContentKey;
use serde::Serialize;

use crate::address::address;
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::security::{Caller, audit, resource};
use crate::state::AppState;
use crate::ui::enc;

/// The header in which clients list the mechanisms they support.
pub const HEADER: &str = "x-iceberg-access-delegation";

/// Which mechanisms a client said it supports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requested {
    pub vended_credentials: bool,
    pub remote_signing: bool,
}

impl Requested {
    /// From the comma-separated header (it may come more than once); values it does not know
    /// are ignored, as the protocol lets a server supply none of what is asked.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let mut requested = Self::default();
        for value in headers.get_all(HEADER) {
            let Ok(value) = value.to_str() else { continue };
            for mechanism in value.split(',').map(str::trim) {
                if mechanism.eq_ignore_ascii_case("vended-credentials") {
                    requested.vended_credentials = true;
                } else if mechanism.eq_ignore_ascii_case("remote-signing") {
                    requested.remote_signing = true;
                }
            }
        }
        requested
    }

    pub fn any(self) -> bool {
        self.vended_credentials || self.remote_signing
    }
}

/// One entry of `storage-credentials`: what a client uses for files below `prefix`.
#[derive(Debug, Clone, Serialize)]
pub struct StorageCredential {
    pub prefix: String,
    pub config: BTreeMap<String, String>,
}

/// What a table answer carries when access is delegated: keys to add to its `config` (older
/// clients and staged creates read only that) and its `storage-credentials`.
#[derive(Debug, Default)]
pub struct Delegated {
    pub config: BTreeMap<String, String>,
    pub storage_credentials: Vec<StorageCredential>,
}

/// How the access level of a hand-out is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// The caller just created or registered the table: it may write it.
    Creator,
    /// By the caller's privileges on the table at the reference it was loaded at: read-write
    /// with `Write` at a branch head, read-only otherwise (tags, commits, times).
    Privileges,
}

/// Whether `catalog`'s warehouse vends what `requested` asks for from a token service (which
/// may refuse, so a create asks before the table exists).
pub fn vends(catalog: &Catalog, requested: Requested) -> bool {
    requested.vended_credentials
        && catalog.warehouse().is_ok_and(|w| {
            w.delegation()
                .is_some_and(|d| d.vendor.is_some() || d.gcs.is_some())
        })
}

/// The delegated access for table `key` with `metadata` at `at`, when the client asked for a
/// mechanism the warehouse offers; `None` otherwise (nothing asked, nothing offered, no file
/// location of the table inside the warehouse). Vended credentials are preferred to remote
/// signing when both are asked and offered.
#[tracing::instrument(level = "debug", skip_all, fields(table = %key))]
pub async fn for_table(
    state: &AppState,
    catalog: &Catalog,
    key: &ContentKey,
    at: &RefSpec,
    metadata: &TableMetadata,
    grant: Grant,
    requested: Requested,
) -> Result<Option<Delegated>, ApiError> {
    let Ok(warehouse) = catalog.warehouse() else {
        return Ok(None);
    };
    let Some(delegation) = warehouse.delegation() else {
        return Ok(None);
    };
    let locations = file_locations(metadata);
    let caller = Caller::current();
    let table = (catalog, key, at);
    if requested.vended_credentials
        && let Some(signer) = &delegation.sas
    {
        let access = access(state, table, grant, caller.as_ref()).await?;
        let azure = (warehouse, signer.as_ref());
        let caller = caller.as_ref();
        return sas_tokens(state, table, caller, azure, &locations, access).await;
    }
    if requested.vended_credentials
        && let Some(downscoper) = &delegation.gcs
    {
        let prefixes = inside(warehouse, &locations, GcsPrefix::parse);
        if prefixes.is_empty() {
            return Ok(None);
        }
        let access = access(state, table, grant, caller.as_ref()).await?;
        let gcs = (warehouse, downscoper.as_ref());
        return gcs_token(state, table, caller.as_ref(), gcs, &prefixes, access).await;
    }
    let prefixes = prefixes(warehouse, &locations);
    if prefixes.is_empty() {
        return Ok(None);
    }
    if requested.vended_credentials
        && let Some(vendor) = &delegation.vendor
    {
        let access = access(state, table, grant, caller.as_ref()).await?;
        let vended = vendor.vend(&prefixes, access).await.map_err(vend_error)?;
        let hand_out = HandOut {
            access,
            expires_at: vended.expires_at,
            prefixes: prefixes.iter().map(S3Prefix::url).collect(),
            key_id: Some(vended.access_key_id.clone()),
            credential: &vended.access_key_id,
        };
        audit_hand_out(state, table, caller.as_ref(), hand_out).await;
        let keys = BTreeMap::from([
            ("s3.access-key-id".to_owned(), vended.access_key_id.clone()),
            (
                "s3.secret-access-key".to_owned(),
                vended.secret_access_key.expose().to_owned(),
            ),
            (
                "s3.session-token".to_owned(),
                vended.session_token.expose().to_owned(),
            ),
            (
                "s3.session-token-expires-at-ms".to_owned(),
                pangolin_delegation::epoch_ms(vended.expires_at).to_string(),
            ),
        ]);
        let urls: Vec<String> = prefixes.iter().map(S3Prefix::url).collect();
        return Ok(Some(with_credentials(warehouse, keys, &urls)));
    }
    if requested.remote_signing && delegation.signer.is_some() {
        let mut config = warehouse.client_config().clone();
        config.insert("s3.remote-signing-enabled".to_owned(), "true".to_owned());
        // PyIceberg's signer; its endpoint relative to the catalog's URI, as PyIceberg and
        // the Java client both resolve it.
        config.insert("s3.signer".to_owned(), "S3V4RestSigner".to_owned());
        config.insert("s3.signer.endpoint".to_owned(), sign_path(catalog, key, at));
        // PyArrow's file access cannot sign remotely; fsspec's can.
        config.insert(
            "py-io-impl".to_owned(),
            "pyiceberg.io.fsspec.FsspecFileIO".to_owned(),
        );
        return Ok(Some(Delegated {
            config,
            storage_credentials: Vec::new(),
        }));
    }
    Ok(None)
}

/// SAS tokens for each of the table's directories in the warehouse (Azure), in
/// `adls.sas-token.<account host>` as the Java and Python clients read them.
async fn sas_tokens(
    state: &AppState,
    table: (&Catalog, &ContentKey, &RefSpec),
    caller: Option<&Caller>,
    (warehouse, signer): (&Warehouse, &SasSigner),
    locations: &[String],
    access: Access,
) -> Result<Option<Delegated>, ApiError> {
    // In the order of `locations` (the table's own location first), each once.
    let mut seen = BTreeSet::new();
    let directories: Vec<AdlsDirectory> = locations
        .iter()
        .filter(|l| warehouse.contains(l))
        .filter_map(|l| AdlsDirectory::parse(l))
        .filter(|d| seen.insert(d.clone()))
        .collect();
    let Some(first) = directories.first() else {
        return Ok(None);
    };
    let now = SystemTime::now();
    let mut expires_at = now + signer.lifetime();
    let mut storage_credentials = Vec::new();
    let mut config = warehouse.client_config().clone();
    for directory in &directories {
        let sas = signer.directory_sas(directory, access, now).map_err(|e| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailableException",
                format!("no SAS token could be signed: {e}"),
            )
        })?;
        expires_at = expires_at.min(sas.expires_at);
        let expires_ms = pangolin_delegation::epoch_ms(sas.expires_at).to_string();
        let entries = [
            (
                format!("adls.sas-token.{}", directory.host()),
                sas.token.expose().to_owned(),
            ),
            (
                format!("adls.sas-token-expires-at-ms.{}", directory.host()),
                expires_ms,
            ),
        ];
        // `config` holds one token per account: the table location's.
        if directory == first {
            config.extend(entries.iter().cloned());
        }
        storage_credentials.push(StorageCredential {
            prefix: directory.url(),
            config: entries.into_iter().collect(),
        });
    }
    let credential: String = storage_credentials
        .iter()
        .flat_map(|c| c.config.values())
        .cloned()
        .collect();
    let hand_out = HandOut {
        access,
        expires_at,
        prefixes: directories.iter().map(AdlsDirectory::url).collect(),
        key_id: None,
        credential: &credential,
    };
    audit_hand_out(state, table, caller, hand_out).await;
    Ok(Some(Delegated {
        config,
        storage_credentials,
    }))
}

/// A token downscoped to the table's GCS prefixes, in `gcs.oauth2.token` and
/// `gcs.oauth2.token-expires-at` (milliseconds), as the Java and Python clients read them.
async fn gcs_token(
    state: &AppState,
    table: (&Catalog, &ContentKey, &RefSpec),
    caller: Option<&Caller>,
    (warehouse, downscoper): (&Warehouse, &Downscoper),
    prefixes: &[GcsPrefix],
    access: Access,
) -> Result<Option<Delegated>, ApiError> {
    let token = downscoper
        .token(prefixes, access)
        .await
        .map_err(token_error)?;
    let urls: Vec<String> = prefixes.iter().map(GcsPrefix::url).collect();
    let hand_out = HandOut {
        access,
        expires_at: token.expires_at,
        prefixes: urls.clone(),
        key_id: None,
        credential: token.token.expose(),
    };
    audit_hand_out(state, table, caller, hand_out).await;
    let keys = BTreeMap::from([
        (
            "gcs.oauth2.token".to_owned(),
            token.token.expose().to_owned(),
        ),
        (
            "gcs.oauth2.token-expires-at".to_owned(),
            pangolin_delegation::epoch_ms(token.expires_at).to_string(),
        ),
    ]);
    Ok(Some(with_credentials(warehouse, keys, &urls)))
}

/// The warehouse's config with `keys` added, and `keys` alone per prefix in
/// `storage-credentials` (clients lay a credential's config over the table's).
fn with_credentials(
    warehouse: &Warehouse,
    keys: BTreeMap<String, String>,
    prefixes: &[String],
) -> Delegated {
    let storage_credentials = prefixes
        .iter()
        .map(|prefix| StorageCredential {
            prefix: prefix.clone(),
            config: keys.clone(),
        })
        .collect();
    let mut config = warehouse.client_config().clone();
    config.extend(keys);
    Delegated {
        config,
        storage_credentials,
    }
}

/// The table's signing route, relative to the catalog's base URI, at the reference the table
/// was answered at (so signing decides access as loading did).
fn sign_path(catalog: &Catalog, key: &ContentKey, at: &RefSpec) -> String {
    let mut levels: Vec<&str> = key.elements().collect();
    let name = levels.pop().unwrap_or_default();
    format!(
        "v1/{}/namespaces/{}/tables/{}/sign",
        enc(&format!("{}@{at}", catalog.name())),
        enc(&levels.join("\u{1f}")),
        enc(name)
    )
}

/// `POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign`: signs an S3 request for
/// the table's files, when the warehouse signs (`remote-signing`), the request stays inside
/// the table's prefixes and the caller may do what it does (writes need `Write` at a branch
/// head). A refusal is a 403 saying why; it signs nothing.
pub async fn sign(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    JsonBody(request): JsonBody<SignRequest>,
) -> Result<Json<Signed>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &table)?;
    let warehouse = scope.catalog.warehouse()?;
    let Some(signer) = warehouse.delegation().and_then(|d| d.signer.as_ref()) else {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplementedException",
            format!(
                "catalog `{}` does not sign requests: its warehouse has no `remote-signing`",
                scope.catalog.name()
            ),
        ));
    };
    let prefixes = match scope.catalog.load_table(&at, &key).await {
        Ok(loaded) => table_prefixes(warehouse, &loaded.metadata),
        // A table staged here and not committed yet: its files are written before the commit.
        Err(TableError::NotFound(_)) => {
            let staged = state.staged.locations(
                scope.catalog.tenant(),
                scope.catalog.name(),
                &key.to_string(),
            );
            match staged {
                Some(locations) => prefixes(warehouse, &locations),
                None => return Err(TableError::NotFound(key).into()),
            }
        }
        Err(e) => return Err(e.into()),
    };
    let caller = Caller::current();
    let table = (&scope.catalog, &key, &at);
    let access = access(&state, table, Grant::Privileges, caller.as_ref()).await?;
    signer
        .sign(&request, &prefixes, access, SystemTime::now())
        .map(Json)
        .map_err(|e| match e {
            SignError::Refused(message) => {
                ApiError::new(StatusCode::FORBIDDEN, "ForbiddenException", message)
            }
            SignError::Invalid(message) => ApiError::bad_request(message),
        })
}

/// Where a table's files go: its location, and the data and metadata paths its properties
/// move elsewhere.
pub fn file_locations(metadata: &TableMetadata) -> Vec<String> {
    let properties = &metadata.properties;
    std::iter::once(&metadata.location)
        .chain(properties.get("write.data.path"))
        .chain(properties.get("write.metadata.path"))
        .cloned()
        .collect()
}

/// The prefixes of `locations` that delegated access may cover: only those inside the
/// warehouse (the server refuses to write anywhere else, so nothing else holds the table's
/// files) that `parse` takes, sorted, each once.
fn inside<P: Ord>(
    warehouse: &Warehouse,
    locations: &[String],
    parse: impl Fn(&str) -> Option<P>,
) -> Vec<P> {
    let mut prefixes: Vec<P> = locations
        .iter()
        .filter(|path| warehouse.contains(path))
        .filter_map(|path| parse(path))
        .collect();
    prefixes.sort();
    prefixes.dedup();
    prefixes
}

/// The `s3://` prefixes among `locations` (see [`inside`]).
fn prefixes(warehouse: &Warehouse, locations: &[String]) -> Vec<S3Prefix> {
    inside(warehouse, locations, |path| S3Prefix::parse(path).ok())
}

fn table_prefixes(warehouse: &Warehouse, metadata: &TableMetadata) -> Vec<S3Prefix> {
    prefixes(warehouse, &file_locations(metadata))
}

/// What `grant` gives: read-write to a table's creator, or when the caller may write the
/// table at a branch head `at` names and the branch is not protected (its changes land
/// through merge requests, so nobody writes its files directly); else read.
async fn access(
    state: &AppState,
    (catalog, key, at): (&Catalog, &ContentKey, &RefSpec),
    grant: Grant,
    caller: Option<&Caller>,
) -> Result<Access, ApiError> {
    if grant == Grant::Creator {
        return Ok(Access::ReadWrite);
    }
    let Some(caller) = caller else {
        return Ok(Access::Read);
    };
    let Some(branch) = catalog.resolve(at).await?.writable_branch else {
        return Ok(Access::Read);
    };
    if catalog.check_unprotected(&branch).is_err() {
        return Ok(Access::Read);
    }
    let writes = state
        .security
        .allows(
            caller,
            Privilege::Write,
            resource::table(catalog, key),
            Some(branch.name.as_str()),
        )
        .await?;
    Ok(if writes {
        Access::ReadWrite
    } else {
        Access::Read
    })
}

/// What one hand-out gave.
struct HandOut<'a> {
    access: Access,
    expires_at: SystemTime,
    prefixes: Vec<String>,
    /// The access key id, which the storage's own logs show (S3).
    key_id: Option<String>,
    /// What tells this credential from any other (kept only hashed).
    credential: &'a str,
}

/// Records who got which access to which prefixes, until when, and the key id: never the
/// secret or the token. A credential already recorded for the same principal (handed out
/// again from the cache) is not recorded again.
async fn audit_hand_out(
    state: &AppState,
    (catalog, key, at): (&Catalog, &ContentKey, &RefSpec),
    caller: Option<&Caller>,
    hand_out: HandOut<'_>,
) {
    let principal = caller.map_or("anonymous", Caller::name);
    let hand_outs = &state.security.hand_outs;
    if hand_outs.recorded(principal, hand_out.credential) {
        return;
    }
    let (credential, expires) = (hand_out.credential, hand_out.expires_at);
    let resource_id = format!("{}/{key}@{at}", catalog.name());
    let expires_at = jiff::Timestamp::try_from(hand_out.expires_at)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let mut details = BTreeMap::from([
        ("access".to_owned(), hand_out.access.to_string()),
        ("expires-at".to_owned(), expires_at),
        ("prefixes".to_owned(), hand_out.prefixes.join(",")),
    ]);
    if let Some(key_id) = hand_out.key_id {
        details.insert("access-key-id".to_owned(), key_id);
    }
    audit::write(
        &state.security,
        audit::Entry {
            tenant: catalog.tenant(),
            principal,
            action: "table.vend-credentials",
            resource_type: "table",
            resource_id: &resource_id,
            outcome: Outcome::Success,
            details,
        },
    )
    .await;
    hand_outs.record(principal, credential, expires);
}

/// The token service's refusal is the warehouse's problem, not the client's request: 403 with
/// the provider's words when it refused, 503 when it could not be reached or made no sense.
pub fn vend_error(error: VendError) -> ApiError {
    let refused = matches!(error, VendError::Refused { .. });
    not_vended(refused, &error)
}

/// As [`vend_error`], for Google's token endpoints.
pub fn token_error(error: TokenError) -> ApiError {
    let refused = matches!(error, TokenError::Refused { .. });
    not_vended(refused, &error)
}

fn not_vended(refused: bool, error: &dyn std::fmt::Display) -> ApiError {
    let (status, kind) = if refused {
        (StatusCode::FORBIDDEN, "ForbiddenException")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
        )
    };
    ApiError::new(
        status,
        kind,
        format!("no storage credentials could be vended: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_header_lists_mechanisms() {
        let mut headers = HeaderMap::new();
        assert!(!Requested::from_headers(&headers).any());
        headers.append(HEADER, HeaderValue::from_static("vended-credentials"));
        let requested = Requested::from_headers(&headers);
        assert!(requested.vended_credentials && !requested.remote_signing);
        headers.insert(
            HEADER,
            HeaderValue::from_static(" Remote-Signing , vended-credentials,unknown"),
        );
        assert_eq!(
            Requested::from_headers(&headers),
            Requested {
                vended_credentials: true,
                remote_signing: true
            }
        );
    }
}
