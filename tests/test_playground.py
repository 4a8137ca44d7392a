"""The playground page in a real headless Chromium (Debian's chromium + chromedriver, driven by
selenium): type a question, submit, read the answer, the evidence and the path picture from the
page. A screenshot is kept in test-artifacts/playground.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DEMO_KG, ROOT
from launchers import KgqaService, ensure_chromium_installed

from kgqa import open_writer
from kgqa.loaders import load_file

pytestmark = pytest.mark.slow
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    location = tmp_path_factory.mktemp("playground") / "store"
    writer = open_writer(f"oxigraph://{location}", "demo")
    load_file(writer, DEMO_KG)
    writer.close()
    with KgqaService(f"oxigraph://{location}", log_dir=location.parent) as svc:
        yield svc


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = ensure_chromium_installed()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    yield driver
    driver.quit()


def test_a_question_typed_in_the_page_is_answered_with_evidence(service, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(service.url + "/")
    wait = WebDriverWait(browser, 180)  # the first question loads the checkpoint and the text encoder
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#method option"))
    box = browser.find_element(By.ID, "question")
    box.send_keys("who directed Kismet")
    browser.find_element(By.ID, "submit").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#answers li") or d.find_elements(By.CSS_SELECTOR, "#status .error"))
    errors = browser.find_elements(By.CSS_SELECTOR, "#status .error")
    assert not errors, errors[0].text
    wait.until(lambda d: "ms ·" in d.find_element(By.ID, "cost").text)
    answers = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#answers li")]
    assert answers and all(a.strip() for a in answers)
    assert "topics: Kismet" in browser.find_element(By.ID, "status").text
    assert browser.find_elements(By.CSS_SELECTOR, "#facts li")
    labels = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#path-graph text")]
    assert "Kismet" in labels  # the paths start at the topic entity
    assert "round trips" in browser.find_element(By.ID, "cost").text
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "playground.png"))
    assert Path(ARTIFACTS / "playground.png").stat().st_size > 10_000


def test_an_error_is_shown_not_thrown(service, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(service.url + "/")
    browser.find_element(By.ID, "question").send_keys("what is the meaning of it all")
    browser.find_element(By.ID, "submit").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#status .error"))
    assert "no entity of the KG" in browser.find_element(By.CSS_SELECTOR, "#status .error").text
