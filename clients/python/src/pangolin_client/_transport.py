"""Requests as values, and the two ways of sending them (blocking and asyncio).

Every operation of the API is written once (in `_api`) as a function that builds a `Call`
and hands it to its transport; the blocking transport answers with the value, the asyncio
one with an awaitable of it, so the sync and async clients cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Tuple,
    TypeVar,
)

import json

import httpx

from .auth import Credential
from .errors import PangolinError, from_response

T = TypeVar("T")

#: The header through which root chooses the tenant it acts in.
TENANT_HEADER = "X-Pangolin-Tenant"


@dataclass(frozen=True)
class Call:
    """One request and how to read its answer (`read` gets the JSON body, or None for an
    empty one)."""

    method: str
    path: str
    params: Dict[str, Any] = field(default_factory=dict)
    json: Any = None
    read: Callable[[Any], Any] = lambda body: body
    #: Sent without the credential (sign-in itself, public routes).
    anonymous: bool = False
    #: A body sent as it is (a bundle), with this media type, instead of `json`.
    content: Optional[bytes] = None
    content_type: str = "application/octet-stream"
    #: Answered with the body's bytes (a bundle), not JSON.
    raw: bool = False


@dataclass(frozen=True)
class Paging:
    """A listing read page by page: `call(token)` asks for the page after `token` (None for
    the first); `items` names the list in each page; `model` reads one item."""

    call: Callable[[Optional[str]], Call]
    items: str
    model: Callable[[Any], Any]
    #: How this listing's page size is spelled (`pageSize` on the versioning routes).
    size_param: str = "page-size"

    def read(self, page: Any) -> "Tuple[List[Any], Optional[str]]":
        """The items of one page, and the token of the next (None after the last)."""
        return [self.model(item) for item in page[self.items]], page.get("next-page-token")

    def page(self, token: Optional[str], size: Optional[int]) -> Call:
        call = self.call(token)
        if size is None:
            return call
        return replace(call, params={**call.params, self.size_param: size})


def _query(params: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _body(response: httpx.Response, call: Call) -> Any:
    if call.raw:
        return response.content
    if response.status_code == 204 or not response.content:
        return None
    return response.json()


#: How long a stream may be quiet: the server sends a keep-alive every 15 seconds.
STREAM_TIMEOUT = httpx.Timeout(10.0, read=60.0)


class _Events:
    """Reads Server-Sent Events line by line: `feed` answers with the data of a finished event
    (parsed JSON), or None; an `error` event raises."""

    def __init__(self) -> None:
        self.kind = ""
        self.data: List[str] = []

    def feed(self, line: str) -> Any:
        if line == "":
            kind, data = self.kind, "\n".join(self.data)
            self.kind, self.data = "", []
            if not data:
                return None
            body = json.loads(data)
            if kind == "error":
                error = body.get("error", {})
                raise PangolinError(
                    int(error.get("code", 500)), str(error.get("type", "")), str(error.get("message", data)), body
                )
            return body
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self.kind = value
        elif name == "data":
            self.data.append(value)
        return None


class _Base:
    def __init__(
        self, credential: Credential, acting_tenant: Optional[str], page_size: Optional[int]
    ) -> None:
        self.credential = credential
        self.acting_tenant = acting_tenant
        #: Items per page asked of listings (the server's default when None).
        self.page_size = page_size

    def _headers(self, call: Call) -> Dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.acting_tenant:
            headers[TENANT_HEADER] = self.acting_tenant
        if not call.anonymous and self.credential.token:
            headers["Authorization"] = f"Bearer {self.credential.token}"
        if call.content is not None:
            headers["Content-Type"] = call.content_type
        if call.raw:
            headers["Accept"] = "*/*"
        return headers

    @staticmethod
    def _args(call: Call) -> Dict[str, Any]:
        args: Dict[str, Any] = {"params": _query(call.params)}
        if call.json is not None:
            args["json"] = call.json
        if call.content is not None:
            args["content"] = call.content
        return args


class SyncTransport(_Base):
    """Sends calls with an `httpx.Client` and answers with their values."""

    def __init__(
        self,
        http: httpx.Client,
        credential: Credential,
        acting_tenant: Optional[str] = None,
        page_size: Optional[int] = None,
    ) -> None:
        super().__init__(credential, acting_tenant, page_size)
        self.http = http

    def _request(self, call: Call) -> httpx.Response:
        return self.http.request(
            call.method, call.path, headers=self._headers(call), **self._args(call)
        )

    def sign_in(self) -> None:
        """Signs in (or renews) with the credential, where it needs a call for that."""
        last: Optional[httpx.Response] = None
        for call in self.credential.renewals():
            response = self._request(call)
            if response.is_success:
                self.credential.took(response.json())
                return
            last = response
        if last is not None:
            raise from_response(last)

    def send(self, call: Call) -> Any:
        if not call.anonymous and self.credential.must_sign_in():
            self.sign_in()
        response = self._request(call)
        if response.status_code == 401 and not call.anonymous and self.credential.renewable():
            self.credential.expired()
            self.sign_in()
            response = self._request(call)
        if not response.is_success:
            raise from_response(response)
        return call.read(_body(response, call))

    def pages(self, paging: Paging) -> Iterator[Any]:
        token: Optional[str] = None
        while True:
            items, token = paging.read(self.send(paging.page(token, self.page_size)))
            yield from items
            if not token:
                return

    def gather(self, paging: Paging, then: Callable[[Any, List[Any]], T]) -> T:
        """Every page: `then(first page, all items)`."""
        first = self.send(paging.page(None, self.page_size))
        items, token = paging.read(first)
        while token:
            more, token = paging.read(self.send(paging.page(token, self.page_size)))
            items.extend(more)
        return then(first, items)

    def stream(self, call: Call) -> Iterator[Any]:
        """The events of a Server-Sent Events route, read as they come."""
        if not call.anonymous and self.credential.must_sign_in():
            self.sign_in()
        headers = {**self._headers(call), "Accept": "text/event-stream"}
        with self.http.stream(
            call.method, call.path, headers=headers, timeout=STREAM_TIMEOUT, **self._args(call)
        ) as response:
            if not response.is_success:
                response.read()
                raise from_response(response)
            events = _Events()
            for line in response.iter_lines():
                body = events.feed(line)
                if body is not None:
                    yield call.read(body)

    def close(self) -> None:
        self.http.close()


class AsyncTransport(_Base):
    """Sends calls with an `httpx.AsyncClient`; answers with awaitables (and async
    iterators for listings)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        credential: Credential,
        acting_tenant: Optional[str] = None,
        page_size: Optional[int] = None,
    ) -> None:
        super().__init__(credential, acting_tenant, page_size)
        self.http = http

    async def _request(self, call: Call) -> httpx.Response:
        return await self.http.request(
            call.method, call.path, headers=self._headers(call), **self._args(call)
        )

    async def sign_in(self) -> None:
        last: Optional[httpx.Response] = None
        for call in self.credential.renewals():
            response = await self._request(call)
            if response.is_success:
                self.credential.took(response.json())
                return
            last = response
        if last is not None:
            raise from_response(last)

    async def send(self, call: Call) -> Any:
        if not call.anonymous and self.credential.must_sign_in():
            await self.sign_in()
        response = await self._request(call)
        if response.status_code == 401 and not call.anonymous and self.credential.renewable():
            self.credential.expired()
            await self.sign_in()
            response = await self._request(call)
        if not response.is_success:
            raise from_response(response)
        return call.read(_body(response, call))

    async def pages(self, paging: Paging) -> AsyncIterator[Any]:
        token: Optional[str] = None
        while True:
            items, token = paging.read(await self.send(paging.page(token, self.page_size)))
            for item in items:
                yield item
            if not token:
                return

    async def gather(self, paging: Paging, then: Callable[[Any, List[Any]], T]) -> T:
        first = await self.send(paging.page(None, self.page_size))
        items, token = paging.read(first)
        while token:
            more, token = paging.read(await self.send(paging.page(token, self.page_size)))
            items.extend(more)
        return then(first, items)

    async def stream(self, call: Call) -> AsyncIterator[Any]:
        if not call.anonymous and self.credential.must_sign_in():
            await self.sign_in()
        headers = {**self._headers(call), "Accept": "text/event-stream"}
        async with self.http.stream(
            call.method, call.path, headers=headers, timeout=STREAM_TIMEOUT, **self._args(call)
        ) as response:
            if not response.is_success:
                await response.aread()
                raise from_response(response)
            events = _Events()
            async for line in response.aiter_lines():
                body = events.feed(line)
                if body is not None:
                    yield call.read(body)

    async def aclose(self) -> None:
        await self.http.aclose()
