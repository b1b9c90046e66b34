"""Notices: collected in order, shown as they come, reported in the JSON report."""

from __future__ import annotations

import logging

from kubesched.notices import Notice, collecting_notices, notice
from kubesched.simulate import build_report_data, simulate


def test_notices_are_collected_in_order_and_shown_as_made() -> None:
    shown: list[str] = []
    with collecting_notices(lambda n: shown.append(str(n))) as notices:
        notice("namespace created implicitly", obj='Namespace "shop"')
        notice("skipped", source="app.yaml", obj="Widget w")
    assert notices == [
        Notice("namespace created implicitly", None, 'Namespace "shop"'),
        Notice("skipped", "app.yaml", "Widget w"),
    ]
    assert shown == [
        'Namespace "shop": namespace created implicitly',
        "app.yaml: Widget w: skipped",
    ]


def test_a_notice_outside_a_collection_is_logged(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="kubesched.notices"):
        notice("nobody collects this", obj="Node n1")
    assert caplog.messages == ["Node n1: nobody collects this"]


def test_nested_collections_do_not_leak_into_each_other() -> None:
    with collecting_notices() as outer:
        with collecting_notices() as inner:
            notice("inner")
        notice("outer")
    assert [n.message for n in inner] == ["inner"]
    assert [n.message for n in outer] == ["outer"]


def test_the_report_carries_the_notices(example_objects) -> None:
    run = simulate(example_objects, seed=1)
    data = build_report_data(run, notices=[Notice("m", "f.yaml", "Node a")])
    assert data["notices"] == [{"message": "m", "source": "f.yaml", "object": "Node a"}]
    assert build_report_data(run)["notices"] == []
