//! The Iceberg REST error model: `{"error": {"message", "type", "code"}}` with Java exception
//! names as `type`. Every domain error maps here explicitly; 5xx bodies carry an error id and
//! no internals (the log has the full chain under the same id).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pangolin_catalog::iceberg::IoError;
use pangolin_catalog::merge_requests::Protected;
use pangolin_catalog::{
    CommitError, NamespaceError, ReadAtError, ResolveError, TableError, ViewError,
};
use pangolin_store::{BackendError, BackendErrorKind, KeyError, ReadError};
use serde_json::json;

/// An error as an Iceberg client sees it.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequestException", message)
    }

    /// A failure the client cannot act on: logged in full, answered with an id only.
    pub(crate) fn internal(error: &dyn std::error::Error) -> Self {
        let id = uuid::Uuid::new_v4();
        tracing::error!(error_id = %id, error = %error, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            format!("internal error {id}; the server log has the details"),
        )
    }

    fn unavailable(error: &BackendError) -> Self {
        tracing::warn!(error = %error, "storage unavailable");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
            "the catalog's storage is busy or unreachable; retry",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({
            "error": { "message": self.message, "type": self.kind, "code": self.status.as_u16() }
        });
        (self.status, Json(body)).into_response()
    }
}

impl From<BackendError> for ApiError {
    fn from(error: BackendError) -> Self {
        match error.kind {
            BackendErrorKind::Unavailable | BackendErrorKind::Conflict => Self::unavailable(&error),
            BackendErrorKind::Corrupt | BackendErrorKind::Other => Self::internal(&error),
        }
    }
}

/// A protected branch refuses the change: the caller may be allowed to write, but not
/// this way (the Iceberg error a client does not retry).
impl From<Protected> for ApiError {
    fn from(error: Protected) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "ForbiddenException",
            error.to_string(),
        )
    }
}

impl From<ReadError> for ApiError {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::Backend(e) => e.into(),
            other @ (ReadError::Missing { .. }
            | ReadError::WrongKind { .. }
            | ReadError::Corrupt(_)) => Self::internal(&other),
        }
    }
}

impl From<KeyError> for ApiError {
    fn from(error: KeyError) -> Self {
        Self::bad_request(format!("invalid namespace or name: {error}"))
    }
}

impl From<ResolveError> for ApiError {
    fn from(error: ResolveError) -> Self {
        match error {
            ResolveError::UnknownRef(_)
            | ResolveError::NotACommit(_)
            | ResolveError::NotReachable { .. }
            | ResolveError::NotYetThere { .. }
            | ResolveError::BeyondRetention { .. }
            | ResolveError::Prefix(pangolin_store::odb::ResolveError::Prefix(_))
            | ResolveError::TooShallow(_) => Self::bad_request(error.to_string()),
            ResolveError::Prefix(pangolin_store::odb::ResolveError::Backend(e))
            | ResolveError::Backend(e) => e.into(),
            ResolveError::Read(e) => e.into(),
        }
    }
}

impl From<NamespaceError> for ApiError {
    fn from(error: NamespaceError) -> Self {
        let message = error.to_string();
        match error {
            NamespaceError::NotFound(_) | NamespaceError::NotANamespace(_) => {
                Self::new(StatusCode::NOT_FOUND, "NoSuchNamespaceException", message)
            }
            NamespaceError::AlreadyExists(_) => {
                Self::new(StatusCode::CONFLICT, "AlreadyExistsException", message)
            }
            // The spec gives creating a namespace no 404: a missing parent is a bad request.
            NamespaceError::ParentNotFound { .. } => Self::bad_request(message),
            NamespaceError::NotEmpty { .. } => {
                Self::new(StatusCode::CONFLICT, "NamespaceNotEmptyException", message)
            }
            NamespaceError::OverlappingProperties(_) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "UnprocessableEntityException",
                message,
            ),
            NamespaceError::Read(e) => e.into(),
        }
    }
}

impl From<ReadAtError> for ApiError {
    fn from(error: ReadAtError) -> Self {
        match error {
            ReadAtError::Resolve(e) => e.into(),
            ReadAtError::Namespace(e) => e.into(),
        }
    }
}

impl<E: Into<ApiError>> From<CommitError<E>> for ApiError {
    fn from(error: CommitError<E>) -> Self {
        match error {
            CommitError::Rejected(e) => e.into(),
            CommitError::MissingBranch(branch) => Self::bad_request(format!(
                "{branch} does not exist; create it before writing to it"
            )),
            CommitError::Contention(attempts) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailableException",
                format!(
                    "gave up after {attempts} attempts: other writers kept moving the branch; retry"
                ),
            ),
            CommitError::Read(e) => e.into(),
            CommitError::Backend(e) => e.into(),
            CommitError::Edit(e) => Self::internal(&e),
            CommitError::Commit(e) => Self::internal(&e),
            CommitError::Transact(e) => Self::internal(e.as_ref()),
        }
    }
}

impl From<TableError> for ApiError {
    fn from(error: TableError) -> Self {
        let message = error.to_string();
        match error {
            TableError::NotFound(_) => {
                Self::new(StatusCode::NOT_FOUND, "NoSuchTableException", message)
            }
            TableError::NamespaceNotFound(_) => {
                Self::new(StatusCode::NOT_FOUND, "NoSuchNamespaceException", message)
            }
            TableError::AlreadyExists { .. } => {
                Self::new(StatusCode::CONFLICT, "AlreadyExistsException", message)
            }
            TableError::RequirementFailed(_) => {
                Self::new(StatusCode::CONFLICT, "CommitFailedException", message)
            }
            TableError::LiveElsewhere { .. } => {
                Self::new(StatusCode::CONFLICT, "ConflictException", message)
            }
            TableError::Update(_)
            | TableError::OutsideWarehouse { .. }
            | TableError::LocationOutsideWarehouse { .. } => Self::bad_request(message),
            TableError::Io(e) => e.into(),
            TableError::Namespace(e) => e.into(),
            TableError::Resolve(e) => e.into(),
            TableError::Read(e) => e.into(),
            TableError::Backend(e) => e.into(),
            TableError::NoWarehouse(_) => Self::internal(&error),
        }
    }
}

impl From<ViewError> for ApiError {
    fn from(error: ViewError) -> Self {
        let message = error.to_string();
        match error {
            ViewError::NotFound(_) => {
                Self::new(StatusCode::NOT_FOUND, "NoSuchViewException", message)
            }
            ViewError::NamespaceNotFound(_) => {
                Self::new(StatusCode::NOT_FOUND, "NoSuchNamespaceException", message)
            }
            ViewError::AlreadyExists { .. } => {
                Self::new(StatusCode::CONFLICT, "AlreadyExistsException", message)
            }
            ViewError::RequirementFailed(_) => {
                Self::new(StatusCode::CONFLICT, "CommitFailedException", message)
            }
            ViewError::Update(_)
            | ViewError::InvalidMetadata { .. }
            | ViewError::OutsideWarehouse { .. } => Self::bad_request(message),
            // The entry points at a file that is gone, or a register names a missing file.
            ViewError::Io(IoError::NotFound(_)) => {
                Self::new(StatusCode::NOT_FOUND, "NoSuchViewException", message)
            }
            ViewError::Io(e) => e.into(),
            ViewError::Namespace(e) => e.into(),
            ViewError::Resolve(e) => e.into(),
            ViewError::Read(e) => e.into(),
            ViewError::Backend(e) => e.into(),
            ViewError::NoWarehouse(_) => Self::internal(&error),
        }
    }
}

impl From<IoError> for ApiError {
    fn from(error: IoError) -> Self {
        let message = error.to_string();
        match error {
            // The entry points at a file that is gone: the table was purged under it.
            IoError::NotFound(_) => {
                Self::new(StatusCode::NOT_FOUND, "NoSuchTableException", message)
            }
            IoError::InvalidLocation { .. } | IoError::Parse { .. } => Self::bad_request(message),
            // Files are written before the branch moves, so nothing was committed: retryable.
            IoError::Store { .. } => {
                tracing::warn!(error = %error, "warehouse storage error");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailableException",
                    message,
                )
            }
        }
    }
}
