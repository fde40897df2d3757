//! Writing audit events: every mutation, every sign-in success and failure, every refusal.

use std::collections::BTreeMap;

use std::sync::Arc;

use pangolin_records::{AuditEvent, AuditLog, Outcome};
use pangolin_store::Timestamp;
use tokio::sync::{mpsc, oneshot};

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

/// Appends audit events in groups: each event waits until it is on disk, but events that
/// arrive while a group is being written go together in the next one, so concurrent requests
/// share one durable write of the log (as group commit does for commits) instead of queueing
/// one synchronous transaction each.
pub struct AuditWriter {
    log: Arc<dyn AuditLog>,
    queue: mpsc::UnboundedSender<Pending>,
}

type Pending = (AuditEvent, oneshot::Sender<Result<(), String>>);

/// Events written together at most.
const MAX_GROUP: usize = 512;

impl std::fmt::Debug for AuditWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditWriter").finish_non_exhaustive()
    }
}

impl AuditWriter {
    /// A writer appending to `log` from a task of its own (so it needs a Tokio runtime).
    pub fn new(log: Arc<dyn AuditLog>) -> Self {
        let (queue, mut pending) = mpsc::unbounded_channel::<Pending>();
        let writer = log.clone();
        tokio::spawn(async move {
            while let Some(first) = pending.recv().await {
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match pending.try_recv() {
                        Ok(next) => group.push(next),
                        Err(_) => break,
                    }
                }
                let (events, replies): (Vec<_>, Vec<_>) = group.into_iter().unzip();
                let written = writer
                    .append_many(events)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                for reply in replies {
                    let _ = reply.send(written.clone());
                }
            }
        });
        Self { log, queue }
    }

    /// Appends `event` and returns once it is stored.
    pub async fn append(&self, event: AuditEvent) -> Result<(), String> {
        let (reply, stored) = oneshot::channel();
        match self.queue.send((event, reply)) {
            Ok(()) => stored
                .await
                .unwrap_or_else(|_| Err("the audit writer stopped".to_owned())),
            // The writer task is gone (the runtime is shutting down): write directly.
            Err(mpsc::error::SendError((event, _))) => self
                .log
                .append(event)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }
}

/// Appends `entry`. An audit log that cannot be written is an operational emergency, but the
/// change it describes already happened: say so loudly rather than fail the caller.
pub async fn write(security: &Security, entry: Entry<'_>) {
    let event = event(&entry);
    let started = std::time::Instant::now();
    let appended = security.audit_writer.append(event).await;
    crate::observe::audit_written(started, appended.is_ok());
    if let Err(error) = appended {
        tracing::error!(%error, action = entry.action, "could not write the audit log");
    }
}

/// The event `entry` describes, dated now.
pub fn event(entry: &Entry<'_>) -> AuditEvent {
    AuditEvent {
        time: Timestamp::now(),
        tenant: entry.tenant.to_owned(),
        principal: entry.principal.to_owned(),
        action: entry.action.to_owned(),
        resource_type: entry.resource_type.to_owned(),
        resource_id: entry.resource_id.to_owned(),
        outcome: entry.outcome,
        details: entry.details.clone(),
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
