//! Identity work that must not hold an async worker.

use std::future::Future;

use pangolin_identity::Identity;

use crate::error::ApiError;

/// Runs an identity operation on a blocking thread: those that hash or verify a password or
/// key run bcrypt inside their future, which would otherwise hold an async worker for its
/// whole cost. The future is driven to completion there with the runtime's handle.
pub async fn off_thread<F, Fut, T>(identity: &Identity, operation: F) -> Result<T, ApiError>
where
    F: FnOnce(Identity) -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let identity = identity.clone();
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || handle.block_on(operation(identity)))
        .await
        .map_err(|e| ApiError::internal(&e))
}
