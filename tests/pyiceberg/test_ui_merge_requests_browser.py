"""Merge requests in a real browser (headless Chromium through Selenium, as the other UI
test): a person opens a request from a branch PyIceberg appended to, runs its checks, sees them
pass and merges it onto a protected branch; the table then reads both sides' rows. The
protected branch is the test's own, so other tests keep writing to `main`."""

import os
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from test_ui_browser import api, click, root_token, shot, sign_in

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("PANGOLIN_TEST_DATABASE_URL")),
    reason="the UI does not depend on the backend: it runs once, in the SQLite pass",
)


def test_a_person_opens_checks_and_merges_a_request(secure_server, browser):
    from selenium.webdriver.common.by import By

    url = secure_server.url
    token = root_token(secure_server)
    suffix = uuid.uuid4().hex[:6]
    ns, dev, release = f"mr_{suffix}", f"dev_{suffix}", f"release_{suffix}"
    catalog = RestCatalog("pangolin", uri=url, token=token)
    catalog.create_namespace(ns)
    orders = catalog.create_table(f"{ns}.orders", pa.schema([("id", pa.int64())]))
    orders.append(pa.table({"id": [1, 2]}))
    for branch in (dev, release):
        api(url, "POST", "/api/v1/catalogs/default/refs", token, {"name": branch, "type": "branch"})
    api(url, "PUT", "/api/v1/catalogs/default/protection", token,
        {"rules": [{"branch": release, "checks": [{"kind": "no-lost-rows", "prefix": [ns]}]}]})
    try:
        catalog.load_table(f"{ns}.orders@{dev}").append(pa.table({"id": [3]}))

        sign_in(browser, url, "", "root", secure_server.root_password)
        browser.get(f"{url}/ui/catalogs/default")
        click(browser, browser.find_element(By.LINK_TEXT, "Merge requests"))
        browser.find_element(By.ID, "source").send_keys(dev)
        target = browser.find_element(By.ID, "target")
        target.clear()
        target.send_keys(release)
        browser.find_element(By.ID, "title").send_keys("One more order")
        click(browser, browser.find_element(By.XPATH, "//button[text()='Open']"))
        assert "One more order" in browser.title and "The checks have not run yet." in browser.page_source

        click(browser, browser.find_element(By.XPATH, "//button[text()='Run the checks']"))
        page = browser.page_source
        assert "verdict-passed" in page and "no-lost-rows" in page, page
        shot(browser, "merge-request")
        click(browser, browser.find_element(By.XPATH, "//button[text()='Merge']"))
        assert "Merged by" in browser.page_source
        rows = catalog.load_table(f"{ns}.orders@{release}").scan().to_arrow()["id"].to_pylist()
        assert sorted(rows) == [1, 2, 3]
    finally:
        api(url, "DELETE", "/api/v1/catalogs/default/protection", token)
