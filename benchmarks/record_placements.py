"""Record every workload's placements on a fixed seed into the test fixture.

    python benchmarks/record_placements.py [--output FILE]

``tests/bench/test_placements.py`` compares the scheduler of the day against this
record: run it only when a change of placements is intended (a fidelity fix), never to
make a speed-up's test pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kubesched.bench.placements import RECORDED_CASES, case_id, record

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "tests" / "fixtures" / "bench" / "placements.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(FIXTURE))
    parser.add_argument("--only", help="record only the cases of this workload (merged in)")
    args = parser.parse_args(argv)
    out = Path(args.output)
    data = json.loads(out.read_text()) if out.exists() else {}
    for case in RECORDED_CASES:
        if args.only and case["workload"] != args.only:
            continue
        started = time.perf_counter()
        data[case_id(case)] = record(case)
        print(f"{case_id(case)}: {time.perf_counter() - started:.1f}s", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
