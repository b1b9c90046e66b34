"""CycleState: typed keys, clone semantics and skip sets."""

import pytest

from kubesched import CycleState, StateData, StateKey


class Counter(StateData):
    def __init__(self, n: int) -> None:
        self.n = n

    def clone(self) -> "Counter":
        return Counter(self.n)


def test_read_write_delete():
    key = StateKey[int]("Plugin/x")
    state = CycleState()
    assert key not in state
    state.write(key, 3)
    assert state.read(key) == 3 and key in state
    state.delete(key)
    assert state.get(key, 7) == 7
    with pytest.raises(KeyError, match="'Plugin/x' not found in cycle state"):
        state.read(key)


def test_keys_with_the_same_text_do_not_collide():
    a, b = StateKey[int]("same"), StateKey[int]("same")
    state = CycleState()
    state.write(a, 1)
    state.write(b, 2)
    assert (state.read(a), state.read(b)) == (1, 2)


def test_clone_copies_state_data_and_skip_sets_but_shares_plain_values():
    counter, plain = StateKey[Counter]("c"), StateKey[list]("p")
    state = CycleState()
    shared = [1]
    state.write(counter, Counter(1))
    state.write(plain, shared)
    state.skip_filter_plugins.add("A")
    state.record_plugin_metrics = True
    copy = state.clone()
    copy.read(counter).n = 5
    copy.skip_filter_plugins.add("B")
    assert state.read(counter).n == 1
    assert copy.read(plain) is shared
    assert state.skip_filter_plugins == {"A"}
    assert copy.record_plugin_metrics is True
