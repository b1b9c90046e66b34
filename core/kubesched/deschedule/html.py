"""The HTML page of a deschedule report (``kubesched deschedule --report``): the simulation
report's page of the cluster after the evicted pods were re-placed, with a Deschedule
section on top (what each strategy evicted, where the pods went, each goal)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesched.api import KubeObject
from kubesched.deschedule.report import DescheduleReport
from kubesched.simulate.driver import SimulationRun
from kubesched.simulate.html import html_report_data
from kubesched.simulate.html import render_html as render_page


def deschedule_html_data(
    report: DescheduleReport, run: SimulationRun, objects: Iterable[KubeObject] | None = None
) -> dict[str, Any]:
    """The simulation report's data of ``run`` with the deschedule ``report`` under
    ``deschedule`` (its JSON form, the schema's)."""
    data = html_report_data(run, objects=objects)
    data["deschedule"] = report.to_dict()
    return data


def render_html(
    report: DescheduleReport,
    run: SimulationRun,
    title: str,
    objects: Iterable[KubeObject] | None = None,
) -> str:
    """The self-contained page (the simulation report's template, style and script)."""
    return render_page(deschedule_html_data(report, run, objects), title=title)
