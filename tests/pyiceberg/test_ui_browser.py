"""The web UI in a real browser: headless Chromium, driven through Debian's chromedriver by
Selenium, against the real server with sign-in required, with PyIceberg making changes beside
it. Screenshots of the main pages go to docs/ui/ (docs/ui.md shows them).

The browser does what a person would: sign in, browse to a table, open a commit, make a branch,
see a change made through PyIceberg on that branch in its log, merge it, settle a conflict; a
reader sees no merge button and is refused when it posts the form anyway, and a form without
the session's CSRF token is refused.
"""

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

SCREENSHOTS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "ui")
READER_PASSWORD = "a-long-enough-reader-password"

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("PANGOLIN_TEST_DATABASE_URL")),
    reason="the UI does not depend on the backend: it runs once, in the SQLite pass",
)


def api(url, method, path, token, body=None):
    request = urllib.request.Request(
        f"{url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request) as response:
        text = response.read()
        return json.loads(text) if text else None


def root_token(server):
    request = urllib.request.Request(
        f"{server.url}/api/v1/login",
        data=json.dumps({"username": "root", "password": server.root_password}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())["access_token"]


def click(browser, element):
    """Clicks a link or button and waits for the page it leads to: a click returns before the
    browser has navigated."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    page = browser.find_element(By.TAG_NAME, "html")
    element.click()

    def left(_):
        # Chromium reports an element of a page being replaced as stale, or, mid-navigation,
        # as a node that "does not belong to the document": both mean the old page is gone.
        try:
            page.is_enabled()
            return False
        except WebDriverException:
            return True

    wait = WebDriverWait(browser, 20)
    wait.until(left)
    # The old page is gone once the navigation starts; read the new one only once it is whole.
    wait.until(lambda b: b.execute_script("return document.readyState") == "complete")


def shot(browser, name):
    os.makedirs(SCREENSHOTS, exist_ok=True)
    browser.save_screenshot(os.path.join(SCREENSHOTS, f"{name}.png"))


def sign_in(browser, url, tenant, user, password):
    from selenium.webdriver.common.by import By

    browser.get(f"{url}/ui")
    assert "/ui/login" in browser.current_url, "signed out, the UI asks to sign in"
    browser.find_element(By.ID, "tenant").send_keys(tenant)
    browser.find_element(By.ID, "username").send_keys(user)
    browser.find_element(By.ID, "password").send_keys(password)
    click(browser, browser.find_element(By.CSS_SELECTOR, "form button[type=submit]"))
    assert "Signed in as" in browser.page_source


def sign_out(browser):
    from selenium.webdriver.common.by import By

    click(browser, browser.find_element(By.XPATH, "//button[text()='Sign out']"))
    assert "/ui/login" in browser.current_url


def post_form(url, path, fields, cookie):
    """Posts a form as another site's page could, with the browser's session cookie."""
    request = urllib.request.Request(
        f"{url}{path}",
        data=urllib.parse.urlencode(fields).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"pangolin_session={cookie}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_person_browses_branches_merges_and_settles_a_conflict(secure_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url = secure_server.url
    token = root_token(secure_server)
    suffix = uuid.uuid4().hex[:6]
    ns, branch = f"shop_{suffix}", f"etl_{suffix}"
    catalog = RestCatalog("pangolin", uri=url, token=token)
    catalog.create_namespace(ns)
    orders = catalog.create_table(f"{ns}.orders", pa.schema([("id", pa.int64()), ("item", pa.string())]))
    orders.append(pa.table({"id": [1, 2], "item": ["apple", "pear"]}))
    # A reader of the catalog, for the second half.
    reader = f"reader_{suffix}"
    api(url, "POST", "/api/v1/users", token, {"username": reader, "password": READER_PASSWORD})
    api(url, "POST", "/api/v1/roles", token, {"name": f"readers_{suffix}", "grants": [
        {"privilege": "read", "resource": {"type": "catalog", "catalog": "default"}}]})
    member = urllib.parse.quote(f"user:default/{reader}", safe="")
    api(url, "PUT", f"/api/v1/roles/readers_{suffix}/members/{member}", token)

    sign_in(browser, url, "", "root", secure_server.root_password)
    shot(browser, "catalogs")
    click(browser, browser.find_element(By.LINK_TEXT, "default"))
    assert "Branches and tags" in browser.page_source

    # A branch from the refs page's form.
    browser.find_element(By.ID, "name").send_keys(branch)
    click(browser, browser.find_element(By.XPATH, "//button[text()='Create']"))
    assert f">{branch}<" in browser.page_source
    shot(browser, "refs")

    # A change through PyIceberg on the branch shows in the branch's log, and in its commit.
    catalog.load_table(f"{ns}.orders@{branch}").append(pa.table({"id": [3], "item": ["fig"]}))
    click(browser, browser.find_element(By.LINK_TEXT, branch))
    assert f"{ns}.orders" in browser.page_source
    shot(browser, "log")
    click(browser, browser.find_element(By.CSS_SELECTOR, "tbody a.hash"))
    assert "snapshot" in browser.page_source and "append" in browser.page_source, browser.page_source
    shot(browser, "commit")

    # Browse to the table at the branch.
    browser.get(f"{url}/ui/catalogs/default/entries?ref={branch}")
    click(browser, browser.find_element(By.LINK_TEXT, f"{ns}.orders"))
    page = browser.page_source
    assert "Schema" in page and "item" in page and f"orders@{branch}" in page
    shot(browser, "table")

    # Merge the branch through the UI.
    browser.get(f"{url}/ui/catalogs/default/compare?source={branch}&target=main")
    click(browser, browser.find_element(By.XPATH, "//button[starts-with(text(), 'Merge into')]"))
    assert "/commits/" in browser.current_url
    assert len(catalog.load_table(f"{ns}.orders").scan().to_arrow()) == 3

    # Both sides change the same table: a conflict, settled in the page.
    with catalog.load_table(f"{ns}.orders").transaction() as tx:
        tx.set_properties(owner="main-team")
    with catalog.load_table(f"{ns}.orders@{branch}").transaction() as tx:
        tx.set_properties(owner="etl-team")
    browser.get(f"{url}/ui/catalogs/default/compare?source={branch}&target=main")
    assert "Conflicts" in browser.page_source
    shot(browser, "conflict")
    select = browser.find_element(By.CSS_SELECTOR, "select[name^='resolve:']")
    Select(select).select_by_value("theirs")
    click(browser, browser.find_element(By.XPATH, "//button[starts-with(text(), 'Merge into')]"))
    assert "/commits/" in browser.current_url
    assert catalog.load_table(f"{ns}.orders").properties["owner"] == "etl-team"
    browser.get(f"{url}/ui/catalogs/default/log?ref=main")
    assert "merge of" in browser.page_source, "the merge shows as a branch of main's line"
    shot(browser, "log-merges")

    # A form that did not come from this session's page is refused, and changes nothing.
    cookie = browser.get_cookie("pangolin_session")["value"]
    status, text = post_form(url, "/ui/catalogs/default/refs", {"name": f"forged_{suffix}"}, cookie)
    assert status == 403 and "CSRF" in text
    assert f"forged_{suffix}" not in json.dumps(api(url, "GET", "/api/v1/catalogs/default/refs", token))

    # A reader compares but sees no merge button, and a posted merge is refused.
    sign_out(browser)
    sign_in(browser, url, "default", reader, READER_PASSWORD)
    browser.get(f"{url}/ui/catalogs/default/compare?source={branch}&target=main")
    page = browser.page_source
    assert "You may not merge" in page and "Merge into" not in page
    reader_cookie = browser.get_cookie("pangolin_session")["value"]
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
    status, _ = post_form(
        url, "/ui/catalogs/default/merge", {"csrf": csrf, "source": branch, "target": "main"}, reader_cookie
    )
    assert status == 403
