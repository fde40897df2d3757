//! Writing audit events: every mutation, every sign-in success and failure, every refusal.

use std::collections::BTreeMap;

use std::sync::Arc;
use std::time::Instant;

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

/// Appends audit events in groups: events that arrive while a group is being written go
/// together in the next one, so concurrent requests share one durable write of the log (as
/// group commit does for commits) instead of queueing one synchronous transaction each.
///
/// A caller either waits until its event is on disk ([`AuditWriter::append`]) or only queues
/// it ([`AuditWriter::queue`]); [`AuditWriter::flush`] waits for everything queued before it.
pub struct AuditWriter {
    log: Arc<dyn AuditLog>,
    queue: mpsc::UnboundedSender<Pending>,
}

/// An event to write (none for a flush), when it was handed over, and whom to tell.
struct Pending {
    event: Option<AuditEvent>,
    since: Instant,
    reply: Option<oneshot::Sender<Result<(), String>>>,
}

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
                write_group(writer.as_ref(), group).await;
            }
        });
        Self { log, queue }
    }

    /// Appends `event` and returns once it is stored.
    pub async fn append(&self, event: AuditEvent) -> Result<(), String> {
        let (reply, stored) = oneshot::channel();
        let pending = Pending {
            event: Some(event),
            since: Instant::now(),
            reply: Some(reply),
        };
        match self.queue.send(pending) {
            Ok(()) => stored
                .await
                .unwrap_or_else(|_| Err("the audit writer stopped".to_owned())),
            // The writer task is gone (the runtime is shutting down): write directly.
            Err(mpsc::error::SendError(pending)) => {
                write_group(self.log.as_ref(), vec![pending]).await;
                stored
                    .await
                    .unwrap_or_else(|_| Err("the audit writer stopped".to_owned()))
            }
        }
    }

    /// Hands `event` to the writer without waiting for it to be stored; a failure to store it
    /// is logged by the writer.
    pub fn queue(&self, event: AuditEvent) {
        let pending = Pending {
            event: Some(event),
            since: Instant::now(),
            reply: None,
        };
        if let Err(mpsc::error::SendError(pending)) = self.queue.send(pending) {
            let log = self.log.clone();
            tokio::spawn(async move { write_group(log.as_ref(), vec![pending]).await });
        }
    }

    /// Returns once every event handed over before the call is stored (or failed to be).
    pub async fn flush(&self) {
        let (reply, done) = oneshot::channel();
        let marker = Pending {
            event: None,
            since: Instant::now(),
            reply: Some(reply),
        };
        if self.queue.send(marker).is_ok() {
            let _ = done.await;
        }
    }
}

/// Writes one group as one append, then tells each waiter how it went; failures of events
/// nobody waits for are logged here, since nobody else will.
async fn write_group(log: &dyn AuditLog, group: Vec<Pending>) {
    let mut events = Vec::with_capacity(group.len());
    let mut waiters = Vec::with_capacity(group.len());
    let mut unwatched = Vec::new();
    for pending in group {
        match (pending.event, pending.reply) {
            (Some(event), reply) => {
                if reply.is_none() {
                    unwatched.push(event.action.clone());
                }
                events.push(event);
                waiters.push((Some(pending.since), reply));
            }
            (None, reply) => waiters.push((None, reply)),
        }
    }
    let written = if events.is_empty() {
        Ok(())
    } else {
        log.append_many(events)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    if let Err(error) = &written {
        for action in unwatched {
            tracing::error!(%error, %action, "could not write the audit log");
        }
    }
    for (since, reply) in waiters {
        if let Some(since) = since {
            crate::observe::audit_written(since, written.is_ok());
        }
        if let Some(reply) = reply {
            let _ = reply.send(written.clone());
        }
    }
}

/// Appends `entry` and returns once it is stored. An audit log that cannot be written is an
/// operational emergency, but the change it describes already happened: say so loudly rather
/// than fail the caller.
pub async fn write(security: &Security, entry: Entry<'_>) {
    if let Err(error) = security.audit_writer.append(event(&entry)).await {
        tracing::error!(%error, action = entry.action, "could not write the audit log");
    }
}

/// Queues `entry` for the log without waiting for it to be stored: for requests that changed
/// nothing, whose answer need not wait for a durable write (see the route layer).
pub fn queue(security: &Security, entry: Entry<'_>) {
    security.audit_writer.queue(event(&entry));
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
