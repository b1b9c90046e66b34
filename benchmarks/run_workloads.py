"""Run the standard benchmark workloads of ``workloads.yaml`` into a JSON report.

    python benchmarks/run_workloads.py [--size small|large] [--output FILE]

The report has the shape of ``kubesched bench --output json`` (environment, options,
results) plus each run's options; compare two reports run by run (workload, nodes,
pods, percentage_of_nodes_to_score) and look at ratios, not absolute figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

from kubesched.bench import environment, run_workload

HERE = Path(__file__).resolve().parent


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--definitions", default=str(HERE / "workloads.yaml"))
    parser.add_argument("--output", default=str(HERE / "results" / "latest.json"))
    parser.add_argument("--size", choices=("small", "large"), help="only runs of this size")
    args = parser.parse_args(argv)

    spec = yaml.safe_load(Path(args.definitions).read_text())
    defaults = spec.get("defaults", {})
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = []
    for entry in spec["runs"]:
        run = {**defaults, **entry}
        if args.size and run.get("size") != args.size:
            continue
        pct = run.get("percentageOfNodesToScore")
        label = f"{run['workload']} {run['nodes']}×{run['pods']}" + (f" pct={pct}" if pct else "")
        print(f"{label}…", end=" ", file=sys.stderr, flush=True)
        started = time.perf_counter()
        result = run_workload(
            run["workload"],
            run["nodes"],
            run["pods"],
            seed=run.get("seed", 0),
            repeat=run.get("repeat", 1),
            percentage_of_nodes_to_score=pct,
            breakdown=run.get("breakdown", False),
        )
        print(
            f"{result.pods_per_second:.0f} pods/s, p50 {result.p50_ms:.2f} ms, "
            f"p99 {result.p99_ms:.2f} ms ({time.perf_counter() - started:.0f}s)",
            file=sys.stderr,
            flush=True,
        )
        results.append(result.to_dict())
        # Written after each run, so that an interrupted session keeps what it measured.
        report = {
            "environment": {**environment(), "git_commit": _git_commit()},
            "options": {"definitions": args.definitions, "size": args.size},
            "results": results,
        }
        out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
