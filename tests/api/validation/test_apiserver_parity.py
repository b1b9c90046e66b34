"""Our validation refuses what kube-apiserver v1.36.2 refuses, with the same messages.

``tests/fixtures/apiserver/invalid-objects.json`` holds objects and the real API
server's verdict on each (a dry-run create; the recording script is in the fixture's
``record.py`` beside it). Upstream lists the errors of map entries (labels, resources)
in Go's random map order, so the causes are compared as a multiset; the headline's shape
is checked separately. A CEL selector that does not compile is compared up to
``compilation failed:``: the parser's own words after it are cel-go's upstream and the
``cel`` library's here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubesched.api import KINDS, parse_object
from kubesched.api.manifests import DecodingError
from kubesched.api.validation import VALIDATORS, InvalidObjectError, check_object, validate_object
from kubesched.errors import UserInputError

FIXTURE = Path(__file__).parents[2] / "fixtures" / "apiserver" / "invalid-objects.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())


_CEL_DETAIL = re.compile(r"(compilation failed: ).*", re.DOTALL)


def _comparable(causes: list[str]) -> Counter[str]:
    return Counter(_CEL_DETAIL.sub(r"\1...", c) for c in causes)


def _causes(case: dict[str, Any]) -> Counter[str]:
    causes = case["causes"]
    if not case["object"]["metadata"].get("name"):
        # The API server validates the name it generated (random suffix); we validate
        # before a name is chosen.
        causes = [c for c in causes if not c.startswith("metadata.name: Invalid value")]
    return _comparable(causes)


def _our_verdict(manifest: dict[str, Any]) -> tuple[str | None, list[str]]:
    """What loading ``manifest`` says: a decoding refusal's message, or the field errors."""
    try:
        parse_object(manifest)
    except DecodingError as err:
        return err.message, []
    except UserInputError as err:
        return err.message, [str(p) for p in err.problems]
    return None, []


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_same_verdict_and_messages_as_the_api_server(case: dict[str, Any]) -> None:
    message, causes = _our_verdict(case["object"])
    assert (message is None) == (case["message"] is None)
    assert _comparable(causes) == _causes(case)
    if case["message"] is not None and not case["causes"]:
        # Refused before validation (HTTP 400): the server's whole message.
        assert message == case["message"]


def test_headline_reads_like_the_api_server() -> None:
    case = next(c for c in CASES if c["id"] == "pod-negative-cpu")
    obj = KINDS["Pod"].model_validate(case["object"])
    with pytest.raises(InvalidObjectError) as info:
        check_object(obj)
    assert str(info.value) == case["message"]
    case = next(c for c in CASES if c["id"] == "pod-host-names")
    with pytest.raises(InvalidObjectError) as info:
        check_object(KINDS["Pod"].model_validate(case["object"]))
    assert str(info.value) == case["message"]


def test_grouped_kinds_are_named_with_their_group() -> None:
    case = next(c for c in CASES if c["id"] == "storageclass-no-provisioner")
    with pytest.raises(InvalidObjectError) as info:
        check_object(KINDS["StorageClass"].model_validate(case["object"]))
    assert str(info.value) == case["message"]


def test_repeated_errors_are_listed_once_in_the_message_and_kept_in_the_causes() -> None:
    case = next(c for c in CASES if c["id"] == "storageclass-invalid")
    obj = KINDS["StorageClass"].model_validate(case["object"])
    errs = validate_object(obj)
    assert len(errs) == len(case["causes"])
    with pytest.raises(InvalidObjectError) as info:
        check_object(obj)
    assert str(info.value).count("matchLabelExpressions: Duplicate value") == 1


# Kinds kube-apiserver does not serve built in: a file-only configuration, and the CRDs
# plugin packages register (PodGroup, NodeResourceTopology...: checked by their schema).
_NOT_SERVED = {"KubeletConfiguration"}


def test_every_served_kind_has_a_validator_and_a_recorded_case() -> None:
    served = {k for k, cls in KINDS.items() if cls.__module__.startswith("kubesched.")}
    served -= _NOT_SERVED
    assert served <= set(VALIDATORS)
    assert served <= {c["object"]["kind"] for c in CASES}
