"""The report in a real browser: Debian chromium + chromium-driver, headless, offline.

Checks what only a browser can: no console error, every figure laid out with a
non-zero size, table sorting by clicking a header, and that planted XSS payloads do
not run. Screenshots are saved in each test's tmp folder.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from recaudit.report import build_report

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
        reason="needs Debian's browser: `apt-get install -y chromium chromium-driver` "
        "(/usr/bin/chromium and /usr/bin/chromedriver)",
    ),
]
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--hide-scrollbars",
    "--window-size=1280,1000",
)


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="recaudit-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        try:
            yield browser
        finally:
            browser.quit()


def _open(driver, source: Path, out: Path) -> tuple[str, int]:  # noqa: ANN001 (WebDriver)
    """Load the report of ``source``; return its title and its number of figures."""
    report = build_report(source)
    html_path, _ = report.save(out / "report.html")
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(html_path.as_uri())
    return driver.title, len(report.data["figures"])


def _screenshot(driver, path: Path) -> None:  # noqa: ANN001
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, height)
    driver.save_screenshot(str(path))
    driver.set_window_size(1280, 1000)
    assert path.stat().st_size > 10_000


def _check_page(driver, title: str, n_figures: int) -> None:  # noqa: ANN001
    errors = [e for e in driver.get_log("browser") if e["level"] in {"SEVERE", "WARNING"}]
    assert errors == []
    sizes = driver.execute_script(
        "return Array.from(document.querySelectorAll('svg.plot')).map(function (s) {"
        " var r = s.getBoundingClientRect();"
        " return [s.getAttribute('aria-labelledby'), r.width, r.height]; })"
    )
    assert len(sizes) == n_figures >= 4
    assert all(w > 100 and h > 50 for _, w, h in sizes), sizes
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.title == title and title.startswith("recaudit: ")


def _column(driver, table: str, col: int) -> list[float]:  # noqa: ANN001
    return driver.execute_script(
        "var col = arguments[1];"
        "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr')).map("
        "function (r) { return parseFloat(r.cells[col].getAttribute('data-value')); })",
        table,
        col,
    )


def test_positional_report(driver, positional_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from selenium.webdriver.common.by import By

    _check_page(driver, *_open(driver, positional_dir, tmp_path))
    verdict = driver.find_element(By.CSS_SELECTOR, "div.verdict").text
    assert "POB-UNBP rejected" in verdict and "PB = " in verdict
    header = driver.find_elements(By.CSS_SELECTOR, "#tab-groups thead th")[13]  # PB
    assert header.text.startswith("PB")
    header.click()
    values = _column(driver, "#tab-groups", 13)
    assert values == sorted(values) and values != _column_unsorted(positional_dir)
    header.click()
    assert _column(driver, "#tab-groups", 13) == sorted(values, reverse=True)
    assert header.get_attribute("aria-sort") == "descending"
    _screenshot(driver, tmp_path / "positional.png")


def test_sequential_report(driver, sequential_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from selenium.webdriver.common.by import By

    _check_page(driver, *_open(driver, sequential_dir, tmp_path))
    size = driver.execute_script(
        "var r = document.querySelector('svg.plot[aria-labelledby=\"fig-sequential-title\"]')"
        " || document.querySelector('#fig-sequential svg, svg#fig-sequential');"
        " if (!r) { return null; } r = r.getBoundingClientRect(); return [r.width, r.height];"
    )
    assert size is not None and size[0] > 100 and size[1] > 50
    rows = driver.find_elements(By.CSS_SELECTOR, "#tab-sequential tbody tr")
    assert len(rows) == 2 and "rejected uniformity" in rows[0].text
    header = driver.find_elements(By.CSS_SELECTOR, "#tab-sequential thead th")[8]  # E
    assert header.text.startswith("E at stop")
    header.click()
    values = _column(driver, "#tab-sequential", 8)
    assert values == sorted(values) and len(values) == 2
    _screenshot(driver, tmp_path / "sequential.png")


def _column_unsorted(positional_dir: Path) -> list[float]:
    return [g["pb"]["value"] for g in build_report(positional_dir).data["groups"]]


def test_fairness_report(driver, fairness_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from selenium.webdriver.common.by import By

    _check_page(driver, *_open(driver, fairness_dir, tmp_path))
    assert "Pareto front" in driver.find_element(By.CSS_SELECTOR, "div.verdict").text
    header = driver.find_elements(By.CSS_SELECTOR, "#tab-accuracy thead th")[2]  # coverage
    header.click()
    values = _column(driver, "#tab-accuracy", 2)
    assert values == sorted(values)
    driver.find_elements(By.CSS_SELECTOR, "#tab-accuracy thead th")[0].click()  # model (text)
    names = driver.execute_script(
        "return Array.from(document.querySelectorAll('#tab-accuracy tbody tr'))"
        ".map(function (r) { return r.cells[0].textContent; })"
    )
    assert names == sorted(names, key=str.lower)
    _screenshot(driver, tmp_path / "fairness.png")


@pytest.mark.parametrize("which", ["hostile_positional", "hostile_fairness"])
def test_planted_payloads_do_not_run(
    driver,
    which: str,
    request: pytest.FixtureRequest,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    _check_page(driver, *_open(driver, request.getfixturevalue(which), tmp_path))
    body = driver.execute_script("return document.body.innerText")
    assert '<script>window.__pwned=1;document.title="pwned"</script>' in body  # shown as text
    assert driver.execute_script("return document.images.length") == 0


def test_fairness_study_report_with_protocols_and_popularity(  # noqa: ANN001
    driver, fairness_study_dir: Path, tmp_path: Path
) -> None:
    """A study under full and uni100 ranking with popularity bias: the new sections lay
    out, the sampled-metrics warning is visible, the protocol table sorts."""
    from selenium.webdriver.common.by import By

    _check_page(driver, *_open(driver, fairness_study_dir, tmp_path))
    verdict = driver.find_element(By.CSS_SELECTOR, "div.verdict").text
    assert "full ranking over 1,682 items" in verdict and "uni100" in verdict
    warning = driver.find_element(By.ID, "protocol-warnings")
    assert warning.is_displayed() and "Warning: sampled metrics" in warning.text
    for fig in ("fig-head-tail", "fig-popularity-groups"):
        svg = driver.find_element(By.CSS_SELECTOR, f'svg.plot[aria-labelledby="{fig}-cap"]')
        assert svg.size["width"] > 100 and svg.size["height"] > 50
        assert driver.find_element(By.ID, f"{fig}-cap").text.strip()
    header = driver.find_elements(By.CSS_SELECTOR, "#tab-protocols thead th")[2]  # ndcg@10
    header.click()
    values = _column(driver, "#tab-protocols", 2)
    assert values == sorted(values) and len(values) == 18
    _screenshot(driver, tmp_path / "fairness-study.png")
