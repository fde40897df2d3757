"""Every operation of the management API, written once over a transport (see `_transport`).

Each method is marked with the OpenAPI operation it calls (`METHOD /path`), so a test can
check that every operation the server documents has a method here. With the blocking client
a method answers with its value; with the asyncio client, with an awaitable of it, and
listings are async iterators."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TypeVar, Union
from urllib.parse import quote

from . import models as m
from ._transport import Call, Paging

F = TypeVar("F", bound=Callable[..., Any])


def operation(spec: str) -> Callable[[F], F]:
    """Marks a method as the client of the OpenAPI operation `spec` (`GET /api/v1/...`)."""

    def mark(method: F) -> F:
        method.__pangolin_operation__ = spec  # type: ignore[attr-defined]
        return method

    return mark


def _seg(value: str) -> str:
    """One path segment, percent-encoded (principal ids hold `:` and `/`)."""
    return quote(value, safe="")


def _reader(model: Any) -> Callable[[Any], Any]:
    return model.model_validate


def _nothing(_: Any) -> None:
    return None


def _options(**fields: Any) -> Dict[str, Any]:
    """A request body of the given fields, in the API's spelling, without the unset ones."""
    return {k.replace("_", "-"): v for k, v in fields.items() if v is not None}


Key = Union[str, Sequence[str]]
"""A table's or namespace's key: its levels (`["sales", "orders"]`), or a dotted name
(`"sales.orders"`) when no level holds a dot."""


def _key(key: Optional[Key]) -> Optional[str]:
    """A key as the API spells it in queries: its levels joined by the unit separator."""
    if key is None:
        return None
    levels = key.split(".") if isinstance(key, str) else list(key)
    return "\x1f".join(levels)


def _events_params(
    after: Optional[str], types: Optional[Sequence[str]], prefix: Optional[Key], ref: Optional[str]
) -> Dict[str, Any]:
    if isinstance(types, str):
        types = [types]
    return {"after": after, "types": ",".join(types) if types else None, "prefix": _key(prefix), "ref": ref}


Resolution = Dict[str, Any]
"""A per-key resolution: `{"key": ["sales", "orders"], "take": "ours" | "theirs"}`."""


class _Resource:
    def __init__(self, transport: Any) -> None:
        self._t = transport

    def _send(self, call: Call) -> Any:
        return self._t.send(call)

    def _admin_pages(self, path: str, items: str, model: Any, **params: Any) -> Any:
        """A listing of the admin API (`page-token`, `page-size`)."""

        def call(token: Optional[str]) -> Call:
            return Call("GET", path, params={**_options(**params), "page-token": token})

        return self._t.pages(Paging(call, items, _reader(model)))


class Versioning(_Resource):
    """Branches, tags, history and merges of one catalog."""

    def __init__(self, transport: Any, catalog: str) -> None:
        super().__init__(transport)
        self.catalog_name = catalog
        self._base = f"/api/v1/catalogs/{_seg(catalog)}"

    def _pages(self, path: str, items: str, model: Any, params: Dict[str, Any]) -> Paging:
        def call(token: Optional[str]) -> Call:
            return Call("GET", self._base + path, params={**params, "pageToken": token})

        return Paging(call, items, _reader(model), size_param="pageSize")

    # ---- references ----

    @operation("GET /api/v1/catalogs/{catalog}/refs")
    def list_refs(
        self, type: Optional[str] = None, prefix: Optional[str] = None
    ) -> Iterator[m.Ref]:
        """Branches and tags (`type` `branch` or `tag` for one kind), by name."""
        return self._t.pages(self._pages("/refs", "refs", m.Ref, {"type": type, "prefix": prefix}))

    @operation("GET /api/v1/catalogs/{catalog}/refs/{name}")
    def get_ref(self, name: str) -> m.ResolvedRef:
        """What a reference expression names (`main`, `v1`, `main~3`, `main#<time>`)."""
        return self._send(Call("GET", f"{self._base}/refs/{_seg(name)}", read=_reader(m.ResolvedRef)))

    @operation("POST /api/v1/catalogs/{catalog}/refs")
    def create_ref(self, name: str, from_: Optional[str] = None, type: str = "branch") -> m.Ref:
        """A new branch (or tag, with `type="tag"`) at `from_` (the default branch when None)."""
        body = {"name": name, "type": type, "from": from_}
        return self._send(Call("POST", f"{self._base}/refs", json=_options(**body), read=_reader(m.Ref)))

    @operation("PUT /api/v1/catalogs/{catalog}/refs/{name}")
    def assign_ref(self, name: str, to: str, expected_hash: str) -> m.AssignedRef:
        """Moves branch `name` to `to`, if it is still at `expected_hash`."""
        body = {"to": to, "expected-hash": expected_hash}
        return self._send(
            Call("PUT", f"{self._base}/refs/{_seg(name)}", json=body, read=_reader(m.AssignedRef))
        )

    @operation("DELETE /api/v1/catalogs/{catalog}/refs/{name}")
    def delete_ref(self, name: str, expected_hash: Optional[str] = None) -> None:
        """Deletes a branch or tag (only if still at `expected_hash`, when given)."""
        params = {"expected-hash": expected_hash}
        return self._send(Call("DELETE", f"{self._base}/refs/{_seg(name)}", params=params, read=_nothing))

    @operation("GET /api/v1/catalogs/{catalog}/refs/{name}/log")
    def ref_log(self, name: str, **filters: Any) -> Iterator[m.Commit]:
        """The commits of reference `name`, newest first (filters as for `log`)."""
        if "key" in filters:
            filters["key"] = _key(filters["key"])
        path = f"/refs/{_seg(name)}/log"
        return self._t.pages(self._pages(path, "commits", m.Commit, _filters(**filters)))

    def branch(self, name: str) -> "Branch":
        """Branch `name` of this catalog, to create, read, merge or delete."""
        return Branch(self, name)

    def tag(self, name: str) -> "Tag":
        return Tag(self, name)

    # ---- history ----

    @operation("GET /api/v1/catalogs/{catalog}/log")
    def log(
        self,
        ref: Optional[str] = None,
        *,
        author: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        key: Optional[Key] = None,
    ) -> Iterator[m.Commit]:
        """Commits of `ref` (the default branch when None), newest first, paged as you read;
        `key` keeps the commits that changed one table (`sales.orders`); `since` and `until`
        are RFC 3339 times."""
        params = _filters(ref=ref, author=author, since=since, until=until, key=_key(key))
        return self._t.pages(self._pages("/log", "commits", m.Commit, params))

    @operation("GET /api/v1/catalogs/{catalog}/commits/{reference}")
    def commit(self, reference: str) -> m.CommitDetail:
        """A commit with all its changes against its first parent."""
        paging = self._pages(f"/commits/{_seg(reference)}", "changes", m.Change, {})

        def then(first: Any, changes: List[m.Change]) -> m.CommitDetail:
            head = {k: v for k, v in first.items() if k not in ("changes", "next-page-token")}
            return m.CommitDetail.model_validate({**head, "changes": changes})

        return self._t.gather(paging, then)

    @operation("GET /api/v1/catalogs/{catalog}/diff")
    def diff(self, from_: str, to: str, prefix: Optional[Key] = None) -> Iterator[m.Change]:
        """What changed from `from_` to `to` (any references), by key; `prefix` keeps what
        lies under one namespace."""
        params = {"from": from_, "to": to, "prefix": _key(prefix)}
        return self._t.pages(self._pages("/diff", "changes", m.Change, params))

    @operation("GET /api/v1/catalogs/{catalog}/entries")
    def entries(self, ref: Optional[str] = None, prefix: Optional[Key] = None) -> Iterator[m.KeyedEntry]:
        """Every key and entry at `ref`, by key; `prefix` (`sales`) keeps one namespace's."""
        params = {"ref": ref, "prefix": _key(prefix)}
        return self._t.pages(self._pages("/entries", "entries", m.KeyedEntry, params))

    # ---- change events ----

    @operation("GET /api/v1/catalogs/{catalog}/events")
    def events(
        self,
        after: Optional[str] = None,
        *,
        types: Optional[Sequence[str]] = None,
        prefix: Optional[Key] = None,
        ref: Optional[str] = None,
        page_size: Optional[int] = None,
        wait: Optional[Union[str, float]] = None,
    ) -> m.EventPage:
        """One page of the catalog's change events after cursor `after` (from the oldest kept
        when None), oldest first, only those you may read. `wait` (`"30s"`, or seconds) waits
        up to that long for an event when none is there yet. Save `next_cursor` with what you
        processed and continue after it: nothing is missed, nothing seen twice."""
        if isinstance(wait, (int, float)):
            wait = f"{int(wait * 1000)}ms"
        params = _events_params(after, types, prefix, ref)
        params.update({"pageSize": page_size, "wait": wait})
        return self._send(Call("GET", f"{self._base}/events", params=params, read=_reader(m.EventPage)))

    @operation("GET /api/v1/catalogs/{catalog}/events/stream")
    def stream_events(
        self,
        after: Optional[str] = None,
        *,
        types: Optional[Sequence[str]] = None,
        prefix: Optional[Key] = None,
        ref: Optional[str] = None,
    ) -> Iterator[m.Event]:
        """The change events after `after`, as they land (Server-Sent Events). The server
        ends a stream after ten minutes: start again after the last event's cursor."""
        params = _events_params(after, types, prefix, ref)
        return self._t.stream(Call("GET", f"{self._base}/events/stream", params=params, read=_reader(m.Event)))

    # ---- merging ----

    @operation("POST /api/v1/catalogs/{catalog}/merge")
    def merge(
        self,
        source: str,
        target: Optional[str] = None,
        *,
        dry_run: bool = False,
        fast_forward: Optional[str] = None,
        squash: bool = False,
        strategy: Optional[str] = None,
        resolutions: Sequence[Resolution] = (),
        message: Optional[str] = None,
        expected_target_head: Optional[str] = None,
        table_merge: Optional[str] = None,
    ) -> m.HistoryResult:
        """Merges `source` into `target` (the default branch when None). Conflicts raise
        `ConflictError` with `.conflicts`; nothing moved then. `table_merge="auto"` merges a
        table both sides changed when the changes commute (appends, properties, added
        fields); the catalog's `table-merge` property decides when None."""
        body = _history(
            source=source,
            target=target,
            dry_run=dry_run,
            fast_forward=fast_forward,
            squash=squash,
            strategy=strategy,
            resolutions=resolutions,
            message=message,
            expected_target_head=expected_target_head,
            table_merge=table_merge,
        )
        return self._send(Call("POST", f"{self._base}/merge", json=body, read=_reader(m.HistoryResult)))

    @operation("POST /api/v1/catalogs/{catalog}/cherry-pick")
    def cherry_pick(
        self,
        commits: Sequence[str],
        onto: Optional[str] = None,
        *,
        dry_run: bool = False,
        squash: bool = False,
        strategy: Optional[str] = None,
        resolutions: Sequence[Resolution] = (),
        message: Optional[str] = None,
        expected_target_head: Optional[str] = None,
    ) -> m.HistoryResult:
        """Applies `commits` (oldest first) onto branch `onto`."""
        body = _history(
            commits=list(commits),
            onto=onto,
            dry_run=dry_run,
            squash=squash,
            strategy=strategy,
            resolutions=resolutions,
            message=message,
            expected_target_head=expected_target_head,
        )
        return self._send(Call("POST", f"{self._base}/cherry-pick", json=body, read=_reader(m.HistoryResult)))

    @operation("POST /api/v1/catalogs/{catalog}/revert")
    def revert(
        self,
        commit: str,
        on: Optional[str] = None,
        *,
        dry_run: bool = False,
        strategy: Optional[str] = None,
        resolutions: Sequence[Resolution] = (),
        message: Optional[str] = None,
        expected_target_head: Optional[str] = None,
    ) -> m.HistoryResult:
        """Undoes `commit` on branch `on` with a new commit."""
        body = _history(
            commit=commit,
            on=on,
            dry_run=dry_run,
            strategy=strategy,
            resolutions=resolutions,
            message=message,
            expected_target_head=expected_target_head,
        )
        return self._send(Call("POST", f"{self._base}/revert", json=body, read=_reader(m.HistoryResult)))


    # ---- bundles and maintenance ----

    @operation("POST /api/v1/catalogs/{catalog}/export")
    def export_bundle(self, base: Optional[Dict[str, Any]] = None) -> bytes:
        """The catalog's branches, tags and history as a bundle (its bytes). With `base`, an
        earlier bundle's `{"bundle": <id>, "refs": [...]}`, only what is new since."""
        body = {"base": base} if base else {}
        return self._send(Call("POST", f"{self._base}/export", json=body, raw=True))

    @operation("POST /api/v1/catalogs/{catalog}/import")
    def import_bundle(self, bundle: bytes) -> m.ImportResult:
        """Imports a bundle: a full one into a new catalog, an incremental one into the
        catalog at its base."""
        call = Call(
            "POST",
            f"{self._base}/import",
            content=bundle,
            content_type="application/vnd.pangolin.bundle",
            read=_reader(m.ImportResult),
        )
        return self._send(call)

    # ---- remotes ----

    @operation("GET /api/v1/catalogs/{catalog}/remotes")
    def remotes(self) -> List[m.Remote]:
        """The catalog's remotes, each with its branches and tags as of the last fetch."""
        return self._send(
            Call("GET", f"{self._base}/remotes", read=lambda b: [m.Remote.model_validate(r) for r in b["remotes"]])
        )

    @operation("POST /api/v1/catalogs/{catalog}/remotes")
    def add_remote(self, name: str, url: str, catalog: Optional[str] = None) -> m.Remote:
        """Adds remote `name`: catalog `catalog` (this catalog's name by default) on the
        server at `url`. Credentials for that server stay with whoever fetches and pushes."""
        body: Dict[str, Any] = {"name": name, "url": url}
        if catalog is not None:
            body["catalog"] = catalog
        return self._send(Call("POST", f"{self._base}/remotes", json=body, read=_reader(m.Remote)))

    @operation("GET /api/v1/catalogs/{catalog}/remotes/{remote}")
    def remote(self, name: str) -> m.Remote:
        return self._send(Call("GET", f"{self._base}/remotes/{_seg(name)}", read=_reader(m.Remote)))

    @operation("DELETE /api/v1/catalogs/{catalog}/remotes/{remote}")
    def remove_remote(self, name: str) -> None:
        self._send(Call("DELETE", f"{self._base}/remotes/{_seg(name)}"))

    @operation("POST /api/v1/catalogs/{catalog}/pack")
    def pack(self, want: Optional[Sequence[str]] = None, have: Sequence[str] = ()) -> bytes:
        """A pack (a bundle's bytes) of the branches and tags in `want` (all when None) without
        what the commits in `have` reach."""
        body: Dict[str, Any] = {"have": list(have)}
        if want is not None:
            body["want"] = list(want)
        return self._send(Call("POST", f"{self._base}/pack", json=body, raw=True))

    @operation("POST /api/v1/catalogs/{catalog}/remotes/{remote}/fetched")
    def receive_fetch(self, remote: str, pack: bytes) -> m.FetchReport:
        """Stores a pack fetched from `remote` and records its refs as the remote's."""
        call = Call(
            "POST",
            f"{self._base}/remotes/{_seg(remote)}/fetched",
            content=pack,
            content_type="application/vnd.pangolin.bundle",
            read=_reader(m.FetchReport),
        )
        return self._send(call)

    @operation("POST /api/v1/catalogs/{catalog}/push")
    def receive_push(
        self,
        branch: str,
        pack: bytes,
        *,
        expected_head: Optional[str] = None,
        force: bool = False,
        origin: Optional[str] = None,
    ) -> m.PushReport:
        """Moves `branch` to the head of a pack of it, from `expected_head` (None: the branch
        must not exist); only a fast-forward unless `force`."""
        params: Dict[str, Any] = {"branch": branch}
        if expected_head is not None:
            params["expected-head"] = expected_head
        if force:
            params["force"] = "true"
        if origin is not None:
            params["origin"] = origin
        call = Call(
            "POST",
            f"{self._base}/push",
            params=params,
            content=pack,
            content_type="application/vnd.pangolin.bundle",
            read=_reader(m.PushReport),
        )
        return self._send(call)

    @operation("POST /api/v1/catalogs/{catalog}/maintenance/expire-snapshots")
    def expire_snapshots(
        self,
        branch: Optional[str] = None,
        *,
        older_than: Optional[str] = None,
        retain_last: Optional[int] = None,
        dry_run: bool = False,
    ) -> m.ExpireResult:
        """Expires old snapshots of every table on `branch` (the default branch when None) in
        one commit there; `older_than` is RFC 3339."""
        body = _options(branch=branch, older_than=older_than, retain_last=retain_last)
        if dry_run:
            body["dry-run"] = True
        path = f"{self._base}/maintenance/expire-snapshots"
        return self._send(Call("POST", path, json=body, read=_reader(m.ExpireResult)))

    @operation("GET /api/v1/catalogs/{catalog}/retention")
    def retention(self) -> Optional[m.Retention]:
        """The catalog's retention policy; None when it keeps its whole history."""
        return self._send(Call("GET", f"{self._base}/retention", read=_retention))

    @operation("PUT /api/v1/catalogs/{catalog}/retention")
    def set_retention(
        self, history_ms: int, branches: Optional[Dict[str, int]] = None
    ) -> Optional[m.Retention]:
        """Keeps the catalog's history readable for `history_ms` (at least an hour), and for
        the branches matching each pattern of `branches` (in order) for its own window."""
        body = {
            "history-ms": history_ms,
            "branches": [{"pattern": p, "history-ms": ms} for p, ms in (branches or {}).items()],
        }
        return self._send(Call("PUT", f"{self._base}/retention", json=body, read=_retention))

    @operation("DELETE /api/v1/catalogs/{catalog}/retention")
    def clear_retention(self) -> None:
        """Removes the catalog's retention policy: it keeps its whole history again."""
        return self._send(Call("DELETE", f"{self._base}/retention", read=_nothing))

    # ---- webhooks ----

    @operation("POST /api/v1/catalogs/{catalog}/webhooks")
    def create_webhook(
        self,
        url: str,
        *,
        types: Optional[Sequence[str]] = None,
        prefix: Optional[Key] = None,
        ref: Optional[str] = None,
        description: Optional[str] = None,
        max_attempts: Optional[int] = None,
        secret: Optional[str] = None,
        after: Optional[str] = None,
    ) -> m.Webhook:
        """Subscribes `url` to the catalog's events (those after `after`, a cursor; from now
        on when None; `"0"` for every event kept), filtered as the events feed filters. The
        answer's `secret` verifies the deliveries' `webhook-signature` and is not shown again."""
        body = _options(description=description, max_attempts=max_attempts, secret=secret, after=after)
        body["url"] = url
        body["filter"] = _webhook_filter(types, prefix, ref)
        return self._send(Call("POST", f"{self._base}/webhooks", json=body, read=_reader(m.Webhook)))

    @operation("GET /api/v1/catalogs/{catalog}/webhooks")
    def webhooks(self) -> Iterator[m.Webhook]:
        """The catalog's webhooks, by id, each with where its delivery is."""
        return self._admin_pages(f"{self._base}/webhooks", "webhooks", m.Webhook)

    @operation("GET /api/v1/catalogs/{catalog}/webhooks/{webhook}")
    def webhook(self, webhook_id: str) -> m.Webhook:
        """One webhook and where its delivery is."""
        path = f"{self._base}/webhooks/{_seg(webhook_id)}"
        return self._send(Call("GET", path, read=_reader(m.Webhook)))

    @operation("PATCH /api/v1/catalogs/{catalog}/webhooks/{webhook}")
    def update_webhook(
        self,
        webhook_id: str,
        *,
        url: Optional[str] = None,
        description: Optional[str] = None,
        enabled: Optional[bool] = None,
        max_attempts: Optional[int] = None,
        secret: Optional[str] = None,
        types: Optional[Sequence[str]] = None,
        prefix: Optional[Key] = None,
        ref: Optional[str] = None,
    ) -> m.Webhook:
        """Changes a webhook; what is None stays. Any of `types`, `prefix`, `ref` replaces the
        whole filter. `secret="generate"` makes a new secret, shown in the answer."""
        body = _options(url=url, description=description, enabled=enabled, max_attempts=max_attempts, secret=secret)
        if types is not None or prefix is not None or ref is not None:
            body["filter"] = _webhook_filter(types, prefix, ref)
        path = f"{self._base}/webhooks/{_seg(webhook_id)}"
        return self._send(Call("PATCH", path, json=body, read=_reader(m.Webhook)))

    @operation("DELETE /api/v1/catalogs/{catalog}/webhooks/{webhook}")
    def delete_webhook(self, webhook_id: str) -> None:
        """Deletes a webhook with its delivery log and dead letters."""
        path = f"{self._base}/webhooks/{_seg(webhook_id)}"
        return self._send(Call("DELETE", path, read=_nothing))

    @operation("GET /api/v1/catalogs/{catalog}/webhooks/{webhook}/attempts")
    def webhook_attempts(self, webhook_id: str) -> Iterator[m.WebhookAttempt]:
        """The webhook's delivery attempts, newest first (the last thousand are kept)."""
        path = f"{self._base}/webhooks/{_seg(webhook_id)}/attempts"
        return self._admin_pages(path, "attempts", m.WebhookAttempt)

    @operation("GET /api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters")
    def webhook_dead_letters(self, webhook_id: str) -> Iterator[m.DeadLetter]:
        """The events the webhook gave up on, oldest first, with the bodies sent."""
        path = f"{self._base}/webhooks/{_seg(webhook_id)}/dead-letters"
        return self._admin_pages(path, "dead-letters", m.DeadLetter)

    @operation("POST /api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}/redeliver")
    def redeliver_dead_letter(self, webhook_id: str, event: str) -> m.Redelivery:
        """Sends a dead letter's body to the webhook's endpoint again (same id, signed with the
        current secret); delivered, the dead letter is removed. Says what the endpoint did."""
        path = f"{self._base}/webhooks/{_seg(webhook_id)}/dead-letters/{_seg(event)}/redeliver"
        return self._send(Call("POST", path, read=_reader(m.Redelivery)))

    @operation("DELETE /api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}")
    def discard_dead_letter(self, webhook_id: str, event: str) -> None:
        """Discards a dead letter handled some other way."""
        path = f"{self._base}/webhooks/{_seg(webhook_id)}/dead-letters/{_seg(event)}"
        return self._send(Call("DELETE", path, read=_nothing))

    # ---- protected branches and merge requests ----

    @operation("GET /api/v1/catalogs/{catalog}/protection")
    def protection(self) -> Optional[m.Protection]:
        """The catalog's protected branches; None when no branch is protected."""
        return self._send(Call("GET", f"{self._base}/protection", read=_protection))

    @operation("PUT /api/v1/catalogs/{catalog}/protection")
    def set_protection(self, rules: Sequence[Dict[str, Any]]) -> Optional[m.Protection]:
        """Protects branches: each rule is `{"branch": "main", "checks": [...]}` (the first
        rule matching a branch applies). A protected branch changes only through merge
        requests whose checks passed; checks are `{"kind": "no-dropped-columns"}`,
        `{"kind": "no-lost-rows"}`, `{"kind": "forbid", "types": ["drop-table"]}` (each with an
        optional `prefix`) and `{"kind": "webhook", "webhook": "<webhook id>"}`."""
        body = {"rules": list(rules)}
        return self._send(Call("PUT", f"{self._base}/protection", json=body, read=_protection))

    @operation("DELETE /api/v1/catalogs/{catalog}/protection")
    def clear_protection(self) -> None:
        """Unprotects every branch of the catalog."""
        return self._send(Call("DELETE", f"{self._base}/protection", read=_nothing))

    @operation("POST /api/v1/catalogs/{catalog}/merge-requests")
    def create_merge_request(
        self,
        source: str,
        title: str,
        *,
        target: Optional[str] = None,
        description: Optional[str] = None,
    ) -> m.MergeRequest:
        """Opens a request to merge branch `source` into `target` (the default branch when
        None)."""
        body = _options(source=source, title=title, target=target, description=description)
        return self._send(
            Call("POST", f"{self._base}/merge-requests", json=body, read=_reader(m.MergeRequest))
        )

    @operation("GET /api/v1/catalogs/{catalog}/merge-requests")
    def merge_requests(self, state: Optional[str] = None) -> Iterator[m.MergeRequest]:
        """The catalog's merge requests, newest first; `state` is `open`, `merged` or
        `closed`."""
        paging = self._pages("/merge-requests", "merge-requests", m.MergeRequest, _filters(state=state))
        return self._t.pages(paging)

    @operation("GET /api/v1/catalogs/{catalog}/merge-requests/{number}")
    def merge_request(self, number: int) -> m.MergeRequest:
        """One merge request with the latest run of its checks."""
        path = f"{self._base}/merge-requests/{int(number)}"
        return self._send(Call("GET", path, read=_reader(m.MergeRequest)))

    @operation("POST /api/v1/catalogs/{catalog}/merge-requests/{number}/checks")
    def run_merge_request_checks(self, number: int) -> m.MergeRequest:
        """Runs the target's checks on the merge of both branches' current heads (a commit no
        ref names until the request merges) and answers the request with the results."""
        path = f"{self._base}/merge-requests/{int(number)}/checks"
        return self._send(Call("POST", path, read=_reader(m.MergeRequest)))

    @operation("POST /api/v1/catalogs/{catalog}/merge-requests/{number}/merge")
    def merge_merge_request(
        self, number: int, *, override_reason: Optional[str] = None
    ) -> m.MergeRequest:
        """Merges the request: the target moves to the merge commit its checks passed on
        (they run again when either branch moved). Failed checks raise a conflict unless an
        administrator gives `override_reason`, which is audited."""
        path = f"{self._base}/merge-requests/{int(number)}/merge"
        body = _options(override_reason=override_reason)
        return self._send(Call("POST", path, json=body, read=_reader(m.MergeRequest)))

    @operation("POST /api/v1/catalogs/{catalog}/merge-requests/{number}/close")
    def close_merge_request(self, number: int) -> m.MergeRequest:
        """Closes the request without merging it."""
        path = f"{self._base}/merge-requests/{int(number)}/close"
        return self._send(Call("POST", path, read=_reader(m.MergeRequest)))

    @operation("POST /api/v1/catalogs/{catalog}/maintenance/remove-orphan-files")
    def remove_orphan_files(
        self,
        *,
        grace_period_ms: Optional[int] = None,
        dry_run: bool = False,
        limit: Optional[int] = None,
        resume: Optional[str] = None,
    ) -> m.Job:
        """Starts a sweep of the files nothing in the catalog's history references (only
        files older than the grace period, 3 days by default, go); answers with the job as
        started: follow it with `maintenance_job(job.id)` until it is no longer running.
        `resume`: the id of a sweep that failed or was abandoned, to continue from what it
        marked."""
        body = _options(grace_period_ms=grace_period_ms, limit=limit, resume=resume)
        if dry_run:
            body["dry-run"] = True
        path = f"{self._base}/maintenance/remove-orphan-files"
        return self._send(Call("POST", path, json=body, read=_reader(m.Job)))

    @operation("POST /api/v1/catalogs/{catalog}/maintenance/collect-objects")
    def collect_objects(self, *, dry_run: bool = False) -> m.Job:
        """Starts a collection of the catalog's store objects that nothing retained reaches
        (without a retention policy every commit is kept); answers with the job as started:
        follow it with `maintenance_job(job.id)` until it is no longer running."""
        body = {"dry-run": True} if dry_run else {}
        path = f"{self._base}/maintenance/collect-objects"
        return self._send(Call("POST", path, json=body, read=_reader(m.Job)))

    @operation("GET /api/v1/catalogs/{catalog}/maintenance/jobs")
    def maintenance_jobs(self) -> Iterator[m.Job]:
        """The catalog's maintenance jobs, oldest first."""
        return self._t.pages(self._pages("/maintenance/jobs", "jobs", m.Job, {}))

    @operation("GET /api/v1/catalogs/{catalog}/maintenance/jobs/{job}")
    def maintenance_job(self, job_id: str) -> m.Job:
        """One maintenance job, with its progress or its result."""
        path = f"{self._base}/maintenance/jobs/{_seg(job_id)}"
        return self._send(Call("GET", path, read=_reader(m.Job)))


def _webhook_filter(
    types: Optional[Sequence[str]], prefix: Optional[Key], ref: Optional[str]
) -> Dict[str, Any]:
    if isinstance(types, str):
        types = [types]
    levels = None if prefix is None else (prefix.split(".") if isinstance(prefix, str) else list(prefix))
    return _options(types=list(types) if types else None, prefix=levels, ref=ref)


def _retention(body: Dict[str, Any]) -> Optional[m.Retention]:
    policy = body.get("retention")
    return None if policy is None else m.Retention.model_validate(policy)


def _protection(body: Dict[str, Any]) -> Optional[m.Protection]:
    protection = body.get("protection")
    return None if protection is None else m.Protection.model_validate(protection)


def _filters(**params: Any) -> Dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _history(*, dry_run: bool, resolutions: Sequence[Resolution], **fields: Any) -> Dict[str, Any]:
    body = _options(**fields)
    if dry_run:
        body["dry-run"] = True
    if body.get("squash") is False:
        del body["squash"]
    if resolutions:
        body["resolutions"] = list(resolutions)
    return body


class Branch:
    """One branch, for short calls: `client.branch("dev").create(from_="main")`."""

    def __init__(self, versioning: Versioning, name: str) -> None:
        self._v = versioning
        self.name = name

    def __repr__(self) -> str:
        return f"Branch({self._v.catalog_name!r}, {self.name!r})"

    def create(self, from_: Optional[str] = None) -> m.Ref:
        return self._v.create_ref(self.name, from_=from_)

    def get(self) -> m.ResolvedRef:
        return self._v.get_ref(self.name)

    def delete(self, expected_hash: Optional[str] = None) -> None:
        return self._v.delete_ref(self.name, expected_hash=expected_hash)

    def assign(self, to: str, expected_hash: str) -> m.AssignedRef:
        return self._v.assign_ref(self.name, to, expected_hash)

    def log(self, **filters: Any) -> Iterator[m.Commit]:
        return self._v.log(self.name, **filters)

    def merge_into(self, target: Optional[str] = None, **options: Any) -> m.HistoryResult:
        """Merges this branch into `target` (the default branch when None)."""
        return self._v.merge(self.name, target, **options)


class Tag:
    """One tag: create, read, delete."""

    def __init__(self, versioning: Versioning, name: str) -> None:
        self._v = versioning
        self.name = name

    def __repr__(self) -> str:
        return f"Tag({self._v.catalog_name!r}, {self.name!r})"

    def create(self, from_: Optional[str] = None) -> m.Ref:
        return self._v.create_ref(self.name, from_=from_, type="tag")

    def get(self) -> m.ResolvedRef:
        return self._v.get_ref(self.name)

    def delete(self) -> None:
        return self._v.delete_ref(self.name)


class Tenants(_Resource):
    """Tenants of the deployment (root only)."""

    @operation("GET /api/v1/tenants")
    def list(self) -> Iterator[m.Tenant]:
        return self._admin_pages("/api/v1/tenants", "tenants", m.Tenant)

    @operation("POST /api/v1/tenants")
    def create(
        self,
        name: str,
        description: Optional[str] = None,
        admin_username: Optional[str] = None,
        admin_password: Optional[str] = None,
    ) -> m.Tenant:
        """A tenant, with its first administrator when both admin fields are given."""
        body: Dict[str, Any] = _options(name=name, description=description)
        if admin_username is not None or admin_password is not None:
            body["admin"] = {"username": admin_username, "password": admin_password}
        return self._send(Call("POST", "/api/v1/tenants", json=body, read=_reader(m.Tenant)))

    @operation("GET /api/v1/tenants/{tenant}")
    def get(self, name: str) -> m.Tenant:
        return self._send(Call("GET", f"/api/v1/tenants/{_seg(name)}", read=_reader(m.Tenant)))

    @operation("PATCH /api/v1/tenants/{tenant}")
    def update(self, name: str, description: Optional[str]) -> m.Tenant:
        """Sets the description (None clears it)."""
        body = {"description": description}
        return self._send(Call("PATCH", f"/api/v1/tenants/{_seg(name)}", json=body, read=_reader(m.Tenant)))

    @operation("DELETE /api/v1/tenants/{tenant}")
    def delete(self, name: str) -> None:
        return self._send(Call("DELETE", f"/api/v1/tenants/{_seg(name)}", read=_nothing))


_KEEP = object()
"""A warehouse's credentials left out of a replacement: kept as stored."""


class Warehouses(_Resource):
    """Where a tenant's catalogs keep their files, and the keys to reach them."""

    @operation("GET /api/v1/warehouses")
    def list(self) -> Iterator[m.Warehouse]:
        return self._admin_pages("/api/v1/warehouses", "warehouses", m.Warehouse)

    @operation("POST /api/v1/warehouses")
    def create(
        self, name: str, storage: Dict[str, Any], credentials: Optional[Dict[str, Any]] = None
    ) -> m.Warehouse:
        """`storage` as `{"type": "local", "root": "/data/lake"}`, `{"type": "s3", ...}`, ...;
        `credentials` stored encrypted and never shown again."""
        body = _options(name=name, storage=storage, credentials=credentials)
        return self._send(Call("POST", "/api/v1/warehouses", json=body, read=_reader(m.Warehouse)))

    @operation("GET /api/v1/warehouses/{warehouse}")
    def get(self, name: str) -> m.Warehouse:
        return self._send(Call("GET", f"/api/v1/warehouses/{_seg(name)}", read=_reader(m.Warehouse)))

    @operation("PUT /api/v1/warehouses/{warehouse}")
    def replace(
        self,
        name: str,
        storage: Dict[str, Any],
        credentials: Any = _KEEP,
        version: Optional[int] = None,
    ) -> m.Warehouse:
        """New storage settings; credentials kept when left out, removed with None; with
        `version`, refused (409) if the warehouse changed since."""
        body: Dict[str, Any] = {"storage": storage}
        if credentials is not _KEEP:
            body["credentials"] = credentials
        if version is not None:
            body["version"] = version
        return self._send(Call("PUT", f"/api/v1/warehouses/{_seg(name)}", json=body, read=_reader(m.Warehouse)))

    @operation("DELETE /api/v1/warehouses/{warehouse}")
    def delete(self, name: str) -> None:
        return self._send(Call("DELETE", f"/api/v1/warehouses/{_seg(name)}", read=_nothing))


class Catalogs(_Resource):
    """The tenant's catalogs (each bound to a warehouse)."""

    @operation("GET /api/v1/catalogs")
    def list(self) -> List[m.Catalog]:
        def read(body: Any) -> List[m.Catalog]:
            return [m.Catalog.model_validate(c) for c in body["catalogs"]]

        return self._send(Call("GET", "/api/v1/catalogs", read=read))

    @operation("POST /api/v1/catalogs")
    def create(self, name: str, warehouse: str, properties: Optional[Dict[str, str]] = None) -> m.Catalog:
        body = _options(name=name, warehouse=warehouse, properties=properties)
        return self._send(Call("POST", "/api/v1/catalogs", json=body, read=_reader(m.Catalog)))

    @operation("GET /api/v1/catalogs/{catalog}")
    def get(self, name: str) -> m.Catalog:
        return self._send(Call("GET", f"/api/v1/catalogs/{_seg(name)}", read=_reader(m.Catalog)))

    @operation("DELETE /api/v1/catalogs/{catalog}")
    def delete(self, name: str) -> None:
        return self._send(Call("DELETE", f"/api/v1/catalogs/{_seg(name)}", read=_nothing))


class Users(_Resource):
    """The tenant's users."""

    @operation("GET /api/v1/users")
    def list(self) -> Iterator[m.User]:
        return self._admin_pages("/api/v1/users", "users", m.User)

    @operation("POST /api/v1/users")
    def create(self, username: str, password: str, admin: bool = False) -> m.User:
        body = {"username": username, "password": password, "admin": admin}
        return self._send(Call("POST", "/api/v1/users", json=body, read=_reader(m.User)))

    @operation("GET /api/v1/users/{user}")
    def get(self, username: str) -> m.User:
        return self._send(Call("GET", f"/api/v1/users/{_seg(username)}", read=_reader(m.User)))

    @operation("DELETE /api/v1/users/{user}")
    def delete(self, username: str) -> None:
        return self._send(Call("DELETE", f"/api/v1/users/{_seg(username)}", read=_nothing))

    @operation("PUT /api/v1/users/{user}/disabled")
    def set_disabled(self, username: str, disabled: bool) -> m.User:
        path = f"/api/v1/users/{_seg(username)}/disabled"
        return self._send(Call("PUT", path, json={"disabled": disabled}, read=_reader(m.User)))

    @operation("PUT /api/v1/users/{user}/password")
    def reset_password(self, username: str, password: str) -> None:
        """An administrator's reset: the user's tokens stop working."""
        path = f"/api/v1/users/{_seg(username)}/password"
        return self._send(Call("PUT", path, json={"password": password}, read=_nothing))


class ServiceUsers(_Resource):
    """The tenant's service users and their API keys."""

    @operation("GET /api/v1/service-users")
    def list(self) -> Iterator[m.ServiceUser]:
        return self._admin_pages("/api/v1/service-users", "service-users", m.ServiceUser)

    @operation("POST /api/v1/service-users")
    def create(self, name: str) -> m.ServiceUser:
        return self._send(Call("POST", "/api/v1/service-users", json={"name": name}, read=_reader(m.ServiceUser)))

    @operation("GET /api/v1/service-users/{name}")
    def get(self, name: str) -> m.ServiceUser:
        return self._send(Call("GET", f"/api/v1/service-users/{_seg(name)}", read=_reader(m.ServiceUser)))

    @operation("DELETE /api/v1/service-users/{name}")
    def delete(self, name: str) -> None:
        return self._send(Call("DELETE", f"/api/v1/service-users/{_seg(name)}", read=_nothing))

    @operation("GET /api/v1/service-users/{name}/keys")
    def list_keys(self, name: str) -> List[m.ServiceKey]:
        def read(body: Any) -> List[m.ServiceKey]:
            return [m.ServiceKey.model_validate(k) for k in body["keys"]]

        return self._send(Call("GET", f"/api/v1/service-users/{_seg(name)}/keys", read=read))

    @operation("POST /api/v1/service-users/{name}/keys")
    def create_key(self, name: str, expires_in_seconds: Optional[int] = None) -> m.NewServiceKey:
        """A new key; its secret (`.key`) is shown only in this answer."""
        body = _options(expires_in_seconds=expires_in_seconds)
        path = f"/api/v1/service-users/{_seg(name)}/keys"
        return self._send(Call("POST", path, json=body, read=_reader(m.NewServiceKey)))

    @operation("DELETE /api/v1/service-users/{name}/keys/{key}")
    def revoke_key(self, name: str, key_id: str) -> m.ServiceKey:
        path = f"/api/v1/service-users/{_seg(name)}/keys/{_seg(key_id)}"
        return self._send(Call("DELETE", path, read=_reader(m.ServiceKey)))

    @operation("POST /api/v1/service-users/{name}/keys/{key}/rotate")
    def rotate_key(
        self,
        name: str,
        key_id: str,
        grace_seconds: Optional[int] = None,
        expires_in_seconds: Optional[int] = None,
    ) -> m.NewServiceKey:
        """A new key for the same service user; the old one stops now, or after the grace."""
        body = _options(grace_seconds=grace_seconds, expires_in_seconds=expires_in_seconds)
        path = f"/api/v1/service-users/{_seg(name)}/keys/{_seg(key_id)}/rotate"
        return self._send(Call("POST", path, json=body, read=_reader(m.NewServiceKey)))


GrantLike = Union[m.Grant, Dict[str, Any]]


def _grants(grants: Sequence[GrantLike]) -> List[Dict[str, Any]]:
    return [
        g.model_dump(by_alias=True, exclude_none=True) if isinstance(g, m.Grant) else dict(g)
        for g in grants
    ]


class Roles(_Resource):
    """Roles (grants of privileges) and who holds them."""

    @operation("GET /api/v1/roles")
    def list(self) -> Iterator[m.Role]:
        return self._admin_pages("/api/v1/roles", "roles", m.Role)

    @operation("POST /api/v1/roles")
    def create(self, name: str, grants: Sequence[GrantLike], disabled: bool = False) -> m.Role:
        body = {"name": name, "grants": _grants(grants), "disabled": disabled}
        return self._send(Call("POST", "/api/v1/roles", json=body, read=_reader(m.Role)))

    @operation("GET /api/v1/roles/{role}")
    def get(self, name: str) -> m.Role:
        return self._send(Call("GET", f"/api/v1/roles/{_seg(name)}", read=_reader(m.Role)))

    @operation("PUT /api/v1/roles/{role}")
    def replace(self, name: str, grants: Sequence[GrantLike], version: int, disabled: bool = False) -> m.Role:
        """The whole role anew, at the `version` read (409 if it changed since)."""
        body = {"grants": _grants(grants), "version": version, "disabled": disabled}
        return self._send(Call("PUT", f"/api/v1/roles/{_seg(name)}", json=body, read=_reader(m.Role)))

    @operation("DELETE /api/v1/roles/{role}")
    def delete(self, name: str, version: Optional[int] = None) -> None:
        params = {"version": version}
        return self._send(Call("DELETE", f"/api/v1/roles/{_seg(name)}", params=params, read=_nothing))

    @operation("GET /api/v1/roles/{role}/members")
    def members(self, name: str) -> Iterator[str]:
        """Principal ids holding the role (`user:acme/ana`, `group:acme/okta/analysts`, ...)."""

        def call(token: Optional[str]) -> Call:
            return Call("GET", f"/api/v1/roles/{_seg(name)}/members", params={"page-token": token})

        return self._t.pages(Paging(call, "members", str))

    @operation("PUT /api/v1/roles/{role}/members/{principal}")
    def bind(self, name: str, principal: str) -> None:
        path = f"/api/v1/roles/{_seg(name)}/members/{_seg(principal)}"
        return self._send(Call("PUT", path, read=_nothing))

    @operation("DELETE /api/v1/roles/{role}/members/{principal}")
    def unbind(self, name: str, principal: str) -> None:
        path = f"/api/v1/roles/{_seg(name)}/members/{_seg(principal)}"
        return self._send(Call("DELETE", path, read=_nothing))


class ExternalPrincipals(_Resource):
    """Principals that identity providers signed in."""

    @operation("GET /api/v1/external-principals")
    def list(self, scope: Optional[str] = None) -> Iterator[m.ExternalPrincipal]:
        """The tenant's; `scope="root"` (root only) the root scope's providers'."""
        return self._admin_pages("/api/v1/external-principals", "principals", m.ExternalPrincipal, scope=scope)

    @operation("GET /api/v1/external-principals/{principal}")
    def get(self, id: str) -> m.ExternalPrincipal:
        path = f"/api/v1/external-principals/{_seg(id)}"
        return self._send(Call("GET", path, read=_reader(m.ExternalPrincipal)))

    @operation("PUT /api/v1/external-principals/{principal}/disabled")
    def set_disabled(self, id: str, disabled: bool) -> m.ExternalPrincipal:
        path = f"/api/v1/external-principals/{_seg(id)}/disabled"
        return self._send(Call("PUT", path, json={"disabled": disabled}, read=_reader(m.ExternalPrincipal)))


class Audit(_Resource):
    """The hash-chained audit log."""

    @operation("GET /api/v1/audit")
    def events(
        self,
        *,
        tenant: Optional[str] = None,
        principal: Optional[str] = None,
        action: Optional[str] = None,
        resource_type: Optional[str] = None,
        resource_id: Optional[str] = None,
        from_: Optional[str] = None,
        until: Optional[str] = None,
    ) -> Iterator[m.AuditEvent]:
        """Events, newest first, filtered; times in RFC 3339 (`from_` inclusive)."""
        filters = _options(
            tenant=tenant,
            principal=principal,
            action=action,
            resource_type=resource_type,
            resource_id=resource_id,
            until=until,
        )
        if from_ is not None:
            filters["from"] = from_

        def call(token: Optional[str]) -> Call:
            return Call("GET", "/api/v1/audit", params={**filters, "page-token": token})

        return self._t.pages(Paging(call, "events", _reader(m.AuditEvent)))

    @operation("GET /api/v1/audit/verify")
    def verify(self) -> m.AuditVerification:
        """Checks the hash chain."""
        return self._send(Call("GET", "/api/v1/audit/verify", read=_reader(m.AuditVerification)))


class Account(_Resource):
    """The signed-in caller's own account, and token revocation."""

    def whoami(self) -> m.Whoami:
        return self._send(Call("GET", "/api/v1/whoami", read=_reader(m.Whoami)))

    @operation("POST /api/v1/me/password")
    def change_password(self, current: str, new: str) -> None:
        body = {"current": current, "new": new}
        return self._send(Call("POST", "/api/v1/me/password", json=body, read=_nothing))

    @operation("POST /api/v1/tokens/revoke")
    def revoke_token(self, token_id: str) -> None:
        """Refuses the token with this id (`jti`) from now on."""
        return self._send(Call("POST", "/api/v1/tokens/revoke", json={"token-id": token_id}, read=_nothing))

    def identity_providers(self, tenant: Optional[str] = None) -> List[Dict[str, Any]]:
        """The identity providers a tenant's people sign in through (public)."""

        def read(body: Any) -> List[Dict[str, Any]]:
            return list(body["providers"])

        params = {"tenant": tenant}
        return self._send(Call("GET", "/api/v1/auth/providers", params=params, read=read, anonymous=True))
