"""The HTML report in a real browser: Debian's Chromium, headless, driven by Playwright.

Skipped, with the reason, when Chromium or Playwright is missing (``.ci/run`` installs
Chromium). Every page fails its test on a console error or an uncaught exception.
Screenshots go to ``build/test-artifacts/html-report/`` (or ``$KUBESCHED_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.api import load_manifests
from kubesched.cli.main import main
from kubesched.simulate import build_report, simulate
from kubesched.simulate.html import html_report_data, render_html

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips the tests
    expect = None

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart"
PREEMPTION = REPO / "examples" / "scheduling-docs" / "priority-preemption"
CHROMIUM = Path(os.environ.get("KUBESCHED_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("KUBESCHED_TEST_ARTIFACTS", REPO / "build" / "test-artifacts"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
    )
    with sync_api.sync_playwright() as p:
        # Playwright gives each launch a fresh temporary profile (--user-data-dir).
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield b
        b.close()


class Page:
    """A browser page that records console errors, uncaught exceptions and requests."""

    def __init__(self, browser: Any, *, offline: bool = False) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        if offline:
            self.context.set_offline(True)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: Path, fragment: str = "") -> Any:
        self.page.goto(path.resolve().as_uri() + fragment)
        self.page.wait_for_selector("body[data-ready=true]", timeout=30_000)
        return self.page

    def shot(self, name: str, selector: str | None = None) -> None:
        """Save a screenshot under the artifacts folder."""
        out = ARTIFACTS / "html-report" / f"{name}.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        if selector is None:
            self.page.screenshot(path=str(out), full_page=True)
        else:
            self.page.locator(selector).screenshot(path=str(out))


@pytest.fixture
def new_page(browser: Any) -> Iterator[Any]:
    pages: list[Page] = []

    def make(**kw: Any) -> Page:
        pages.append(Page(browser, **kw))
        return pages[-1]

    yield make
    for p in pages:
        p.context.close()
    errors = [e for p in pages for e in p.errors]
    assert not errors, f"console errors: {errors}"


def text(page: Any, selector: str) -> str:
    return page.locator(selector).inner_text().strip()


def test_quickstart_numbers_and_a_pods_story(new_page, tmp_path: Path, capsys) -> None:
    out = tmp_path / "quickstart.html"
    assert main(["simulate", str(QUICKSTART), "--report", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    objects = load_manifests([QUICKSTART])
    report = build_report(simulate(objects), objects=objects, explain=["shop/db-0"])
    db0 = report.pod("shop/db-0")

    p = new_page()
    page = p.open(out)
    assert text(page, "h1") == "kubesched simulation: 32 pods on 12 nodes"
    assert text(page, "#summary-pods") == str(len(report.pods)) == "32"
    assert text(page, "#summary-nodes") == str(len(report.nodes)) == "12"
    assert page.locator("#map g.node").count() == 12
    row = page.locator("#profiles tbody tr").first
    assert row.locator("td").nth(0).inner_text() == "30"  # scheduled
    assert row.locator("td").nth(1).inner_text() == "2"  # pending
    assert page.locator("#pending-table tbody tr").count() >= 1
    assert "nodes shown" not in text(page, "#pod-count")
    assert text(page, "#pod-count").startswith("32 pods shown")
    p.shot("quickstart-page")
    for section in ("summary", "cluster", "pending"):
        p.shot(f"quickstart-{section}", f"#{section}")

    # Find the pod with the search box, open its story from the table.
    page.fill("#pod-search", "db-0")
    expect(page.locator("#pod-count")).to_have_text(re.compile(r"^1 pod shown"))
    page.click('#pod-table button:text-is("shop/db-0")')
    page.wait_for_selector("#story-title")
    assert text(page, "#story-title") == "Pod shop/db-0"
    assert text(page, "#story-node") == db0.node
    rows = page.locator("#story-scores tbody tr")
    shown = [
        (rows.nth(k).get_attribute("data-node"), int(rows.nth(k).locator("td.total").inner_text()))
        for k in range(rows.count())
    ]
    assert sorted(shown, key=lambda s: (-s[1], s[0])) == [(s.node, s.total) for s in db0.scores]
    assert page.locator("#story-scores tr.chosen").get_attribute("data-node") == db0.node
    groups = page.locator("#story-filters tbody tr")
    assert groups.count() >= 2  # rejections collapsed by reason, and the feasible nodes
    assert page.locator("#story-attempts tbody tr").count() == len(db0.history)
    p.shot("quickstart-story", "#story")

    # A node named in the story opens the node's details.
    page.locator("#story-scores tr.chosen button[data-node]").click()
    assert text(page, "#node-detail-title") == f"Node {db0.node}"
    assert "shop/db-0" in text(page, "#node-detail")


def test_keyboard_sorting_and_pending_reasons(new_page, tmp_path: Path, capsys) -> None:
    out = tmp_path / "quickstart.html"
    assert main(["simulate", str(QUICKSTART), "--report", str(out)]) == 0
    capsys.readouterr()
    p = new_page()
    page = p.open(out)
    # The cluster map is one tab stop; arrows move, Enter opens the node.
    page.focus("#map")
    page.keyboard.press("ArrowRight")
    assert page.locator("#map .cursor").count() == 1
    page.keyboard.press("Enter")
    second = page.locator("#map g.node title").nth(1).text_content().split(":")[0]
    assert text(page, "#node-detail-title") == f"Node {second}"
    assert "medium-6" in page.locator("#node-table").inner_text()
    # Sorting by attempts, descending, puts a pending pod (two attempts) first.
    page.click('button[data-sort="attempts"]')
    page.click('button[data-sort="attempts"]')
    assert page.get_attribute('th:has(button[data-sort="attempts"])', "aria-sort") == "descending"
    first = page.locator("#pod-table tbody tr").first
    assert first.locator("td").nth(4).inner_text() == "2"
    # "show these pods" filters the table to the pending pods with that reason.
    page.locator("#pending-table button[data-reason]").first.click()
    assert page.input_value("#pod-result") == "pending"
    assert text(page, "#pod-count").startswith("2 pods shown")
    # Printing hides the controls.
    page.emulate_media(media="print")
    assert page.locator("nav").is_hidden() and page.locator("#pod-search").is_hidden()
    p.shot("quickstart-print")


def test_preemption_story_and_timeline(new_page, tmp_path: Path, capsys) -> None:
    out = tmp_path / "preemption.html"
    assert main(["simulate", str(PREEMPTION), "--report", str(out)]) == 0
    capsys.readouterr()
    objects = load_manifests([PREEMPTION])
    preemptor = next(
        p for p in build_report(simulate(objects), objects=objects).pods if p.preemption
    )
    p = new_page()
    page = p.open(out, f"#pod={preemptor.key}")
    assert text(page, "#story-title") == f"Pod {preemptor.key}"
    block = text(page, "#story-preemption")
    for v in preemptor.preemption.victims:
        assert f"{v.namespace}/{v.name}" in block
    if preemptor.preemption.decided_by:
        assert text(page, "#story-decided-by") == preemptor.preemption.decided_by
    assert "Preempted" in text(page, "#timeline-table")
    assert page.locator("#timeline-chart circle").count() == len(preemptor.preemption.victims)
    p.shot("preemption-story", "#story")
    p.shot("preemption-timeline", "#timeline")


def test_report_makes_no_network_request(new_page, tmp_path: Path, capsys) -> None:
    out = tmp_path / "quickstart.html"
    assert main(["simulate", str(QUICKSTART), "--report", str(out)]) == 0
    capsys.readouterr()
    p = new_page(offline=True)
    page = p.open(out)
    # Walk through the page: a pod's story, a node, another resource, another table page.
    page.locator("#pod-table button[data-pod]").first.click()
    page.wait_for_selector("#story-title")
    page.select_option("#resource", "memory")
    page.locator("#map g.node").first.click()
    page.click('button[data-nsort="name"]')
    assert {r.split("#")[0] for r in p.requests} == {out.resolve().as_uri()}


def test_sections_absent_from_the_data_are_skipped(new_page, tmp_path: Path) -> None:
    objects = load_manifests([QUICKSTART])
    data = html_report_data(simulate(objects), objects=objects)
    for key in ("timeline", "bindings", "pendingReasons", "rejections", "stories"):
        del data[key]
    data["timelineSteps"] = [{"time": 10.0, "step": "drain node small-1"}, "scale web to 8"]
    out = tmp_path / "partial.html"
    out.write_text(render_html(data))
    p = new_page()
    page = p.open(out, "#pod=shop/report")
    assert text(page, "#summary-pods") == "32"
    assert page.locator("#timeline-steps li").count() == 2
    assert "drain node small-1" in text(page, "#timeline-steps")
    assert text(page, "#story-title") == "Pod shop/report"


def test_a_cluster_without_pods(new_page, tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: lonely}\n"
        "status: {allocatable: {cpu: '1', memory: 1Gi, pods: '10'}}\n"
    )
    objects = load_manifests([tmp_path / "nodes.yaml"])
    out = tmp_path / "empty.html"
    out.write_text(render_html(html_report_data(simulate(objects), objects=objects)))
    page = new_page().open(out)
    assert text(page, "#summary-pods") == "0" and text(page, "#summary-nodes") == "1"
    assert text(page, "#pending .body") == "No pod is pending."
    assert "(no zone)" in text(page, "#map")
