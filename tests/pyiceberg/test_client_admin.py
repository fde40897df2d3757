"""The Python client's admin side against the real server: tenants, warehouses, catalogs,
users, service users and API keys, roles and members, external principals, the audit log;
listings that page; each way of signing in (password, API key, token, the key's OAuth2
client credentials through PyIceberg)."""

import uuid

import httpx
import pytest

from pangolin_client import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    Grant,
    NotFoundError,
    PangolinClient,
    UnauthorizedError,
)


def name(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def root(secure_server):
    with PangolinClient(secure_server.url, username="root", password=secure_server.root_password) as client:
        yield client


@pytest.fixture
def tenant(root, tmp_path):
    """A fresh tenant with an administrator `boss`, a local warehouse and catalog `lake`;
    yields (tenant, admin client)."""
    tenant = name("t")
    created = root.tenants.create(tenant, description="for the client tests", admin_username="boss", admin_password="a-long-enough-password")
    assert created.admin == f"user:{tenant}/boss"
    with PangolinClient(root.uri, username="boss", password="a-long-enough-password", tenant=tenant, catalog="lake") as admin:
        admin.warehouses.create("files", {"type": "local", "root": str(tmp_path)})
        admin.catalogs.create("lake", "files", properties={"owner": "data-team"})
        yield tenant, admin


def test_tenants_are_created_listed_page_by_page_updated_and_deleted(root):
    made = [name("pg") for _ in range(3)]
    for tenant in made:
        root.tenants.create(tenant)
    paged = PangolinClient(root.uri, token=_token(root), page_size=1)
    listed = [t.name for t in paged.tenants.list()]
    assert set(made) <= set(listed) and len(listed) == len(set(listed))
    assert root.tenants.get(made[0]).name == made[0]
    updated = root.tenants.update(made[0], "described")
    assert updated.description == "described" and updated.updated_at >= updated.created_at
    assert root.tenants.update(made[0], None).description is None
    for tenant in made:
        root.tenants.delete(tenant)
    with pytest.raises(NotFoundError):
        root.tenants.get(made[0])


def _token(client):
    client.whoami()
    return client._t.credential.token


def test_warehouses_and_catalogs(tenant, tmp_path):
    _, admin = tenant
    warehouse = admin.warehouses.get("files")
    assert warehouse.storage["type"] == "local" and warehouse.version >= 1
    replaced = admin.warehouses.replace("files", {"type": "local", "root": str(tmp_path)}, version=warehouse.version)
    assert replaced.version == warehouse.version + 1
    with pytest.raises(ConflictError):
        admin.warehouses.replace("files", {"type": "local", "root": str(tmp_path)}, version=warehouse.version)
    assert [w.name for w in admin.warehouses.list()] == ["files"]
    catalog = admin.catalogs.get("lake")
    assert catalog.warehouse == "files" and catalog.default_branch == "main"
    assert catalog.properties == {"owner": "data-team"}
    assert [c.name for c in admin.catalogs.list()] == ["lake"]
    # A warehouse a catalog is bound to stays; an empty catalog goes, then its warehouse.
    with pytest.raises(ConflictError):
        admin.warehouses.delete("files")
    admin.catalogs.create("scratch", "files")
    admin.catalogs.delete("scratch")
    with pytest.raises(NotFoundError):
        admin.catalogs.get("scratch")
    with pytest.raises(BadRequestError):
        admin.catalogs.create("no spaces", "files")
    admin.catalogs.delete("lake")
    admin.warehouses.delete("files")
    assert list(admin.warehouses.list()) == []


def test_users_roles_and_what_they_allow(tenant):
    tenant_name, admin = tenant
    admin.users.create("ana", "ana-long-password")
    assert admin.users.get("ana").id == f"user:{tenant_name}/ana"
    grants = [Grant(privilege="read", resource={"type": "catalog", "catalog": "lake"})]
    role = admin.roles.create("readers", grants)
    assert role.version >= 1 and role.grants[0].privilege == "read"
    assert admin.roles.get("readers") == role
    assert [r.name for r in admin.roles.list()] == ["readers"]
    ana = PangolinClient(admin.uri, username="ana", password="ana-long-password", tenant=tenant_name, catalog="lake")
    with pytest.raises(ForbiddenError):
        ana.get_ref("main")
    admin.roles.bind("readers", f"user:{tenant_name}/ana")
    assert list(admin.roles.members("readers")) == [f"user:{tenant_name}/ana"]
    assert ana.get_ref("main").type == "branch"
    with pytest.raises(ForbiddenError):
        ana.branch("dev").create()
    # Replacing the role at a stale version is a conflict; at the current one it works.
    write = {"privilege": "manage-refs", "resource": {"type": "catalog", "catalog": "lake"}}
    admin.roles.replace("readers", [*grants, write], version=role.version)
    with pytest.raises(ConflictError):
        admin.roles.replace("readers", grants, version=role.version)
    ana.branch("dev").create()
    admin.roles.unbind("readers", f"user:{tenant_name}/ana")
    with pytest.raises(ForbiddenError):
        ana.get_ref("main")

    # A disabled user is refused; a reset password takes the old one away.
    admin.users.set_disabled("ana", True)
    with pytest.raises(UnauthorizedError):
        PangolinClient(admin.uri, username="ana", password="ana-long-password", tenant=tenant_name).whoami()
    admin.users.set_disabled("ana", False)
    admin.users.reset_password("ana", "another-long-password")
    with pytest.raises(UnauthorizedError):
        PangolinClient(admin.uri, username="ana", password="ana-long-password", tenant=tenant_name).whoami()
    renewed = PangolinClient(admin.uri, username="ana", password="another-long-password", tenant=tenant_name)
    renewed.account.change_password("another-long-password", "yet-another-password")
    assert PangolinClient(admin.uri, username="ana", password="yet-another-password", tenant=tenant_name).whoami().principal.endswith("/ana")
    admin.roles.delete("readers")
    admin.users.delete("ana")
    assert [u.username for u in admin.users.list()] == ["boss"]


def test_service_users_sign_in_with_their_keys_here_and_in_pyiceberg(tenant):
    tenant_name, admin = tenant
    admin.service_users.create("etl")
    key = admin.service_users.create_key("etl", expires_in_seconds=3600)
    assert key.key.startswith("pgl_") and key.expires_at is not None
    admin.roles.create("etl-writes", [{"privilege": p, "resource": {"type": "catalog", "catalog": "lake"}} for p in ("read", "write", "create", "manage-refs")])
    admin.roles.bind("etl-writes", f"service:{tenant_name}/etl")

    etl = PangolinClient(admin.uri, api_key=key.key, catalog="lake")
    assert etl.whoami().principal == f"service:{tenant_name}/etl"
    with etl.branch_context("load", from_="main") as catalog:
        catalog.create_namespace("landing")
    assert [e.key for e in etl.entries("main")] == [["landing"]]
    # PyIceberg's own OAuth2 flow with the key's client credentials.
    from pyiceberg.catalog.rest import RestCatalog

    oauth = RestCatalog(
        "etl",
        uri=admin.uri,
        warehouse="lake",
        credential=f"{key.client_id}:{key.client_secret}",
        **{"oauth2-server-uri": f"{admin.uri}/v1/oauth/tokens"},
    )
    assert ("landing",) in oauth.list_namespaces()

    assert [k.id for k in admin.service_users.list_keys("etl")] == [key.id]
    rotated = admin.service_users.rotate_key("etl", key.id)
    assert rotated.id != key.id
    with pytest.raises(UnauthorizedError):
        etl.whoami()
    assert PangolinClient(admin.uri, api_key=rotated.key).whoami().principal == f"service:{tenant_name}/etl"
    revoked = admin.service_users.revoke_key("etl", rotated.id)
    assert revoked.revoked_at is not None
    with pytest.raises(UnauthorizedError):
        PangolinClient(admin.uri, api_key=rotated.key).whoami()
    assert [s.name for s in admin.service_users.list()] == ["etl"]
    admin.service_users.delete("etl")
    with pytest.raises(NotFoundError):
        admin.service_users.get("etl")


def test_a_token_signs_in_as_it_is_and_root_acts_in_a_tenant(root, tenant):
    tenant_name, admin = tenant
    as_token = PangolinClient(root.uri, token=_token(admin), catalog="lake")
    assert as_token.whoami().principal == f"user:{tenant_name}/boss"
    acting = PangolinClient(root.uri, username="root", password=_root_password(root), acting_tenant=tenant_name, catalog="lake")
    assert acting.whoami().acting_tenant == tenant_name
    assert acting.get_ref("main").name == "main"
    # Root's PyIceberg catalog carries the tenant too.
    assert acting.catalog().list_namespaces() == []


def _root_password(root):
    return root._t.credential._password


def test_the_audit_log_pages_filters_and_verifies(tenant, root):
    tenant_name, admin = tenant
    events = list(PangolinClient(root.uri, token=_token(root), acting_tenant=tenant_name, page_size=2).audit.events(tenant=tenant_name, action="catalog.create"))
    assert [e.action for e in events] == ["catalog.create"] and events[0].outcome == "success"
    own = list(admin.audit.events(resource_type="warehouse"))
    assert own and all(e.tenant == tenant_name for e in own)
    assert root.audit.verify().intact


def test_external_principals_are_listed_for_administrators(tenant):
    _, admin = tenant
    # No identity provider signed anyone in to this tenant.
    assert list(admin.external_principals.list()) == []
    with pytest.raises(NotFoundError):
        admin.external_principals.get("oidc:nowhere/idp/someone")
    with pytest.raises(NotFoundError):
        admin.external_principals.set_disabled("oidc:nowhere/idp/someone", True)
    assert admin.account.identity_providers("nowhere") == []


def test_the_client_refuses_a_server_that_is_not_there():
    client = PangolinClient("http://127.0.0.1:9", token="t", timeout=2)
    with pytest.raises(httpx.ConnectError):
        client.whoami()
