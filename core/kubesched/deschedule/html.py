"""The self-contained HTML page of a deschedule report (``kubesched deschedule --report``)."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from kubesched.deschedule.report import DescheduleReport, summary, tables, utilization_lines

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0 2em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
"""


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: DescheduleReport, title: str) -> str:
    """The page: a summary, the evictions with where each pod went, the strategies with
    their goals, and each node's utilisation before and after. Every value is escaped."""
    parts = [
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>",
        f"<p>{escape(summary(report))}</p>",
    ]
    for n, (heading, columns, rows) in enumerate(tables(report)):
        parts.append(f"<h2>{escape(heading)}</h2>")
        parts.append(_table(columns, rows))
        if n == 1:
            parts += [f"<p>{escape(line)}</p>" for line in utilization_lines(report)]
    if report.notices:
        parts.append("<h2>Notices</h2><ul>")
        parts += [f"<li>{escape(n)}</li>" for n in report.notices]
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)
