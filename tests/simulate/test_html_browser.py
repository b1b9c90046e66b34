"""The HTML report in a real browser: Debian's Chromium, headless, driven by Playwright.

Skipped, with the reason, when Chromium or Playwright is missing (``.ci/run`` installs
Chromium). Every page fails its test on a console error or an uncaught exception.
Screenshots go to ``build/test-artifacts/html-report/`` (or ``$KUBESCHED_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import json
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


def test_device_taint_eviction_and_late_bindings_on_the_timeline(
    new_page, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "dra-fabric.html"
    assert main(["simulate", str(EXAMPLES / "dra-fabric"), "--report", str(out)]) == 0
    capsys.readouterr()
    p = new_page()
    page = p.open(out)
    rows = page.locator("#timeline-table tbody tr")
    assert [rows.nth(i).inner_text().split("\t") for i in range(rows.count())] == [
        ["60 s", "DeviceTaintManagerEviction", "Pod default/scratch", "Marking for deletion"]
    ]
    assert page.locator("#timeline-chart path[fill='#d55e00']").count() == 1
    desc = text(page, "#timeline p")
    assert desc.startswith("Timeline over 70 s of virtual time: 4 pods bound"), desc
    p.shot("dra-fabric-timeline", "#timeline")


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


def test_deschedule_report_is_a_section_of_the_same_page(new_page, tmp_path: Path, capsys) -> None:
    example = REPO / "examples" / "deschedule"
    out = tmp_path / "deschedule.html"
    argv = ["deschedule", str(example / "policy.yaml"), str(example / "cluster.yaml")]
    assert main([*argv, "--report", str(out)]) == 0
    capsys.readouterr()
    assert main([*argv, "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    evicted = [e for e in report["evictions"] if e["evicted"]]
    p = new_page(offline=True)
    page = p.open(out)
    assert page.locator("#deschedule").is_visible()
    assert page.locator("#nav-deschedule").is_visible()
    assert text(page, "#deschedule-evicted") == str(len(evicted))
    assert text(page, "#deschedule-refused") == str(len(report["evictions"]) - len(evicted))
    rows = page.locator("#deschedule-strategies tbody tr")
    assert rows.count() == len(report["strategies"])
    assert page.locator("#deschedule-evictions tbody tr").count() == len(report["evictions"])
    assert page.locator("#deschedule-nodes tbody tr").count() == len(report["nodes"])
    assert "LowNodeUtilization" in text(page, "#deschedule")
    # The rest is the simulation report of the cluster after: its map, its pods' stories.
    assert page.locator("#map g.node").count() == len(report["nodes"])
    assert text(page, "#made-by") == "kubesched deschedule --report"
    went = next(e for e in evicted if e["replacement"])
    page.click(f'#deschedule-evictions button[title="{went["replacement"]}"]')
    page.wait_for_selector("#story-title")
    assert text(page, "#story-title") == f"Pod {went['replacement']}"
    assert text(page, "#story-node") == went["replacementNode"]
    assert {r.split("#")[0] for r in p.requests} == {out.resolve().as_uri()}
    p.shot("deschedule-section", "#deschedule")


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
    assert page.locator("#deschedule").is_hidden()  # a simulation has no deschedule section


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


# -- the page fits the screen ---------------------------------------------------------------

EXAMPLES = REPO / "examples"
WIDTHS = (1280, 1400, 1920)
LONG_NS = "team-" + "n" * 53 + "-prod"
LONG_NODE = "node-pool-general-purpose-standard-{k:02d}-us-east-1-" + "x" * 15
LONG_POD = "analytics-ingestion-worker-replica-{k:02d}-with-a-long-name-" + "p" * 8
LONG_ZONE = "us-east-1-availability-zone-{z}-with-an-unusually-long-zone-name"


def long_names_cluster(folder: Path) -> Path:
    """A cluster of 63-character node, pod and namespace names, many labels and many
    extended resources: one node cordoned, one tainted, a few pods pending."""
    extended = "example.com/accelerator-with-a-long-resource-name-{:02d}"
    resources = {extended.format(r): "8" for r in range(12)}
    docs = [f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {LONG_NS}}}\n"]
    for k in range(8):
        name = LONG_NODE.format(k=k)
        assert len(name) == 63, name
        labels = {f"example.com/long-label-key-number-{j:02d}": "v" * 40 for j in range(30)}
        labels["topology.kubernetes.io/zone"] = LONG_ZONE.format(z="abc"[k % 3])
        labels |= {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        labels |= {"kubernetes.io/arch": "amd64"}
        alloc = {"cpu": "4", "memory": "16Gi", "pods": "110", **resources}
        spec = ""
        if k == 1:
            spec = "spec: {unschedulable: true}\n"
        elif k == 2:
            taint = "{key: example.com/dedicated-to-a-long-team-name, value: x, effect: NoSchedule}"
            spec = f"spec: {{taints: [{taint}]}}\n"
        docs.append(
            f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {labels}}}\n{spec}"
            f"status: {{capacity: {alloc}, allocatable: {alloc}}}\n"
        )
    for k in range(30):
        name = LONG_POD.format(k=k)
        assert len(name) == 63, name
        # Pods 24..29 ask for more CPU than any node has left: they stay pending.
        ask = {extended.format(k % 12): "1"}
        req = {"cpu": "3500m" if k >= 24 else "500m", "memory": "1Gi", **ask}
        docs.append(
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {LONG_NS}}}\n"
            "spec: {containers: [{name: main, image: busybox, "
            f"resources: {{requests: {req}, limits: {ask}}}}}]}}\n"
        )
    path = folder / "long-names.yaml"
    path.write_text("---\n".join(docs))
    return path


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """The example reports (and one of long names), made once for the module."""
    tmp = tmp_path_factory.mktemp("reports")
    whatif, batch = EXAMPLES / "whatif" / "zone-outage", EXAMPLES / "batch"
    runs = {
        "quickstart": [QUICKSTART],
        "stateful-zonal": [EXAMPLES / "stateful-zonal", "--seed", "1"],
        "dra-gpu": [EXAMPLES / "dra-gpu"],
        "whatif": [
            whatif / "cluster.yaml",
            whatif / "workload.yaml",
            "--timeline",
            whatif / "timeline.yaml",
        ],
        "batch": [
            batch / "cluster.yaml",
            batch / "workload.yaml",
            "--timeline",
            batch / "timeline.yaml",
        ],
        "capacity": [EXAMPLES / "capacity" / "workload", QUICKSTART],
        "long-names": [long_names_cluster(tmp)],
    }
    out = {}
    for name, args in runs.items():
        out[name] = tmp / f"{name}.html"
        argv = [
            "simulate",
            *map(str, args),
            "--report",
            str(out[name]),
            "--no-progress",
            "-o",
            "json",
        ]
        assert main(argv) == 0 and out[name].exists(), name
    return out


# Cells that hold a name (pod, node, namespace, profile, zone): one line each.
NAME_CELLS = ", ".join(
    [
        "#pod-table tbody tr > th",
        "#pod-table tbody td:nth-child(2)",
        "#pod-table tbody td:nth-child(4)",
        "#node-table tbody tr > th",
        "#node-table tbody td:nth-child(2)",
        "#profiles tbody th",
        "#zone-bars tbody th",
        "#story-attempts tbody td:nth-child(4)",
        "#story-scores tbody td:nth-child(2) button",
    ]
)

# The most lines any one text of a name cell is broken over (a text's fragments, one per line).
LINES_OF_NAMES = """(selector) => [...document.querySelectorAll(selector)].map((el) => {
  const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), range = document.createRange();
  let lines = 0;
  for (let t = walk.nextNode(); t; t = walk.nextNode()) {
    range.selectNodeContents(t);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0);
    const tops = new Set(rects.map((r) => Math.round(r.top)));
    lines = Math.max(lines, tops.size);
  }
  return [el.textContent.trim(), lines];
})"""


def widest_element(page: Any) -> str:
    """The element reaching furthest right, to name it when the page overflows."""
    return page.evaluate("""() => {
      let best = null, right = 0;
      for (const el of document.querySelectorAll("body *")) {
        const r = el.getBoundingClientRect().right;
        if (r > right) { right = r; best = el; }
      }
      return best ? `${best.tagName.toLowerCase()}#${best.id}.${best.className} at ${right}` : "";
    }""")


@pytest.mark.parametrize(
    "name",
    ["quickstart", "stateful-zonal", "dra-gpu", "whatif", "batch", "capacity", "long-names"],
)
def test_the_page_fits_the_screen(new_page, reports, name: str) -> None:
    p = new_page()
    page = p.open(reports[name])
    # Open a pod's story and a node's details: both add tables of names to the page.
    page.locator("#pod-table button[data-pod]").first.click()
    page.wait_for_selector("#story-title")
    page.locator("#map g.node").first.click()
    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        over = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if over > 0:
            problems.append(
                f"at {width} px the page scrolls sideways by {over} px: {widest_element(page)}"
            )
        wrapped = sorted({t for t, n in page.evaluate(LINES_OF_NAMES, NAME_CELLS) if n > 1})
        if wrapped:
            problems.append(f"at {width} px names are broken over lines: {wrapped[:8]}")
    p.shot(f"fit-{name}")
    assert not problems, "\n".join(problems)


def test_a_pod_link_scrolls_to_its_story(new_page, reports) -> None:
    p = new_page()
    page = p.open(reports["quickstart"], "#pod=shop/report")
    assert text(page, "#story-title") == "Pod shop/report"
    top = page.evaluate("document.querySelector('#story').getBoundingClientRect().top")
    assert 0 <= top < page.evaluate("window.innerHeight"), f"the story is at {top} px"
    # Opening another pod puts it in the address; Back returns to the first.
    page.fill("#pod-search", "db-0")
    page.click('#pod-table button:text-is("shop/db-0")')
    expect(page.locator("#story-title")).to_have_text("Pod shop/db-0")
    assert page.evaluate("location.hash") == "#pod=shop%2Fdb-0"
    page.go_back()
    expect(page.locator("#story-title")).to_have_text("Pod shop/report")
    page.go_forward()
    expect(page.locator("#story-title")).to_have_text("Pod shop/db-0")


# The contrast of a text element against what is painted under it, as WCAG 2 defines
# contrast: the worst over points along the text, where a pattern fill (the hatching of a
# cordoned node) counts with each of its colours over the paint below it.
CONTRAST = """(el) => {
  const rgba = (c) => {
    const m = c.match(/[\\d.]+/g).map(Number);
    return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1];
  };
  const over = (top, a, below) => top.slice(0, 3).map((v, k) => v * a + below[k] * (1 - a));
  const channel = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  const lum = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  // The colours painted at a point by the elements under the text, top first.
  function under(stack) {
    if (!stack.length) return [[255, 255, 255]];
    const [e, ...rest] = stack, cs = getComputedStyle(e);
    if (e instanceof SVGGeometryElement) {
      if (cs.fill === "none") return under(rest);
      const alpha = Number(cs.opacity) * Number(cs.fillOpacity);
      if (cs.fill.startsWith("url(")) {
        const pat = document.getElementById(cs.fill.match(/#([^"')]+)/)[1]), below = under(rest);
        const marks = [...pat.querySelectorAll("*")].flatMap((m) => {
          const ms = getComputedStyle(m), a = Number(ms.opacity);
          return [ms.fill, ms.stroke].filter((c) => c && c !== "none").map((c) => [rgba(c), a]);
        });
        return below.concat(marks.flatMap(([c, a]) => below.map((b) => over(c, a * c[3], b))));
      }
      const c = rgba(cs.fill);
      return c[3] * alpha >= 1 ? [c.slice(0, 3)] : under(rest).map((b) => over(c, c[3] * alpha, b));
    }
    if (e instanceof SVGElement) return under(rest);
    const bg = rgba(cs.backgroundColor);
    if (bg[3] === 0) return under(rest);
    return bg[3] >= 1 ? [bg.slice(0, 3)] : under(rest).map((b) => over(bg, bg[3], b));
  }
  const fg = rgba(getComputedStyle(el).fill).slice(0, 3), box = el.getBoundingClientRect();
  let worst = Infinity;
  for (let k = 1; k < 8; k++) {
    const x = box.left + (box.width * k) / 8, y = box.top + box.height / 2;
    const stack = document.elementsFromPoint(x, y);
    const below = stack.slice(stack.indexOf(el) + 1);
    for (const c of under(below)) worst = Math.min(worst, ratio(fg, c));
  }
  return worst;
}"""


@pytest.mark.parametrize("name", ["quickstart", "long-names"])
def test_map_labels_are_readable(new_page, reports, name: str) -> None:
    page = new_page().open(reports[name])
    labels = page.locator("#map text")
    assert labels.count() >= 16
    checked = []
    for k in range(labels.count()):
        label = labels.nth(k)
        label.scroll_into_view_if_needed()
        checked.append((label.text_content(), label.evaluate(CONTRAST)))
    assert any("cordoned" in t for t, _ in checked), checked
    poor = [(t, round(c, 2)) for t, c in checked if c < 4.5]
    assert not poor, f"map labels below WCAG AA contrast 4.5:1: {poor}"
