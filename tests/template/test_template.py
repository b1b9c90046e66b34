"""The plugin template, baked and installed beside kubesched in a fresh virtual environment.

Like cookiecutter-pytest-plugin's own tests: for several option combinations, generate
the project, ``pip install`` it, run its own test suite, and check that kubesched finds
it (``kubesched plugins``) and schedules with it (a simulation with the plugin enabled).

The environment: ``python -m venv --without-pip`` plus a ``.pth`` file that puts the
running environment's site-packages after the new one's. Then ``pip install --no-deps
--no-build-isolation -e`` installs kubesched itself (from this checkout) and the
generated projects *into the new environment*, with their entry points, while the
dependencies (pydantic, numpy, pytest, pip, setuptools ...) come from the running
environment and nothing is downloaded. ``--system-site-packages`` would not do: under
``make test`` the running interpreter is itself a virtual environment, and the "system"
one below it has none of kubesched's dependencies.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from kubesched.cli.new_plugin_cmd import generate, kebab_case

ROOT = Path(__file__).resolve().parents[2]

COMBOS = [
    # (plugin name, extension points, with args)
    ("NodeLabelGate", "Filter,Score", True),
    (
        # The longest name the template takes (its label key's name part: 63 characters).
        "MaintenanceAwareTopologySpreadingPlacementForZonesRacked",
        "PreEnqueue,PreFilter,Filter,PostFilter,PreScore,Score,Reserve,Permit,PreBind,Bind,PostBind",
        True,
    ),
    ("HoldAndBind", "PreEnqueue,Permit,Bind,PostBind", False),
    ("GPU", "PreScore,Score", False),
]

pytestmark = pytest.mark.slow


def _run(*cmd: str | Path, cwd: Path | None = None, env: dict | None = None) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


def _parent_site_dirs() -> list[str]:
    dirs = [*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    return list(dict.fromkeys(d for d in dirs if Path(d).is_dir()))


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("template")
    env_dir = base / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", env_dir)
    python = env_dir / "bin" / "python"
    purelib = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip()
    )
    (purelib / "_parent_environment.pth").write_text("\n".join(_parent_site_dirs()) + "\n")
    projects = []
    for name, points, with_args in COMBOS:
        projects.append(
            generate(
                base / "src",
                default_config=True,
                plugin_name=name,
                extension_points=points,
                with_args=with_args,
                author="Template Test",
            )
        )
    pip = (python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation")
    _run(*pip, "-e", ROOT)
    _run(*pip, *(arg for p in projects for arg in ("-e", p)))
    return {"python": python, "bin": env_dir / "bin", **{p.name: p for p in projects}}


def _clean_env(venv: dict[str, Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv['bin']}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTEST_ADDOPTS", None)
    return env


def test_kubesched_is_the_checkouts_own(venv) -> None:
    out = _run(venv["python"], "-c", "import kubesched, sys; print(kubesched.__file__, sys.prefix)")
    module, prefix = out.split()
    assert Path(module).is_relative_to(ROOT / "core")
    assert Path(prefix) == venv["bin"].parent


@pytest.mark.parametrize(("name", "points", "with_args"), COMBOS, ids=[c[0] for c in COMBOS])
def test_generated_project_passes_its_own_tests_and_lint(venv, name, points, with_args) -> None:
    project = venv[f"kubesched-{kebab_case(name)}"]
    out = _run(
        venv["python"],
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        project,
        cwd=project,
        env=_clean_env(venv),
    )
    assert " passed" in out and "failed" not in out and "error" not in out, out
    # The kubesched pytest plugin came from the entry point, not a conftest.
    assert not (project / "conftest.py").exists()
    _run(venv["python"], "-m", "ruff", "check", "--no-cache", ".", cwd=project)
    _run(venv["python"], "-m", "ruff", "format", "--check", "--no-cache", ".", cwd=project)


PACKAGE_METADATA = textwrap.dedent(
    """
    import tempfile, warnings
    from setuptools.warnings import SetuptoolsDeprecationWarning
    warnings.simplefilter("error", SetuptoolsDeprecationWarning)
    from setuptools import build_meta
    build_meta.prepare_metadata_for_build_wheel(tempfile.mkdtemp())
    """
)


@pytest.mark.parametrize("project", ["kubesched", "generated"])
def test_packages_build_without_deprecation_warnings(venv, project) -> None:
    # What pip runs first when it installs a project: the metadata build, where setuptools
    # checks pyproject.toml and warns of what is deprecated (here, as errors).
    where = ROOT if project == "kubesched" else venv[f"kubesched-{kebab_case(COMBOS[0][0])}"]
    _run(venv["python"], "-c", PACKAGE_METADATA, cwd=where, env=_clean_env(venv))


def test_kubesched_plugins_lists_the_generated_plugins(venv) -> None:
    # Not _run: the command exits 1 when any installed plugin fails to load, and whether
    # some other distribution has such a plugin is not this test's business.
    proc = subprocess.run(
        [venv["bin"] / "kubesched", "plugins", "-o", "json"],
        env=_clean_env(venv),
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(proc.stdout)
    by_name = {p["name"]: p for p in data["plugins"]}
    for name, points, with_args in COMBOS:
        entry = by_name[name]
        assert entry["distribution"] == f"kubesched-{kebab_case(name)}"
        assert entry["extensionPoints"] == points.split(",")
        assert entry["args"] == (f"{name}Args" if with_args else None)
    assert "NodeResourcesFit" in by_name
    generated = {f"kubesched-{kebab_case(c[0])}" for c in COMBOS}
    assert not [e for e in data["errors"] if e["distribution"] in generated]


SIMULATION = textwrap.dedent(
    """
    import json, sys
    from kubesched.config import config_from_dict
    from kubesched.simulate.driver import simulate
    from kubesched.testing import make_node, make_pod, placements

    name, label = sys.argv[1], sys.argv[2]
    config = config_from_dict({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": name}]}},
        }],
    })
    nodes = [
        make_node("heavy").labels({label: "4"}).capacity(cpu="4", memory="8Gi").obj(),
        make_node("light").labels({label: "1"}).capacity(cpu="4", memory="8Gi").obj(),
        make_node("plain").capacity(cpu="4", memory="8Gi").obj(),
    ]
    pods = [make_pod(f"p{i}").req(cpu="100m").obj() for i in range(4)]
    pods.append(make_pod("held").req(cpu="100m").annotations({label: "hold"}).obj())
    run = simulate([*nodes, *pods], config=config, seed=1)
    print(json.dumps(placements(run)))
    """
)


@pytest.mark.parametrize(("name", "points", "with_args"), COMBOS, ids=[c[0] for c in COMBOS])
def test_simulation_schedules_with_the_generated_plugin(venv, name, points, with_args) -> None:
    label = f"example.com/{kebab_case(name)}"
    out = _run(venv["python"], "-c", SIMULATION, name, label, env=_clean_env(venv))
    where = json.loads(out)
    chosen = points.split(",")
    held = where.pop("default/held")
    assert (held is None) == ("PreEnqueue" in chosen)
    assert all(where.values()), where
    if "Filter" in chosen:
        assert "plain" not in where.values()
    if "Score" in chosen:
        assert set(where.values()) == {"heavy"}
