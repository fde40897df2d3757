"""The clients: `PangolinClient` (blocking) and `AsyncPangolinClient` (asyncio), with the
same methods (the async ones awaitable, its listings async iterators).

A client works in one catalog (`catalog=`, `default` unless named) for the versioning
methods (`branch`, `log`, `diff`, `merge`, ...); `client.on(catalog)` works in another with
the same sign-in. Admin resources hang off the client: `client.tenants`, `.warehouses`,
`.catalogs`, `.users`, `.service_users`, `.roles`, `.external_principals`, `.audit`."""

from __future__ import annotations

import contextlib
from typing import Any, AsyncIterator, Dict, Iterator, Optional

import httpx

from . import _api
from ._transport import TENANT_HEADER, AsyncTransport, SyncTransport
from .auth import Anonymous, ApiKey, Credential, Password, Token
from .models import Whoami


def _credential(
    credential: Optional[Credential],
    api_key: Optional[str],
    token: Optional[str],
    username: Optional[str],
    password: Optional[str],
    tenant: Optional[str],
) -> Credential:
    given = [
        c
        for c in (
            credential,
            ApiKey(api_key) if api_key else None,
            Token(token) if token else None,
            Password(username, password, tenant) if username and password else None,
        )
        if c is not None
    ]
    if (username is None) != (password is None):
        raise ValueError("a password sign-in needs both `username` and `password`")
    if len(given) > 1:
        raise ValueError("give one way to sign in: api_key, token, username and password, or credential")
    return given[0] if given else Anonymous()


class _Common(_api.Versioning):
    """What both clients share: the versioning API of their catalog (inherited), the admin
    resources, and the properties PyIceberg needs."""

    #: The httpx client class and the transport over it, set by each client.
    _http_class: Any
    _transport_class: Any

    def __init__(
        self,
        uri: str,
        *,
        catalog: str = "default",
        api_key: Optional[str] = None,
        token: Optional[str] = None,
        username: Optional[str] = None,
        password: Optional[str] = None,
        tenant: Optional[str] = None,
        credential: Optional[Credential] = None,
        acting_tenant: Optional[str] = None,
        timeout: float = 30.0,
        page_size: Optional[int] = None,
        http: Any = None,
    ) -> None:
        cred = _credential(credential, api_key, token, username, password, tenant)
        client = http or self._http_class(base_url=uri.rstrip("/"), timeout=timeout)
        transport = self._transport_class(client, cred, acting_tenant, page_size)
        _api.Versioning.__init__(self, transport, catalog)
        self.uri = uri.rstrip("/")
        self.tenants = _api.Tenants(transport)
        self.warehouses = _api.Warehouses(transport)
        self.catalogs = _api.Catalogs(transport)
        self.users = _api.Users(transport)
        self.service_users = _api.ServiceUsers(transport)
        self.roles = _api.Roles(transport)
        self.external_principals = _api.ExternalPrincipals(transport)
        self.audit = _api.Audit(transport)
        self.account = _api.Account(transport)

    def on(self, catalog: str) -> _api.Versioning:
        """Branches, tags and history of another catalog, with this client's sign-in."""
        return _api.Versioning(self._t, catalog)

    def whoami(self) -> Whoami:
        return self.account.whoami()

    def _rest_catalog(self, ref: Optional[str], catalog: Optional[str], properties: Dict[str, str]) -> Any:
        from pyiceberg.catalog.rest import RestCatalog

        props = {**self.catalog_properties(ref, catalog), **properties}
        return RestCatalog(f"pangolin-{catalog or self.catalog_name}", **props)

    def catalog_properties(self, ref: Optional[str] = None, catalog: Optional[str] = None) -> Dict[str, str]:
        """The properties a PyIceberg `RestCatalog` needs to reach `catalog` (this client's
        when None) at `ref` (its default branch when None) as this client's caller."""
        warehouse = catalog or self.catalog_name
        if ref:
            warehouse = f"{warehouse}@{ref}"
        properties = {"uri": self.uri, "warehouse": warehouse}
        token = self._t.credential.token
        if token:
            properties["token"] = token
        if self._t.acting_tenant:
            properties[f"header.{TENANT_HEADER}"] = self._t.acting_tenant
        return properties


class PangolinClient(_Common):
    """A blocking client. Sign in with one of `api_key=`, `token=`, `username=` and
    `password=` (with `tenant=` unless a root-scope user), or `credential=`; none for a server
    run with `--no-auth`. `acting_tenant=` is the tenant root acts in; `page_size=` the items
    per page asked of listings, which page as they are iterated; `http=` an `httpx.Client` of
    your own (its `base_url` the server's)."""

    _http_class = httpx.Client
    _transport_class = SyncTransport

    def __enter__(self) -> "PangolinClient":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def close(self) -> None:
        self._t.close()

    def sign_in(self) -> None:
        """Signs in now (a password client otherwise does before its first request)."""
        self._t.sign_in()

    def catalog(self, ref: Optional[str] = None, catalog: Optional[str] = None, **properties: str) -> Any:
        """A PyIceberg `RestCatalog` on `catalog` at `ref`, signed in as this client (a
        password client's access token lasts an hour: long jobs use an API key)."""
        if self._t.credential.must_sign_in():
            self.sign_in()
        return self._rest_catalog(ref, catalog, properties)

    @contextlib.contextmanager
    def branch_context(
        self,
        name: str,
        from_: Optional[str] = None,
        *,
        into: Optional[str] = None,
        keep: bool = False,
        message: Optional[str] = None,
    ) -> Iterator[Any]:
        """Creates branch `name` from `from_`, yields a PyIceberg catalog bound to it, and on
        leaving merges it into `into` (`from_`, or the default branch) and deletes it (unless
        `keep`). An exception inside deletes the branch instead (unless `keep`) and goes on;
        a merge that conflicts raises `ConflictError` and keeps the branch to resolve."""
        self.create_ref(name, from_=from_)
        try:
            yield self.catalog(ref=name)
        except BaseException:
            if not keep:
                self.delete_ref(name)
            raise
        self.merge(name, into or from_, message=message)
        if not keep:
            self.delete_ref(name)


class AsyncPangolinClient(_Common):
    """The asyncio client: as `PangolinClient`, with awaitable methods and async iterators
    for listings (`async for commit in client.log("main")`); `http=` an `httpx.AsyncClient`."""

    _http_class = httpx.AsyncClient
    _transport_class = AsyncTransport

    async def __aenter__(self) -> "AsyncPangolinClient":
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._t.aclose()

    async def sign_in(self) -> None:
        await self._t.sign_in()

    async def catalog(self, ref: Optional[str] = None, catalog: Optional[str] = None, **properties: str) -> Any:
        """As `PangolinClient.catalog` (PyIceberg itself blocks)."""
        if self._t.credential.must_sign_in():
            await self.sign_in()
        return self._rest_catalog(ref, catalog, properties)

    @contextlib.asynccontextmanager
    async def branch_context(
        self,
        name: str,
        from_: Optional[str] = None,
        *,
        into: Optional[str] = None,
        keep: bool = False,
        message: Optional[str] = None,
    ) -> AsyncIterator[Any]:
        """As `PangolinClient.branch_context`."""
        await self.create_ref(name, from_=from_)
        try:
            yield await self.catalog(ref=name)
        except BaseException:
            if not keep:
                await self.delete_ref(name)
            raise
        await self.merge(name, into or from_, message=message)
        if not keep:
            await self.delete_ref(name)
