"""The Tables view in a real browser: headless Chromium (Debian's) driven by Selenium.

It signs in on Airflow's login page, follows "Tables" in Airflow's navigation (the plugin's external
view, an iframe of /txnlog/), opens the `orders` table, and checks the timeline shows all its
versions, the chart rendered and the maintenance section (last plan, history, state badge). The
screenshot goes to the test's temporary folder, or to docs/images/tables-view.png with
TXNLOG_UPDATE_SCREENSHOT=1 (how docs/ui.md's picture is made).
Without Chromium and chromedriver the test is skipped, except under CI (`CI` set), where it fails.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import ORDERS_VERSIONS, PASSWORDS, ROOT, Server

pytestmark = [pytest.mark.airflow, pytest.mark.slow]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT_S = 60


@pytest.fixture
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        message = "Chromium / chromedriver not installed (scripts/browser.sh installs them with apt)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver  # noqa: PLC0415
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1100"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_sign_in_open_tables_and_one_table(api_server: Server, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415
    from selenium.webdriver.support import expected_conditions as ec  # noqa: PLC0415
    from selenium.webdriver.support.ui import WebDriverWait  # noqa: PLC0415

    wait = WebDriverWait(browser, WAIT_S)
    browser.get(api_server.url + "/")
    wait.until(ec.presence_of_element_located((By.NAME, "username"))).send_keys("admin")
    browser.find_element(By.NAME, "password").send_keys(PASSWORDS["admin"])
    next(b for b in browser.find_elements(By.TAG_NAME, "button") if b.text == "Sign in").click()
    wait.until(ec.element_to_be_clickable((By.LINK_TEXT, "Tables"))).click()
    wait.until(ec.frame_to_be_available_and_switch_to_it((By.TAG_NAME, "iframe")))
    links = wait.until(ec.presence_of_all_elements_located((By.CSS_SELECTOR, "a.table-link")))
    assert sorted(a.text for a in links) == sorted(api_server.tables.values())
    next(a for a in links if a.text == api_server.tables["orders"]).click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#timeline tr.version")) == ORDERS_VERSIONS)
    versions = [
        int(r.get_attribute("data-version")) for r in browser.find_elements(By.CSS_SELECTOR, "tr.version")
    ]
    assert versions == list(range(ORDERS_VERSIONS - 1, -1, -1))
    chart = browser.find_element(By.ID, "chart")
    wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", chart))
    assert browser.execute_script("return arguments[0].naturalWidth", chart) > 100  # the SVG rendered
    assert browser.find_elements(By.CSS_SELECTOR, ".mark.restore") and browser.find_elements(
        By.CSS_SELECTOR, ".mark.pin"
    )
    assert browser.find_element(By.ID, "clustering").text == "not clustered"
    assert browser.find_element(By.ID, "row-tracking").text == "off"
    # the last plan (every decision, skips with their reasons) and the earlier runs' actions
    plan = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#last-plan tr.decision"))
    texts = [r.text for r in plan]
    assert any(t.startswith("compact") and "dry_run" in t for t in texts)
    assert any("healthy" in t or "commits since the newest checkpoint" in t for t in texts)
    assert browser.find_elements(By.CSS_SELECTOR, "#maintenance-history tr.decision")
    # the maintenance state: the newest recorded run (plan_2) was a dry run
    (badge,) = browser.find_elements(By.CSS_SELECTOR, "#maintenance-state .badge")
    assert (badge.get_attribute("data-state"), badge.text) == ("skipped", "skipped")
    assert "dry run" in browser.find_element(By.ID, "maintenance-state").text
    browser.switch_to.default_content()
    shot = tmp_path / "tables-view.png"
    if os.environ.get("TXNLOG_UPDATE_SCREENSHOT"):
        shot = ROOT / "docs" / "images" / "tables-view.png"
        shot.parent.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
