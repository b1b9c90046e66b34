"""Files a command writes at the end are checked before it starts: a missing folder is
refused at once, as argparse refuses any bad argument (status 2, one line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.cli.main import main

EXAMPLE = Path(__file__).parents[2] / "examples" / "quickstart"


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", str(EXAMPLE), "--metrics", "{missing}/metrics.txt"],
        ["simulate", str(EXAMPLE), "--report", "{missing}/report.html"],
        ["simulate", "--from-cluster", "--save-snapshot", "{missing}/snapshot.yaml"],
        ["bench", "--save", "{missing}/bench.json"],
    ],
    ids=["simulate-metrics", "simulate-report", "save-snapshot", "bench-save"],
)
def test_a_missing_folder_is_refused_up_front(argv: list[str], tmp_path: Path, capsys) -> None:
    missing = tmp_path / "not-made"
    args = [a.format(missing=missing) for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"the folder {missing} does not exist" in err
    assert err.strip().splitlines()[-1].startswith("kubesched ")
    assert not missing.exists()
