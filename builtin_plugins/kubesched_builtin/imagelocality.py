"""ImageLocality: favour nodes that already have the pod's container images (Score)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched import (
    MAX_NODE_SCORE,
    CycleState,
    NodeBatch,
    NodeInfo,
    NodeTable,
    PodInfo,
    StateKey,
    Status,
    hookimpl,
)
from kubesched.api import Pod
from kubesched_builtin import signers
from kubesched_builtin.names import IMAGE_LOCALITY

NAME = IMAGE_LOCALITY

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
"""Image bytes below which a node scores 0: the low end of usual image sizes."""
MAX_CONTAINER_THRESHOLD = 1000 * MB
"""Image bytes per container at and above which a node scores 100 (the threshold is
this times the number of containers, init containers included)."""

IMAGES_KEY: StateKey[tuple[tuple[str, ...], int]] = StateKey(NAME + "/images")
"""The pod's normalised image names (init containers, then containers) and how many
containers it has; computed on the cycle's first Score call."""

ERR_NO_SNAPSHOT = "ImageLocality needs the framework's snapshot to count the nodes"


def normalized_image_name(name: str | None) -> str:
    """The CRI name of an image: ``:latest`` is added when the name has no tag or digest
    (no ``:`` after the last ``/``), as node status reports images."""
    name = name or ""
    if name.rfind(":") <= name.rfind("/"):
        name += ":latest"
    return name


def pod_images(pod: Pod) -> tuple[tuple[str, ...], int]:
    """``(normalised images of init containers and containers, number of containers)``."""
    containers = (*pod.spec.init_containers, *pod.spec.containers)
    return tuple(normalized_image_name(c.image) for c in containers), len(containers)


def scaled_image_score(size: int, num_nodes: int, total_num_nodes: int) -> int:
    """An image's size scaled by the fraction of nodes having it (float64, truncated),
    so that a widespread image does not pull every pod to the same few nodes."""
    spread = float(num_nodes) / float(total_num_nodes)
    return int(float(size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """The node's score: ``sum_scores`` clamped to the thresholds, scaled to 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return _div_trunc(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


def _div_trunc(a: int, b: int) -> int:
    # Go's integer division truncates toward zero.
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _image_columns(table: NodeTable, image: str) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the image's size and on how many nodes it is (0, 0 where absent).

    A node's image states change only with its Node object (which resets the table's
    derived columns) or with the node list (which rebuilds the table).
    """
    n = len(table.infos)
    size = np.zeros(n, dtype=np.float64)
    num_nodes = np.zeros(n, dtype=np.float64)
    for row, ni in enumerate(table.infos):
        state = ni.image_states.get(image)
        if state is not None:
            size[row] = state.size
            num_nodes[row] = state.num_nodes
    return size, num_nodes


class ImageLocality:
    """Scores a node by the total size of the pod's images it already has, each scaled
    by how widespread the image is; no normalisation (the score is already 0..100)."""

    name = NAME

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    def _total_num_nodes(self) -> int:
        snapshot = getattr(self._handle, "snapshot", None)
        if snapshot is None:
            raise RuntimeError(ERR_NO_SNAPSHOT)
        return len(snapshot.list())

    @staticmethod
    def _images(state: CycleState, pod: Pod) -> tuple[tuple[str, ...], int]:
        images = state.get(IMAGES_KEY)
        if images is None:
            images = pod_images(pod)
            state.write(IMAGES_KEY, images)
        return images

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """The score follows the pod's images."""
        return [(signers.IMAGE_NAMES, sorted(pod_images(pod)[0]))]

    @hookimpl
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        images, num_containers = self._images(state, pod)
        total = self._total_num_nodes()
        states = node_info.image_states
        total_score = 0
        for image in images:
            s = states.get(image)
            if s is not None:
                total_score += scaled_image_score(s.size, s.num_nodes, total)
        return calculate_priority(total_score, num_containers)

    @hookimpl
    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeBatch) -> Sequence[int]:
        images, num_containers = self._images(state, pod)
        total = float(self._total_num_nodes())
        table, rows = nodes.table, nodes.rows
        sums = np.zeros(len(rows), dtype=np.int64)
        present = False
        for image in images:
            size, num_nodes = table.derived((NAME, image), lambda t, i=image: _image_columns(t, i))
            if not table.derived((NAME, image, "anywhere"), lambda t, s=size: bool(s.any())):
                continue  # on no node: adds 0 everywhere (the usual case of a new image)
            present = True
            # Same float64 operations in the same order as scaled_image_score.
            sums += (size[rows] * (num_nodes[rows] / total)).astype(np.int64)
        max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
        if not present and max_threshold > MIN_THRESHOLD:
            # Every sum is 0, below the threshold: every node scores 0.
            return sums
        if max_threshold <= MIN_THRESHOLD:
            # No containers: not a valid pod; keep the scalar formula's answer.
            return [calculate_priority(int(s), num_containers) for s in sums]
        clamped = np.clip(sums, MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
