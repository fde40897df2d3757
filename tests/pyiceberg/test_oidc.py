"""Engines and people that sign in with their organisation's identity provider: PyIceberg
passes a token of node-oidc-provider (scripts/test starts it; PANGOLIN_TEST_OIDC_ISSUER) as
`token=`, a person signs in with `pangolin login --oidc` by confirming a code on the
provider's page in a real browser, and the roles bound to the groups in those tokens decide
what each may do."""

import http.client
import json
import os
import re
import subprocess
import time
import tomllib
import types
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, UnauthorizedError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from conftest import ROOT_PASSWORD, _serve
from test_auth import login, request


def idp_token(issuer, client):
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": client, "client_secret": f"{client}-secret"}
    ).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{issuer}/token", data=body)) as r:
        return json.load(r)["access_token"]


def oidc_issuer():
    issuer = os.environ.get("PANGOLIN_TEST_OIDC_ISSUER")
    if not issuer:
        reason = "no OpenID Connect provider: set PANGOLIN_TEST_OIDC_ISSUER (scripts/test starts one)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the sign-in tests: {reason}")
        pytest.skip(reason)
    return issuer


@pytest.fixture(scope="module")
def oidc_server(tmp_path_factory):
    """A server whose default tenant takes the provider's tokens for audience `pangolin`, where
    the group `data-engineers` may read, write and create in catalog `default`."""
    issuer = oidc_issuer()
    folder = tmp_path_factory.mktemp("oidc")
    providers = folder / "providers.json"
    # No clock skew: the provider's tokens for people live 5 seconds, and the tests of their
    # refresh wait for one to be refused.
    settings = {"issuer": issuer, "audiences": ["pangolin"], "clock-skew-seconds": 0}
    cli = {"client-id": "pangolin-cli", "scopes": ["openid", "offline_access", "catalog"]}
    ui = {"client-id": "pangolin-ui", "client-secret": "pangolin-ui-secret", "scopes": ["openid", "offline_access", "catalog"]}
    providers.write_text(json.dumps([
        {"tenant": "default", "name": "idp", "settings": settings, "cli": cli, "browser": ui}
    ]))
    env = {"PANGOLIN_ROOT_PASSWORD": ROOT_PASSWORD}
    with open(folder / "pangolin.log", "w") as log:
        with _serve(["--oidc-providers", str(providers)], env=env, log=log, auth=True) as url:
            server = types.SimpleNamespace(url=url, root_password=ROOT_PASSWORD)
            root = login(server)["access_token"]
            catalog = {"type": "catalog", "catalog": "default"}
            grants = [{"privilege": p, "resource": catalog} for p in ("read", "write", "create")]
            request(url, "POST", "/api/v1/roles", root, {"name": "engineers", "grants": grants})
            member = urllib.parse.quote("group:default/idp/data-engineers", safe="")
            request(url, "PUT", f"/api/v1/roles/engineers/members/{member}", root)
            yield types.SimpleNamespace(url=url, issuer=issuer, root=root)


def test_an_engine_signs_in_with_the_providers_token_and_its_group_lets_it_write(oidc_server):
    engine = RestCatalog("pangolin", uri=oidc_server.url, token=idp_token(oidc_server.issuer, "engine"))
    namespace = f"oidc_{uuid.uuid4().hex[:8]}"
    engine.create_namespace(namespace)
    table = engine.create_table(f"{namespace}.events", Schema(NestedField(1, "id", LongType(), required=False)))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert len(engine.load_table(f"{namespace}.events").scan().to_arrow()) == 2
    assert request(oidc_server.url, "GET", "/api/v1/whoami", idp_token(oidc_server.issuer, "engine"))["principal"] == "oidc:default/idp/engine"


def test_a_token_whose_groups_hold_no_role_reads_nothing_and_a_bad_token_is_refused(oidc_server):
    analyst = RestCatalog("pangolin", uri=oidc_server.url, token=idp_token(oidc_server.issuer, "analyst"))
    with pytest.raises(ForbiddenError):
        analyst.list_namespaces()
    token = idp_token(oidc_server.issuer, "engine")
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(UnauthorizedError):
        RestCatalog("pangolin", uri=oidc_server.url, token=tampered).list_namespaces()


def test_the_config_sends_the_providers_callers_to_the_provider_for_tokens(oidc_server):
    engine = RestCatalog("pangolin", uri=oidc_server.url, token=idp_token(oidc_server.issuer, "engine"))
    assert engine.properties["oauth2-server-uri"] == f"{oidc_server.issuer}/token"
    own = RestCatalog("pangolin", uri=oidc_server.url, token=oidc_server.root)
    assert "oauth2-server-uri" not in own.properties


def pangolin(config_dir, *args, **kwargs):
    """The CLI with its own profiles folder and nothing from the environment's sign-in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PANGOLIN_") or k == "PANGOLIN_BIN"}
    env["PANGOLIN_CONFIG_DIR"] = str(config_dir)
    return subprocess.Popen(
        [os.environ["PANGOLIN_BIN"], *args], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs,
    )


def run(config_dir, *args):
    process = pangolin(config_dir, *args)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def through_the_providers_pages(browser, login, done):
    """What the person does on the provider's pages until `done()`: confirm, sign in as
    `login` (any password), allow the client."""
    from selenium.webdriver.common.by import By

    for _ in range(10):
        if done():
            return
        fields = browser.find_elements(By.NAME, "login")
        if fields:
            fields[0].send_keys(login)
            browser.find_element(By.NAME, "password").send_keys("any-password")
        before = browser.current_url + str(len(browser.page_source))
        buttons = browser.find_elements(By.CSS_SELECTOR, "button[type=submit]:not([name=abort])")
        if buttons:
            buttons[0].click()
        for _ in range(50):
            if browser.current_url + str(len(browser.page_source)) != before:
                break
            time.sleep(0.1)
    assert done(), f"the provider's pages did not lead back: {browser.page_source[:2000]}"


@pytest.mark.skipif(
    bool(os.environ.get("PANGOLIN_TEST_DATABASE_URL")),
    reason="the CLI's sign-in does not depend on the backend: it runs once, in the SQLite pass",
)
def test_a_person_signs_in_from_the_cli_on_the_providers_page_and_is_refreshed_there(oidc_server, browser, tmp_path):
    login = pangolin(tmp_path, "login", "--server", oidc_server.url, "--oidc")
    said = []
    for line in login.stderr:
        said.append(line)
        if "confirm the code" in line:
            break
    text = "".join(said)
    page = re.search(r"^\s+(http\S+)$", text, re.M)
    assert page, text
    assert re.search(r"confirm the code [A-Z]{4}-[A-Z]{4}", text), text
    browser.get(page.group(1))
    through_the_providers_pages(browser, "ana", lambda: "Sign-in Success" in browser.page_source)
    out, err = login.communicate(timeout=60)
    assert login.returncode == 0, err
    assert "as oidc:default/idp/ana" in out, out

    profile = tomllib.loads((tmp_path / "profiles.toml").read_text())["profiles"]["default"]
    assert profile["oidc"]["client-id"] == "pangolin-cli"
    assert profile["oidc"]["token-endpoint"] == f"{oidc_server.issuer}/token"
    code, out, err = run(tmp_path, "whoami")
    assert code == 0 and "oidc:default/idp/ana" in out, err
    # ana is in `data-engineers`, whose role reads catalog `default`.
    code, out, err = run(tmp_path, "branch", "list")
    assert code == 0 and "main" in out, err

    # The access token lives 5 seconds; then the server refuses it and the CLI refreshes the
    # pair at the provider (which rotates the refresh token) and saves it.
    time.sleep(6)
    code, out, err = run(tmp_path, "whoami")
    assert code == 0 and "oidc:default/idp/ana" in out, err
    refreshed = tomllib.loads((tmp_path / "profiles.toml").read_text())["profiles"]["default"]
    assert refreshed["token"] != profile["token"]
    assert refreshed["refresh-token"] != profile["refresh-token"]

    # Logging out forgets the provider's tokens (the server cannot revoke them).
    code, out, err = run(tmp_path, "logout")
    assert code == 0 and "forgotten" in out, err
    assert "token" not in tomllib.loads((tmp_path / "profiles.toml").read_text())["profiles"]["default"]


def test_the_cli_names_what_is_missing_when_the_tenant_has_no_provider_for_people(oidc_server, tmp_path):
    code, _, err = run(tmp_path, "login", "--server", oidc_server.url, "--oidc", "--tenant", "nowhere")
    assert code != 0
    assert "tenant `nowhere` has no identity provider" in err, err
    code, _, err = run(tmp_path, "login", "--server", oidc_server.url, "--oidc", "--provider", "okta")
    assert code != 0
    assert "no identity provider named `okta`" in err and "it has: idp" in err, err


@pytest.mark.skipif(
    bool(os.environ.get("PANGOLIN_TEST_DATABASE_URL")),
    reason="the UI's sign-in does not depend on the backend: it runs once, in the SQLite pass",
)
def test_a_person_signs_in_to_the_ui_on_the_providers_page_and_the_session_renews_there(oidc_server, browser):
    from selenium.webdriver.common.by import By

    browser.delete_all_cookies()
    browser.get(f"{oidc_server.url}/ui/login?next=/ui")
    browser.find_element(By.ID, "provider-tenant").send_keys("default")
    browser.find_element(By.CSS_SELECTOR, "#provider-sign-in button").click()
    for _ in range(100):
        if "/ui/login" not in browser.current_url:
            break
        time.sleep(0.1)
    through_the_providers_pages(browser, "ana", lambda: browser.current_url == f"{oidc_server.url}/ui")
    assert browser.current_url == f"{oidc_server.url}/ui", browser.page_source[:2000]
    assert "Signed in as oidc:default/idp/ana" in browser.page_source
    # ana's group reads catalog `default`.
    browser.get(f"{oidc_server.url}/ui/catalogs/default")
    assert "main" in browser.page_source

    # The provider's refresh token waits in a cookie the page's scripts cannot read, sealed:
    # its value is no token of the provider's.
    refresh = browser.get_cookie("pangolin_refresh")
    assert refresh and refresh["httpOnly"] and refresh["path"] == "/ui", refresh
    session = browser.get_cookie("pangolin_session")
    assert session and session["value"].count(".") == 2, session
    # The access token lives 5 seconds and its cookie as long; then the server renews the
    # session at the provider with the refresh token and serves the page.
    time.sleep(6)
    browser.get(f"{oidc_server.url}/ui/catalogs/default")
    assert browser.current_url == f"{oidc_server.url}/ui/catalogs/default", browser.page_source[:2000]
    assert "main" in browser.page_source and "Signed in as oidc:default/idp/ana" in browser.page_source
    renewed = browser.get_cookie("pangolin_session")
    assert renewed and renewed["value"] != session["value"]
    # The renewed session's forms carry its own CSRF token: signing out works, and ends the
    # renewals too.
    browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
    for _ in range(50):
        if "/ui/login" in browser.current_url:
            break
        time.sleep(0.1)
    assert browser.get_cookie("pangolin_refresh") is None
    assert browser.get_cookie("pangolin_session") is None
    browser.get(f"{oidc_server.url}/ui/catalogs/default")
    assert "/ui/login" in browser.current_url


def test_the_uis_provider_sign_in_refuses_answers_it_did_not_ask_for(oidc_server):
    def status(path):
        try:
            with urllib.request.urlopen(f"{oidc_server.url}{path}") as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    # No sign-in in flight in this client: a forged or replayed answer is refused.
    assert status("/ui/login/oidc/callback?code=forged&state=forged") == 400
    assert status("/ui/login/oidc?tenant=nowhere") == 404

    # A sign-in in flight, answered with another state (a login-CSRF attempt): refused.
    address = urllib.parse.urlsplit(oidc_server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    connection.request("GET", "/ui/login/oidc?tenant=default")
    started = connection.getresponse()
    started.read()
    assert started.status == 303, started.status
    location = urllib.parse.urlsplit(started.headers["location"])
    asked = dict(urllib.parse.parse_qsl(location.query))
    assert location.path == "/auth" and asked["code_challenge_method"] == "S256"
    assert asked["redirect_uri"] == f"{oidc_server.url}/ui/login/oidc/callback"
    flight = started.headers["set-cookie"].split(";")[0]
    assert "HttpOnly" in started.headers["set-cookie"] and asked["state"] in flight
    connection.request("GET", "/ui/login/oidc/callback?code=x&state=other", headers={"Cookie": flight})
    answer = connection.getresponse()
    body = answer.read().decode()
    assert answer.status == 400 and "not for the sign-in this browser started" in body, body


@pytest.fixture(scope="module")
def root_scope_server(tmp_path_factory):
    """A server whose identity provider is of the root scope: members of `data-engineers` are
    root, everyone else it signs in may do nothing."""
    issuer = oidc_issuer()
    folder = tmp_path_factory.mktemp("oidc-root")
    providers = folder / "providers.json"
    settings = {"issuer": issuer, "audiences": ["pangolin"]}
    providers.write_text(json.dumps([{
        "tenant": "~", "name": "corp", "settings": settings,
        "cli": {"client-id": "pangolin-cli"}, "admin-groups": ["data-engineers"],
    }]))
    env = {"PANGOLIN_ROOT_PASSWORD": ROOT_PASSWORD}
    with open(folder / "pangolin.log", "w") as log:
        with _serve(["--oidc-providers", str(providers)], env=env, log=log, auth=True) as url:
            yield types.SimpleNamespace(url=url, issuer=issuer)


def test_a_root_scope_providers_admin_group_is_root_and_its_other_principals_may_do_nothing(root_scope_server):
    url = root_scope_server.url
    engine = idp_token(root_scope_server.issuer, "engine")
    me = request(url, "GET", "/api/v1/whoami", engine)
    assert me["principal"] == "oidc:~/corp/engine" and me["root"] is True, me
    # As root it makes what a tenant's administrator could not: a tenant.
    request(url, "POST", "/api/v1/tenants", engine, {"name": f"t{uuid.uuid4().hex[:8]}"})
    catalog = RestCatalog("root", uri=url, warehouse="default", token=engine)
    catalog.create_namespace(f"ops_{uuid.uuid4().hex[:8]}")

    nobody = idp_token(root_scope_server.issuer, "nobody")
    assert request(url, "GET", "/api/v1/whoami", nobody)["root"] is False
    with pytest.raises(urllib.error.HTTPError) as refused:
        request(url, "GET", "/api/v1/tenants", nobody)
    assert refused.value.code == 403
    with pytest.raises(ForbiddenError):
        RestCatalog("nobody", uri=url, warehouse="default", token=nobody).list_namespaces()

    root = login(types.SimpleNamespace(url=url, root_password=ROOT_PASSWORD))["access_token"]
    listed = request(url, "GET", "/api/v1/external-principals?scope=root", root)
    assert {p["id"] for p in listed["principals"]} == {"oidc:~/corp/engine", "oidc:~/corp/nobody"}


@pytest.mark.skipif(
    bool(os.environ.get("PANGOLIN_TEST_DATABASE_URL")),
    reason="the CLI's sign-in does not depend on the backend: it runs once, in the SQLite pass",
)
def test_an_administrator_signs_in_as_root_from_the_cli_through_the_root_scopes_provider(root_scope_server, browser, tmp_path):
    url = root_scope_server.url
    code, _, err = run(tmp_path, "login", "--server", url, "--oidc")
    assert code != 0 and "tenant `default` has no identity provider" in err, err
    login = pangolin(tmp_path, "login", "--server", url, "--oidc", "--root")
    said = []
    for line in login.stderr:
        said.append(line)
        if "confirm the code" in line:
            break
    text = "".join(said)
    assert "To sign in to the root scope through corp" in text, text
    page = re.search(r"^\s+(http\S+)$", text, re.M)
    assert page, text
    browser.get(page.group(1))
    through_the_providers_pages(browser, "ana", lambda: "Sign-in Success" in browser.page_source)
    out, err = login.communicate(timeout=60)
    assert login.returncode == 0, err
    code, out, err = run(tmp_path, "whoami")
    assert code == 0 and "oidc:~/corp/ana" in out and ", root" in out, (out, err)
