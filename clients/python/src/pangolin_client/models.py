"""What the server answers, as typed models. Field names are the API's, in snake case
(`previous-hash` is `previous_hash`); fields a newer server adds are kept, not refused."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, List, Optional, Union

from pydantic import BaseModel, ConfigDict, Field


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=_kebab, populate_by_name=True, extra="allow", frozen=True
    )


class Ref(Model):
    """A branch or tag; `ahead`/`behind` count first-parent commits against the default branch
    (branches only)."""

    name: str
    type: str
    hash: str
    ahead: Optional[int] = None
    behind: Optional[int] = None


class ResolvedRef(Model):
    """What a reference expression (`main`, `v1`, `main~2`, `main#<hash>`, `main#<time>`)
    names: `type` is `branch`, `tag` or `commit`."""

    name: str
    type: str
    hash: str
    time: datetime
    message: str


class AssignedRef(Model):
    name: str
    type: str
    hash: str
    previous_hash: str


class Commit(Model):
    hash: str
    parents: List[str]
    author: str
    committer: str
    time: datetime
    message: str
    properties: Dict[str, str] = {}


class Entry(Model):
    """What a key holds: a namespace, an Iceberg table or view, or a generic asset."""

    type: str
    content_id: str
    metadata_location: Optional[str] = None
    snapshot_id: Optional[int] = None
    location: Optional[str] = None
    properties: Optional[Dict[str, str]] = None


class KeyedEntry(Model):
    key: List[str]
    entry: Entry


class Change(Model):
    """A key `added`, `modified` or `removed`, with a one-line summary of each difference."""

    key: List[str]
    kind: str
    summary: List[str] = []
    before: Optional[Entry] = None
    after: Optional[Entry] = None


class EventSnapshot(Model):
    """The snapshot a table's metadata names as current after an event."""

    snapshot_id: int
    parent_snapshot_id: Optional[int] = None
    sequence_number: int
    timestamp_ms: int
    summary: Dict[str, str] = {}


class EventTable(Model):
    """What a table's metadata file says after an event (`error` when it could not be read)."""

    table_uuid: Optional[str] = None
    format_version: Optional[int] = None
    snapshot: Optional[EventSnapshot] = None
    error: Optional[str] = None


class Event(Model):
    """One change of a catalog. `operation_type` is `create-table`, `update-table`,
    `drop-table`, `rename-table` (and the same for `view` and `asset`), `create-namespace`,
    `update-namespace-properties`, `drop-namespace`, `create-branch`, `move-branch`,
    `delete-branch` (and the same for `tag`) or `merge`. Continue after it with its `cursor`."""

    cursor: str
    operation_type: str
    timestamp_ms: int
    ref: str
    ref_type: str
    commit: str
    principal: str
    message: str
    identifier: Optional[List[str]] = None
    #: For renames: the key before.
    source: Optional[List[str]] = None
    before: Optional[Entry] = None
    after: Optional[Entry] = None
    table: Optional[EventTable] = None
    #: For ref events: the commits before and after.
    from_commit: Optional[str] = Field(default=None, alias="from")
    to_commit: Optional[str] = Field(default=None, alias="to")
    #: For merges: the merge commit's parents.
    parents: Optional[List[str]] = None


class EventPage(Model):
    """A page of events; continue after `next_cursor` (set even when `events` is empty)."""

    events: List[Event] = []
    next_cursor: Optional[str] = None


class CommitDetail(Commit):
    """A commit and its changes against its first parent (all of them: the client pages)."""

    changes: List[Change] = []


class Conflict(Model):
    """A key both sides changed differently: `kind` is `both-modified`, `modified-deleted`,
    `deleted-modified`, `both-added`, `identity-changed`, `namespace-deleted` or
    `table-changes-overlap` (then `reason` says which change of the table overlaps)."""

    key: List[str]
    kind: str
    reason: Optional[str] = None
    base: Optional[Entry] = None
    ours: Optional[Entry] = None
    theirs: Optional[Entry] = None


class TableMerge(Model):
    """A table both sides changed, merged into new metadata: what the merge did to it."""

    key: List[str]
    plan: List[str]


class HistoryResult(Model):
    """What a merge, cherry-pick or revert did, or would do in a dry run."""

    result: str
    dry_run: bool
    previous_head: str
    commits: List[str] = []
    changes: List[Change] = []
    resolved: List[Conflict] = []
    conflicts: List[Conflict] = []
    table_merges: List[TableMerge] = []
    error: Optional[Any] = None


class TableExpiry(Model):
    """One table's snapshots expired by a snapshot expiry (or that would be, in a dry run)."""

    key: List[str]
    expired: List[int]
    kept: int
    expired_refs: List[str] = []


class ExpireResult(Model):
    """What a snapshot expiry on a branch did: `commit` is None in a dry run or when nothing
    expired."""

    branch: str
    read_at: str
    dry_run: bool
    tables_read: int
    tables: List[TableExpiry] = []
    commit: Optional[str] = None


class BranchRetention(Model):
    """The window of the branches `pattern` matches (`*` matches any run of characters)."""

    pattern: str
    history_ms: int


class WebhookFilter(Model):
    """Which events a webhook receives, as the events feed's filters; absent: all."""

    types: Optional[List[str]] = None
    prefix: Optional[List[str]] = None
    ref: Optional[str] = None


class WebhookRetry(Model):
    """The event a webhook is waiting to try again."""

    event: str
    attempts: int
    next_attempt_at: datetime
    last_error: str


class WebhookDelivery(Model):
    """Where a webhook's delivery is: every event up to `after` was delivered or
    dead-lettered."""

    after: Optional[str] = None
    delivered: int
    dead_letters: int
    attempts: int
    retry: Optional[WebhookRetry] = None
    last_delivered_at: Optional[datetime] = None


class Webhook(Model):
    """A subscription of an endpoint to a catalog's events. `secret` (`whsec_...`) is set
    only in the answer that created or changed it."""

    id: str
    url: str
    description: Optional[str] = None
    filter: WebhookFilter = WebhookFilter()
    enabled: bool
    max_attempts: int
    created_by: str
    created_at: datetime
    updated_at: datetime
    delivery: WebhookDelivery
    secret: Optional[str] = None


class WebhookAttempt(Model):
    """One attempt at delivering one event: `outcome` is `delivered`, `retrying` or
    `dead-lettered`."""

    number: int
    event: str
    event_type: str
    attempt: int
    at: datetime
    duration_ms: int
    status: Optional[int] = None
    error: Optional[str] = None
    outcome: str


class DeadLetter(Model):
    """An event given up on after its last attempt, with the body that was sent."""

    event: str
    event_type: str
    attempts: int
    last_error: str
    at: datetime
    body: Any


class Retention(Model):
    """How long a catalog keeps its history readable (and its files from the sweep), in
    milliseconds; heads of branches and tags are always kept."""

    history_ms: int
    branches: List[BranchRetention] = []


class Redelivery(Model):
    """What sending a dead letter again came to: `delivered` means it is gone."""

    delivered: bool
    status: Optional[int] = None
    error: Optional[str] = None
    duration_ms: int


class ProtectionRule(Model):
    """Branches matching `branch` change only through merge requests whose `checks` passed."""

    branch: str
    checks: List[Dict[str, Any]] = []


class Protection(Model):
    """A catalog's protected branches: the first rule matching a branch applies."""

    rules: List[ProtectionRule]


class CheckResult(Model):
    """One check's outcome: the check as its rule states it, and why it failed."""

    check: Dict[str, Any]
    description: str
    passed: bool
    messages: List[str] = []


class CheckRun(Model):
    """The latest run of a request's checks: `verdict` is `passed`, `failed`, `conflicted`
    or `up-to-date`; `merge_commit` is what a merge lands."""

    verdict: str
    source_head: str
    target_head: str
    merge_commit: Optional[str] = None
    checks: List[CheckResult] = []
    conflicts: List[str] = []
    changed_keys: int
    ran_by: str
    ran_at: datetime


class MergedBy(Model):
    commit: str
    by: str
    at: datetime
    overridden: Optional[str] = None


class MergeRequest(Model):
    """A request to merge `source` into `target`; `state` is `open`, `merged` or `closed`."""

    number: int
    title: str
    description: Optional[str] = None
    source: str
    target: str
    state: str
    author: str
    created_at: datetime
    updated_at: datetime
    checks: Optional[CheckRun] = None
    merged: Optional[MergedBy] = None
    closed_by: Optional[str] = None


class Orphan(Model):
    """A file no table or view in the catalog's history references."""

    location: str
    size: int
    modified_at: datetime


class SweepResult(Model):
    """What a sweep of orphan files found and did: `orphans` names the first of
    `orphan_files`; `deleted` is 0 in a dry run."""

    cutoff: datetime
    objects_read: int
    metadata_files_read: int
    manifest_lists_read: int
    manifests_read: int
    referenced_files: int
    directories_swept: int
    forgotten_directories: int = 0
    other_catalogs: int = 0
    reads_resumed: int = 0
    skipped: List[Dict[str, str]] = []
    files_listed: int
    too_recent: int
    orphan_files: int
    orphan_bytes: int
    orphans: List[Orphan] = []
    deleted: int


class CollectResult(Model):
    """What a collection of unreachable store objects found and did: `deleted` is 0 in a
    dry run; `history_cutoff` is absent without a retention policy (every commit kept)."""

    history_cutoff: Optional[datetime] = None
    objects: int
    reachable_objects: int
    retained_commits: int
    unreachable_objects: int
    unreachable_commits: int
    deleted: int
    rewalks: int
    missing_objects: int


class Job(Model):
    """A maintenance job: `state` is `running`, `succeeded`, `failed` or `abandoned` (its
    server stopped); `progress` counts what it did so far, `result` what it did in the end."""

    id: str
    kind: str
    catalog: str
    principal: str
    state: str
    dry_run: bool
    started_at: datetime
    updated_at: datetime
    finished_at: Optional[datetime] = None
    progress: Dict[str, Any] = {}
    # A sweep's result for `remove-orphan-files`, a collection's for `collect-objects`.
    result: Optional[Union[SweepResult, CollectResult]] = None
    error: Optional[str] = None
    # The sweep whose checkpoints this one resumed from (the first of its run).
    resumes: Optional[str] = None

    @property
    def running(self) -> bool:
        return self.state == "running"


class ImportResult(Model):
    """What importing a bundle did."""

    bundle: str
    base: Optional[str] = None
    objects: int
    refs: List[Dict[str, Any]] = []
    changed_refs: int


class Remote(Model):
    """Another server's catalog, and its branches and tags as of the last fetch
    (`{"type", "name", "hash"}`)."""

    name: str
    url: str
    catalog: str
    added_by: str
    added_at: str
    refs: List[Dict[str, Any]] = []
    fetched_at: Optional[str] = None
    fetched_by: Optional[str] = None


class TrackingChange(Model):
    type: str
    name: str
    old: Optional[str] = None
    new: Optional[str] = None
    forced: bool


class FetchReport(Model):
    """What a fetch stored: the pack's objects and how the remote's refs moved."""

    pack: str
    objects: int
    bytes: int
    remote: Remote
    changes: List[TrackingChange] = []
    warehouse: Optional[str] = None


class PushReport(Model):
    """What a push did: `created`, `fast-forward`, `forced` or `up-to-date`."""

    result: str
    branch: str
    previous: Optional[str] = None
    head: str
    pack: str
    objects: int
    bytes: int
    warehouse: Optional[str] = None


class Tenant(Model):
    name: str
    description: Optional[str] = None
    admin: Optional[str] = None
    created_at: datetime
    updated_at: datetime


class Warehouse(Model):
    """`storage` as the server describes it (`{"type": "s3", "bucket": ...}`); credentials
    only as which fields are set, never their values."""

    name: str
    storage: Dict[str, Any]
    credentials: Optional[Dict[str, Any]] = None
    created_at: datetime
    updated_at: datetime
    version: int


class Catalog(Model):
    name: str
    default_branch: str
    warehouse: str
    properties: Dict[str, str] = {}
    created_at: Optional[datetime] = None


class User(Model):
    id: str
    username: str
    admin: bool
    disabled: bool
    created_at: datetime


class ServiceUser(Model):
    id: str
    name: str
    disabled: bool
    created_at: datetime


class ServiceKey(Model):
    id: str
    service_user: str
    created_at: datetime
    expires_at: Optional[datetime] = None
    revoked_at: Optional[datetime] = None
    last_used_at: Optional[datetime] = None


class NewServiceKey(ServiceKey):
    """A key as created: the only time its secret is shown. `key` is a bearer credential;
    `client_id` and `client_secret` are for the Iceberg OAuth2 client-credentials flow."""

    key: str
    client_id: str
    client_secret: str


class Grant(Model):
    """`privilege` on `resource` (`{"type": "catalog", "catalog": "lake"}`, ...), for the
    branches matching `branches` where the privilege concerns branches."""

    privilege: str
    resource: Dict[str, Any]
    branches: Optional[str] = None


class Role(Model):
    name: str
    grants: List[Grant]
    disabled: bool = False
    version: int


class ExternalPrincipal(Model):
    """A principal an identity provider signed in: `oidc:<tenant>/<provider>/<subject>`."""

    id: str
    provider: str
    subject: str
    username: Optional[str] = None
    email: Optional[str] = None
    groups: List[str] = []
    first_seen: datetime
    last_seen: datetime
    disabled: bool


class AuditEvent(Model):
    sequence: int
    time: datetime
    tenant: str
    principal: str
    action: str
    resource_type: str
    resource_id: str
    outcome: str
    details: Dict[str, str] = {}
    hash: str


class AuditVerification(Model):
    """Whether the audit log's hash chain is intact, over how many events."""

    intact: bool
    checked: int
    problem: Optional[str] = None


class Whoami(Model):
    principal: str
    tenant: Optional[str] = None
    acting_tenant: str
    admin: bool
    root: bool
    groups: List[str] = []

