//! The audit event of the request a commit serves, written by the commit's own publish.
//!
//! A server audits every change it makes. Written on its own, the event costs a second durable
//! write after the commit's, and a crash between the two loses it. So the request's layer puts
//! the event it would write here, around the handler, and the first commit the request lands
//! carries it into the publish: objects, ref move and event in one transaction. The layer then
//! writes the event itself only when no commit took it (the request changed nothing in a
//! catalog, or failed).

use std::future::Future;
use std::sync::Arc;

use pangolin_records::AuditEvent;
use pangolin_store::{ObjectId, Timestamp};

tokio::task_local! {
    static PENDING: PendingAudit;
}

/// The event a request's first landed commit writes; shared between the request's layer and
/// the commits the request makes.
#[derive(Debug, Clone)]
pub struct PendingAudit(Arc<parking_lot::Mutex<Slot>>);

#[derive(Debug)]
struct Slot {
    event: AuditEvent,
    written_with: Option<ObjectId>,
}

impl PendingAudit {
    pub fn new(event: AuditEvent) -> Self {
        Self(Arc::new(parking_lot::Mutex::new(Slot {
            event,
            written_with: None,
        })))
    }

    /// Runs `work` with this event pending: a commit landed inside it writes the event.
    pub async fn scope<F: Future>(self, work: F) -> F::Output {
        PENDING.scope(self, work).await
    }

    /// The commit whose publish wrote the event, if one did.
    pub fn written_with(&self) -> Option<ObjectId> {
        self.0.lock().written_with
    }

    /// The pending event of the current request, unless a commit already wrote it.
    pub(crate) fn current() -> Option<Self> {
        PENDING
            .try_with(Clone::clone)
            .ok()
            .filter(|pending| pending.written_with().is_none())
    }

    /// The event as the commit `commit`, made at `time`, writes it: dated by the commit and
    /// naming it, so the log and the history can be matched.
    pub(crate) fn for_commit(&self, commit: ObjectId, time: Timestamp) -> AuditEvent {
        let mut event = self.0.lock().event.clone();
        event.time = time;
        event.details.insert("commit".to_owned(), commit.to_hex());
        event
    }

    /// Records that `commit` landed with the event.
    pub(crate) fn written(&self, commit: ObjectId) {
        self.0.lock().written_with = Some(commit);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pangolin_records::Outcome;
    use pangolin_store::ObjectKind;

    use super::*;

    fn event() -> AuditEvent {
        AuditEvent {
            time: Timestamp::from_millis(1),
            tenant: "acme".into(),
            principal: "ana".into(),
            action: "table.commit".into(),
            resource_type: "table".into(),
            resource_id: "sales.orders".into(),
            outcome: Outcome::Success,
            details: BTreeMap::new(),
        }
    }

    #[tokio::test]
    async fn only_the_first_landed_commit_of_a_request_takes_the_event() {
        assert!(PendingAudit::current().is_none(), "no request, no event");
        let pending = PendingAudit::new(event());
        let commit = ObjectId::compute(ObjectKind::Commit, b"c");
        pending
            .clone()
            .scope(async move {
                let taken = PendingAudit::current().expect("pending");
                let written = taken.for_commit(commit, Timestamp::from_millis(7));
                assert_eq!(written.time, Timestamp::from_millis(7));
                assert_eq!(written.details["commit"], commit.to_hex());
                taken.written(commit);
                assert!(
                    PendingAudit::current().is_none(),
                    "a second commit takes none"
                );
            })
            .await;
        assert_eq!(pending.written_with(), Some(commit));
    }
}
