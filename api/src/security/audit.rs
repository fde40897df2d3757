//! Writing audit events: every mutation, every sign-in success and failure, every refusal.

use std::collections::BTreeMap;

use pangolin_records::{AuditEvent, Outcome};
use pangolin_store::Timestamp;

use super::{Caller, Security};

/// What one audit event says, before it is stamped and chained.
#[derive(Debug)]
pub struct Entry<'a> {
    /// The tenant it concerns (`~` for the deployment itself).
    pub tenant: &'a str,
    pub principal: &'a str,
    pub action: &'a str,
    pub resource_type: &'a str,
    pub resource_id: &'a str,
    pub outcome: Outcome,
    pub details: BTreeMap<String, String>,
}

/// Appends `entry`. An audit log that cannot be written is an operational emergency, but the
/// change it describes already happened: say so loudly rather than fail the caller.
pub async fn write(security: &Security, entry: Entry<'_>) {
    let event = AuditEvent {
        time: Timestamp::now(),
        tenant: entry.tenant.to_owned(),
        principal: entry.principal.to_owned(),
        action: entry.action.to_owned(),
        resource_type: entry.resource_type.to_owned(),
        resource_id: entry.resource_id.to_owned(),
        outcome: entry.outcome,
        details: entry.details,
    };
    if let Err(error) = security.audit.append(event).await {
        tracing::error!(%error, action = entry.action, "could not write the audit log");
    }
}

/// Records that `caller` was refused `action` on `resource`.
pub async fn denied(
    security: &Security,
    caller: &Caller,
    action: &str,
    resource: &str,
    reason: &str,
) {
    write(
        security,
        Entry {
            tenant: &caller.tenant,
            principal: caller.name(),
            action,
            resource_type: "authorization",
            resource_id: resource,
            outcome: Outcome::Denied,
            details: BTreeMap::from([("reason".to_owned(), reason.to_owned())]),
        },
    )
    .await;
}
