"""Size and load time of the HTML report of a large simulation (``simulate --report``).

Builds a ``kubesched bench`` workload, simulates it, writes the report and, when Chromium
is installed, opens it headless and times the page until it is interactive, then a
search of the pod table and a pod's story. Example (the closing note's figures):

    .venv/bin/python benchmarks/html_report.py --nodes 5000 --pods 50000 \\
        --workload basic --detail summary --output /tmp/report-5000x50000.html
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import time
from pathlib import Path

from kubesched.bench.workloads import build_workload
from kubesched.simulate import DETAIL_FULL, DETAIL_SUMMARY, Simulation
from kubesched.simulate.html import StoryCollector, html_report_data, render_html

CHROMIUM = "/usr/bin/chromium"


def _browser_timings(path: Path, pod_key: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        started = time.perf_counter()
        page.goto(path.resolve().as_uri(), timeout=300_000)
        loaded = time.perf_counter()
        page.wait_for_selector("body[data-ready=true]", timeout=300_000)
        ready = time.perf_counter()
        page.fill("#pod-search", pod_key)
        page.wait_for_selector(f'#pod-table button:text-is("{pod_key}")', timeout=60_000)
        searched = time.perf_counter()
        page.click(f'#pod-table button:text-is("{pod_key}")')
        page.wait_for_selector("#story-title", timeout=60_000)
        story = time.perf_counter()
        browser.close()
    if errors:
        raise SystemExit(f"page errors: {errors}")
    return {
        "loadEventSeconds": round(loaded - started, 2),
        "interactiveSeconds": round(ready - started, 2),
        "searchSeconds": round(searched - ready, 2),
        "storySeconds": round(story - searched, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--workload", default="unschedulable")
    parser.add_argument("--detail", choices=(DETAIL_FULL, DETAIL_SUMMARY), default=DETAIL_SUMMARY)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path("report.html"))
    args = parser.parse_args()

    workload = build_workload(args.workload, args.nodes, args.pods, args.seed)
    t0 = time.perf_counter()
    sim = Simulation(workload.objects(), seed=args.seed, detail=args.detail)
    stories = StoryCollector(sim) if args.detail == DETAIL_SUMMARY else None
    run = sim.run()
    t1 = time.perf_counter()
    data = html_report_data(run, stories=stories)
    t2 = time.perf_counter()
    page = render_html(data)
    args.output.write_text(page, encoding="utf-8")
    t3 = time.perf_counter()
    raw = len(json.dumps(data, separators=(",", ":")).encode())
    pending = [i for i, r in enumerate(data["pods"]["result"]) if data["strings"][r] == "pending"]
    sample = pending[0] if pending else 0
    pod_key = f"{data['strings'][data['pods']['namespace'][sample]]}/{data['pods']['name'][sample]}"
    out = {
        "nodes": args.nodes,
        "pods": len(data["pods"]["name"]),
        "workload": args.workload,
        "detail": args.detail,
        "explainedPods": data["meta"]["explainedPods"],
        "simulateSeconds": round(t1 - t0, 1),
        "reportDataSeconds": round(t2 - t1, 1),
        "renderWriteSeconds": round(t3 - t2, 1),
        "dataJsonMB": round(raw / 1e6, 1),
        "fileMB": round(args.output.stat().st_size / 1e6, 1),
        "peakRssMB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    if shutil.which(CHROMIUM):
        out.update(_browser_timings(args.output, pod_key))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
