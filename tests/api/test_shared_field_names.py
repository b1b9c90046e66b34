"""The models share their sets of explicitly set fields, with pydantic's semantics kept."""

from __future__ import annotations

import copy

import pytest

from kubesched.api import Container, ObjectMeta, Pod, Toleration, Volume


def _pod(name: str) -> Pod:
    return Pod.model_validate(
        {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )


def test_instances_with_the_same_fields_share_one_set():
    a, b = _pod("a"), _pod("b")
    assert a.metadata.model_fields_set == {"name", "namespace"}
    assert a.metadata.__pydantic_fields_set__ is b.metadata.__pydantic_fields_set__
    assert a.spec.containers[0].__pydantic_fields_set__ is (
        b.spec.containers[0].__pydantic_fields_set__
    )


def test_a_shared_set_refuses_changes():
    names = _pod("a").metadata.model_fields_set
    names.add("name")  # already in: no change
    assert names == {"name", "namespace"}
    with pytest.raises(TypeError, match="never changed"):
        names.add("labels")
    with pytest.raises(TypeError, match="never changed"):
        names |= {"labels"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda m: setattr(m, "labels", {"x": "1"}), {"name", "namespace", "labels"}),
        (lambda m: setattr(m, "name", "other"), {"name", "namespace"}),
        (lambda m: m.model_copy(update={"uid": "u"}), {"name", "namespace"}),
    ],
    ids=["assign-unset-field", "assign-set-field", "copy-with-update-leaves-original"],
)
def test_changing_one_instance_leaves_the_others(change, expected):
    a, b = _pod("a"), _pod("b")
    change(a.metadata)
    assert a.metadata.model_fields_set == expected
    assert b.metadata.model_fields_set == {"name", "namespace"}
    assert b.metadata.labels == {} and b.metadata.name == "b"


def test_assignment_is_seen_by_exclude_unset():
    meta = ObjectMeta(name="a")
    meta.uid = "u"
    assert meta.model_dump(exclude_unset=True) == {"name": "a", "uid": "u"}
    assert ObjectMeta(name="b").model_dump(exclude_unset=True) == {"name": "b"}


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_model_copy_with_update_adds_the_updated_names(deep: bool):
    tol = Toleration(key="k")
    copied = tol.model_copy(update={"effect": "NoSchedule"}, deep=deep)
    assert copied.model_fields_set == {"key", "effect"}
    assert tol.model_fields_set == {"key"}
    assert type(tol.model_fields_set) is type(copied.model_fields_set)  # both shared again
    assert copied.model_dump(exclude_unset=True) == {"key": "k", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    "make",
    [copy.copy, copy.deepcopy, lambda c: c.model_copy(), lambda c: c.model_copy(deep=True)],
    ids=["copy", "deepcopy", "model_copy", "model_copy-deep"],
)
def test_copies_share_the_set(make):
    c = Container(name="c")
    copied = make(c)
    assert copied.__pydantic_fields_set__ is c.__pydantic_fields_set__
    copied.image = "i"
    assert copied.model_fields_set == {"name", "image"}
    assert c.model_fields_set == {"name"}


def test_a_model_with_extra_fields_keeps_its_own_set():
    a = Volume.model_validate({"name": "v", "gitRepo": {"repository": "r"}})
    b = Volume.model_validate({"name": "v", "gitRepo": {"repository": "r"}})
    assert a.model_fields_set == {"name", "gitRepo"}
    assert a.__pydantic_fields_set__ is not b.__pydantic_fields_set__
    a.model_fields_set.add("x")  # pydantic's own set, as for any model with extras
    assert b.model_fields_set == {"name", "gitRepo"}
