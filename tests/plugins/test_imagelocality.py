"""ImageLocality: nodes holding the pod's images score higher, scaled by image spread."""

from __future__ import annotations

import random

import pytest

from kubesched import NodeBatch, PodInfo
from kubesched.api import Node, Pod
from kubesched.cache import new_snapshot
from kubesched.testing import make_framework, make_node, make_pod, node_batch
from kubesched_builtin.imagelocality import (
    MB,
    NAME,
    ImageLocality,
    calculate_priority,
    normalized_image_name,
)


def node(name: str, *images: tuple[list[str], int]) -> Node:
    m = make_node(name).manifest()
    m["status"]["images"] = [{"names": names, "sizeBytes": size * MB} for names, size in images]
    return Node.model_validate(m)


def pod(*images: str, init: tuple[str, ...] = ()) -> Pod:
    m = make_pod("p").manifest()
    m["spec"]["containers"] = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
    if init:
        m["spec"]["initContainers"] = [{"name": f"i{i}", "image": im} for i, im in enumerate(init)]
    return Pod.model_validate(m)


N403002000 = (
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
)
N25010 = ((["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10))
N60040900 = ((["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900))
N300600900 = (
    (["gcr.io/300:latest"], 300),
    (["gcr.io/600:latest"], 600),
    (["gcr.io/900:latest"], 900),
)
N400030 = ((["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30))
N203040 = ((["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40))


# Expected scores worked out from the formula: sum of size x (nodes with it / 2 nodes),
# clamped to [23MB, 1000MB x containers], 100 x (sum - 23MB) // (max - 23MB).
CASES = [
    # 40MBx1/2 = 20MB < 23MB: 0; 250MBx1/2 = 125MB: 100x102/1977 = 5
    ("larger-image-preferred", pod("gcr.io/40", "gcr.io/250"), N403002000, N25010, 0, 5),
    # (40 + 300)x1/2 = 170MB: 100x147/1977 = 7
    ("two-images-on-one-node", pod("gcr.io/40", "gcr.io/300"), N403002000, N25010, 7, 0),
    # 4000MBx1/2 = 2000MB = the 2-container maximum: 100; 10MBx1/2: 0
    ("maximum-score", pod("gcr.io/10", "gcr.io/4000"), N400030, N25010, 100, 0),
    # m1: 600 + 900 (both on 2 nodes) = 1500MB: 100x1477/2977 = 49;
    # m2: 300x1/2 + 600 + 900 = 1650MB: 100x1627/2977 = 54
    (
        "multiple-large-images",
        pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        N60040900,
        N300600900,
        49,
        54,
    ),
    # m1: 30MB: 100x7/1977 = 0; m2: 30 + 40x1/2 = 50MB: 100x27/1977 = 1
    ("multiple-small-images", pod("gcr.io/30", "gcr.io/40"), N400030, N203040, 0, 1),
    # Init containers count: m1: 300x1/2 = 150MB: 100x127/1977 = 6; m2: 30x1/2: 0
    ("init-containers", pod("gcr.io/30", init=("gcr.io/300",)), N403002000, N203040, 6, 0),
    # Tagged names match exactly; untagged ones as :latest.
    ("tag-v1", pod("gcr.io/300:v1"), N403002000, N25010, 12, 0),
    ("no-images-anywhere", pod("busybox"), N25010, N203040, 0, 0),
]


@pytest.mark.parametrize(
    ("p", "m1", "m2", "s1", "s2"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_score(p, m1, m2, s1, s2) -> None:
    snap = new_snapshot([], [node("m1", *m1), node("m2", *m2)])
    fw = make_framework(ImageLocality)
    fw.set_snapshot(snap)
    infos = snap.list()
    state = fw.new_cycle_state()
    pi = PodInfo(p)
    assert fw.run_pre_score_plugins(state, pi, infos).is_success()
    plugin = fw.plugin(NAME)
    one = [plugin.score(state, p, ni) for ni in infos]
    many = list(plugin.score_nodes(state, p, NodeBatch(snap.table, range(len(infos)), infos)))
    assert one == many
    result = fw.run_score_plugins(state, pi, node_batch(infos))
    (ps,) = result.plugins
    assert dict(zip(result.names, ps.normalized.tolist(), strict=True)) == {"m1": s1, "m2": s2}
    assert ps.raw.tolist() == ps.normalized.tolist()


def test_total_is_all_snapshot_nodes() -> None:
    # Spread divides by every node of the snapshot, not only the nodes being scored.
    nodes = [node("m1", (["big:latest"], 800)), *(node(f"x{i}") for i in range(3))]
    snap = new_snapshot([], nodes)
    fw = make_framework(ImageLocality)
    fw.set_snapshot(snap)
    p = pod("big")
    state = fw.new_cycle_state()
    m1 = snap.get("m1")
    # 800MB x 1/4 = 200MB: 100 x 177 / 977 = 18
    assert fw.plugin(NAME).score(state, p, m1) == 18
    batch = NodeBatch(snap.table, [snap.table.index["m1"]], [m1])
    assert list(fw.plugin(NAME).score_nodes(state, p, batch)) == [18]


def test_vectorised_agrees_on_random_clusters() -> None:
    rng = random.Random(3)
    catalogue = [f"reg.io/img{i}" for i in range(12)]
    for _ in range(20):
        nodes = []
        for n in range(30):
            held = rng.sample(catalogue, rng.randint(0, 6))
            nodes.append(node(f"n{n}", *(([f"{im}:latest"], rng.randint(1, 1500)) for im in held)))
        snap = new_snapshot([], nodes)
        fw = make_framework(ImageLocality)
        fw.set_snapshot(snap)
        infos = snap.list()
        images = rng.sample(catalogue, rng.randint(1, 4))
        p = pod(*images, init=tuple(rng.sample(catalogue, rng.randint(0, 2))))
        state = fw.new_cycle_state()
        plugin = fw.plugin(NAME)
        rows = sorted(rng.sample(range(len(infos)), 20))
        one = [plugin.score(state, p, infos[r]) for r in rows]
        assert (
            list(
                plugin.score_nodes(state, p, NodeBatch(snap.table, rows, [infos[r] for r in rows]))
            )
            == one
        )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gcr.io/40", "gcr.io/40:latest"),
        ("gcr.io/40:v1", "gcr.io/40:v1"),
        ("localhost:5000/img", "localhost:5000/img:latest"),
        ("localhost:5000/img:1.0", "localhost:5000/img:1.0"),
        ("img@sha256:0123abcd", "img@sha256:0123abcd"),
        ("nginx", "nginx:latest"),
        ("", ":latest"),
        (None, ":latest"),
    ],
    ids=[
        "registry-no-tag",
        "tag",
        "port-no-tag",
        "port-and-tag",
        "digest",
        "bare",
        "empty",
        "none",
    ],
)
def test_normalized_image_name(name, expected) -> None:
    assert normalized_image_name(name) == expected


@pytest.mark.parametrize(
    ("sum_mb", "containers", "expected"),
    [
        (0, 1, 0),
        (23, 1, 0),
        (24, 1, 0),
        (1000, 1, 100),
        (5000, 1, 100),
        (511, 1, 49),
        (1000, 2, 49),
    ],
    ids=[
        "zero",
        "min",
        "just-above-min",
        "max",
        "above-max",
        "middle",
        "max-scales-with-containers",
    ],
)
def test_calculate_priority(sum_mb, containers, expected) -> None:
    assert calculate_priority(sum_mb * MB, containers) == expected


@pytest.mark.parametrize(
    ("images", "held"),
    [
        (("reg.io/new",), []),
        (("reg.io/new", "reg.io/other"), [(["reg.io/held:latest"], 900)]),
        (("reg.io/held", "reg.io/new"), [(["reg.io/held:latest"], 900)]),
    ],
    ids=["on-no-node", "none-of-several-anywhere", "one-held-one-not"],
)
def test_vectorised_images_on_no_node(images, held) -> None:
    """Images no node holds add nothing: the batch answers zeros without computing."""
    nodes = [node("n0", *held), node("n1")]
    snap = new_snapshot([], nodes)
    fw = make_framework(ImageLocality)
    fw.set_snapshot(snap)
    infos = snap.list()
    p = pod(*images)
    plugin = fw.plugin(NAME)
    state = fw.new_cycle_state()
    one = [plugin.score(state, p, ni) for ni in infos]
    assert list(plugin.score_nodes(state, p, NodeBatch(snap.table, [0, 1], infos))) == one
    if not held or "reg.io/held" not in images:
        assert one == [0, 0]
