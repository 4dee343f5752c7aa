"""The live view of `pykcm up`: its server-sent events and its page in a real browser.

`pykcm up` (the session's ``pykcm_cluster``) prints the live view's URL in its banner;
the tests read it from the banner (``up.log``), as a user reads it from the terminal.

- The stream (httpx): the page and its files are served; ``/api/events`` sends snapshot
  events; a Deployment created with kubectl shows up in them with its ReplicaSet, Ready,
  and the deployment queue's adds and the Deployment informer's events grow.
- The page (headless Chromium, Debian's ``chromium`` and ``chromium-driver``, driven by
  Selenium): it connects, a new Deployment's row appears and reaches 3/3 ready, a
  rollout (``kubectl set image``) shows a second ReplicaSet, the deployment queue's
  counters grow. Screenshots of the page during and after the rollout are written to
  ``$PYKCM_TEST_ARTIFACTS/live-view/`` (default: the test's tmp_path), and their paths
  printed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.e2e.conftest import Kubectl, _kubectl_path

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from pykcm.testing.cluster import Cluster

WAIT = 60.0
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def _ui_url(cluster: Cluster) -> str:
    with open(os.path.join(cluster.data_dir, "up.log")) as f:
        m = re.findall(r"live view: (http://127\.0\.0\.1:\d+/)", f.read())
    assert m, "pykcm up's banner names no live view URL"
    return str(m[-1])


@pytest.fixture(scope="module")
def ui(pykcm_cluster: Cluster) -> str:
    return _ui_url(pykcm_cluster)


@pytest.fixture
def k(pykcm_cluster: Cluster) -> Iterator[Kubectl]:
    env = {**os.environ, "KUBECONFIG": pykcm_cluster.kubeconfig_path}
    yield Kubectl(_kubectl_path(), env)


@pytest.fixture
def ns(k: Kubectl) -> Iterator[str]:
    name = f"live-{uuid.uuid4().hex[:6]}"
    k.ok("create", "namespace", name)
    yield name
    k.run("delete", "namespace", name, "--wait=false")


def _wait(what: str, probe: Callable[[], Any], timeout: float = WAIT) -> Any:
    """The probe's first truthy value (probes return a row, a count, or something falsy)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _queue(snap: dict[str, Any], name: str) -> dict[str, Any]:
    (q,) = [q for q in snap["queues"] if q["name"] == name]
    found: dict[str, Any] = q
    return found


def _informer(snap: dict[str, Any], resource: str) -> dict[str, Any]:
    (i,) = [i for i in snap["informers"] if i["resource"] == resource]
    found: dict[str, Any] = i
    return found


def _deployment(snap: dict[str, Any], key: str) -> dict[str, Any] | None:
    return next((d for d in snap["workloads"]["deployments"] if d["key"] == key), None)


def test_page_and_event_stream_follow_a_new_deployment(ui: str, k: Kubectl, ns: str) -> None:
    page = httpx.get(ui, timeout=10)
    assert page.status_code == 200 and "/static/app.js" in page.text
    for name in ("app.js", "style.css"):
        assert httpx.get(f"{ui}static/{name}", timeout=10).status_code == 200
    assert httpx.get(f"{ui}static/nothing.js", timeout=10).status_code == 404

    key = f"{ns}/web"
    snaps: list[dict[str, Any]] = []
    with httpx.stream("GET", f"{ui}api/events", timeout=httpx.Timeout(10, read=30)) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        created = False
        deadline = time.monotonic() + WAIT
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            snaps.append(json.loads(line[len("data: "):]))
            if not created:
                k.ok("create", "deployment", "web", "-n", ns, "--image=nginx", "--replicas=3")
                created = True
            d = _deployment(snaps[-1], key)
            if d is not None and d["ready"] == 3 and d["replicasets"]:
                break
            assert time.monotonic() < deadline, f"{key} never showed 3 ready in the stream"
    first, last = snaps[0], snaps[-1]
    d = _deployment(last, key)
    assert d is not None and d["replicas"] == 3 and d["updated"] == 3
    assert d["replicasets"][0]["ready"] == 3
    assert _deployment(first, key) is None
    assert _queue(last, "deployment")["adds_total"] > _queue(first, "deployment")["adds_total"]
    assert (_informer(last, "deployments.apps")["events_total"]
            > _informer(first, "deployments.apps")["events_total"])
    assert any(e["kind"] == "Deployment" and e["key"] == key for e in last["feed"])
    pods = sum(n["pods"].get("Running", 0) for n in last["workloads"]["nodes"])
    assert pods >= 3
    assert last["leader"]["leading"] is True
    assert {r["method"] for r in last["requests"]} >= {"GET", "POST"}


# -- the page in a real browser ----------------------------------------------------------

@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        # bin/test installs Debian's chromium and chromium-driver where they are missing.
        assert shutil.which(path), f"{path} is missing: apt-get install chromium chromium-driver"
    opts = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1300"):
        opts.add_argument(arg)
    opts.binary_location = CHROMIUM
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def _artifacts(tmp_path: Path) -> Path:
    base = os.environ.get("PYKCM_TEST_ARTIFACTS")
    out = (Path(base) if base else tmp_path) / "live-view"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _row(driver: WebDriver, table: str, key: str) -> list[str] | None:
    """The cells' text of a table row, read in one script (the page replaces its rows
    every snapshot: element handles go stale between two calls)."""
    cells: list[str] | None = driver.execute_script(
        "const r = [...document.querySelectorAll(`#${arguments[0]} tbody tr`)]"
        ".find((r) => r.dataset.key === arguments[1]);"
        "return r ? [...r.cells].map((c) => c.textContent) : null;", table, key)
    return cells


def _count(driver: WebDriver, selector: str) -> int:
    n: int = driver.execute_script("return document.querySelectorAll(arguments[0]).length;",
                                   selector)
    return n


def test_browser_shows_a_deployment_roll_out(ui: str, k: Kubectl, ns: str, browser: WebDriver,
                                            tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    out = _artifacts(tmp_path)
    browser.get(ui)
    _wait("the page's first snapshot",
          lambda: int(browser.find_element(By.TAG_NAME, "body").get_attribute(
              "data-snapshots") or 0) >= 1)
    assert browser.find_element(By.ID, "status").text == "live"
    before = _wait("the deployment queue's row", lambda: _row(browser, "queues", "deployment"))
    adds_before = int(before[2].replace(",", ""))

    key = f"{ns}/web"
    k.ok("create", "deployment", "web", "-n", ns, "--image=nginx:1.27", "--replicas=3")
    row = _wait(f"{key} ready 3 on the page",
                lambda: (r := _row(browser, "deployments", key)) and r[3] == "3" and r)
    assert row[1:5] == ["3", "3", "3", "3"]
    after = _wait("the deployment queue's adds to grow", lambda: (
        (r := _row(browser, "queues", "deployment")) and int(r[2].replace(",", "")) > adds_before
        and r))
    assert int(after[2].replace(",", "")) > adds_before

    k.ok("set", "image", "deployment/web", "nginx=nginx:1.28", "-n", ns)
    _wait("a second ReplicaSet on the page",
          lambda: (r := _row(browser, "deployments", key)) and r[5].count("(") >= 2)
    during = out / "rollout-during.png"
    browser.save_screenshot(str(during))
    _wait(f"{key} rolled out on the page", lambda: (
        (r := _row(browser, "deployments", key)) and r[1:5] == ["3", "3", "3", "3"]
        and re.search(r"\(2\): 3/3", r[5]) and re.search(r"\(1\): 0/0", r[5])))
    done = out / "rollout-done.png"
    browser.save_screenshot(str(done))
    for node in ("pykcm-node-0", "pykcm-node-1", "pykcm-node-2"):
        assert _count(browser, f'#nodes .node[data-node="{node}"]') == 1
    assert _count(browser, "#nodes .pod.Running") >= 3
    assert _count(browser, "#feed li") > 0  # other tests' events too
    print(f"live view screenshots: {during} {done}")
    assert during.stat().st_size > 0 and done.stat().st_size > 0
