"""The framework runtime's semantics, exercised with toy plugins."""

import pytest

from kubesched import (
    Code,
    NodeInfo,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    StateKey,
    Status,
    default_normalize_score,
    hookimpl,
)
from kubesched.framework.runtime import FrameworkError
from kubesched.testing import FifoSort, make_framework, make_node, make_pod, node_batch

CALLS: list[str] = []


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


def toy(name, **hooks):
    """A plugin class named ``name`` whose hooks are the given functions (self omitted)."""
    body = {"name": name, "__init__": lambda self, args, handle: None}
    for hook, fn in hooks.items():
        body[hook] = hookimpl(lambda self, *a, _fn=fn, **k: _fn(*a, **k))
    return type(name, (), body)


def recording(name, hook, result=None):
    def fn(*args):
        CALLS.append(f"{name}.{hook}")
        return result(*args) if callable(result) else result

    # Give the wrapper the hook's full signature so the framework calls it positionally.
    from kubesched.framework.runtime.calls import spec_params

    params = ", ".join(spec_params(hook))
    ns = {"fn": fn}
    exec(f"def impl(self, {params}): return fn({params})", ns)
    return type(
        name, (), {"name": name, "__init__": lambda s, a, h: None, hook: hookimpl(ns["impl"])}
    )


def nodes(*names):
    return [NodeInfo(make_node(n).capacity(cpu="4", memory="8Gi").obj()) for n in names]


POD = PodInfo(make_pod("p").obj())


def test_filter_runs_in_configured_order_and_short_circuits_per_node():
    a = recording(
        "A",
        "filter",
        lambda s, p, pi, ni: Status.unschedulable("a says no") if ni.name == "n1" else None,
    )
    b = recording("B", "filter")
    fw = make_framework(a, b)
    state = fw.new_cycle_state()
    n1, n2 = nodes("n1", "n2")
    assert fw.run_filter_plugins(state, POD, n1) == Status(
        Code.UNSCHEDULABLE, "a says no", plugin="A"
    )
    assert CALLS == ["A.filter"]
    assert fw.run_filter_plugins(state, POD, n2).is_success()
    assert CALLS == ["A.filter", "A.filter", "B.filter"]


def test_filter_batch_equals_per_node_and_uses_vectorised_hook():
    def per_node(s, p, pi, ni):
        return Status.unschedulable("odd") if ni.name in ("n1", "n3") else None

    class Vectorised:
        name = "V"

        def __init__(self, args, handle):
            pass

        @hookimpl
        def filter(self, node_info):
            return Status.unresolvable("not n2") if node_info.name == "n2" else None

        @hookimpl
        def filter_nodes(self, nodes):
            CALLS.append(f"V.filter_nodes{[ni.name for ni in nodes.infos]}")
            return [self.filter(ni) for ni in nodes.infos]

    fw = make_framework(recording("Odd", "filter", per_node), Vectorised)
    state = fw.new_cycle_state()
    infos = nodes("n0", "n1", "n2", "n3", "n4")
    verdicts, error = fw.run_filter_batch(state, POD, node_batch(infos))
    assert error is None
    one_by_one = [fw.run_filter_plugins(state, POD, ni) for ni in infos]
    assert [v or Status() for v in verdicts] == one_by_one
    assert [v.plugin if v else None for v in verdicts] == [None, "Odd", "V", "Odd", None]
    # The vectorised plugin saw only the nodes the first plugin let through.
    assert "V.filter_nodes['n0', 'n2', 'n4']" in CALLS


def _batch_plugin(answer):
    """A vectorised Filter plugin whose ``filter_nodes`` returns ``answer(nodes)``."""

    class Batch:
        name = "B"

        def __init__(self, args, handle):
            pass

        @hookimpl
        def filter(self, node_info):
            return None

        @hookimpl
        def filter_nodes(self, nodes):
            return answer(nodes)

    return Batch


@pytest.mark.parametrize(
    ("answer", "passing", "error"),
    [
        (lambda nodes: None, [0, 1, 2], None),
        (lambda nodes: [None] * len(nodes), [0, 1, 2], None),
        (lambda nodes: [None, Status(), None], [0, 1, 2], None),
        (lambda nodes: [None, Status.unschedulable("no"), None], [0, 2], None),
        (lambda nodes: Status.unschedulable("no"), [0, 1, 2], "returned Status from filter_nodes"),
    ],
    ids=["none-means-all-pass", "all-none", "explicit-success", "one-fails", "a-status"],
)
def test_filter_batch_answers(answer, passing, error):
    fw = make_framework(_batch_plugin(answer))
    state = fw.new_cycle_state()
    batch = node_batch(nodes("n0", "n1", "n2"))
    alive, verdicts, err = fw.filter_batch(state, POD, batch)
    if error is not None:
        assert err is not None and err.code is Code.ERROR and error in err.message()
        return
    assert err is None
    assert alive.tolist() == passing
    # No per-node verdict array is built when every node passes.
    assert (verdicts is None) == (len(passing) == 3)
    full, _ = fw.run_filter_batch(state, POD, batch)
    assert [i for i, v in enumerate(full.tolist()) if v is None] == passing


def test_filter_exception_is_an_error_naming_the_plugin():
    def boom(*a):
        raise RuntimeError("kaput")

    fw = make_framework(recording("Boom", "filter", boom))
    state = fw.new_cycle_state()
    status = fw.run_filter_plugins(state, POD, nodes("n1")[0])
    assert status.code is Code.ERROR and status.plugin == "Boom"
    assert status.message() == 'running "Boom" filter plugin: kaput'
    _, error = fw.run_filter_batch(state, POD, node_batch(nodes("n1", "n2")))
    assert error.code is Code.ERROR and error.plugin == "Boom"


def test_pre_filter_skip_removes_filter_for_the_cycle():
    skipper = type(
        "S",
        (),
        {
            "name": "S",
            "__init__": lambda s, a, h: None,
            "pre_filter": hookimpl(lambda self, pod: Status.skip()),
            "filter": hookimpl(lambda self, pod: Status.unschedulable("never")),
        },
    )
    fw = make_framework(skipper)
    state = fw.new_cycle_state()
    result, status, rejectors = fw.run_pre_filter_plugins(state, POD, [])
    assert status.is_success() and result is None and rejectors == set()
    assert state.skip_filter_plugins == {"S"}
    assert fw.run_filter_plugins(state, POD, nodes("n1")[0]).is_success()


@pytest.mark.parametrize(
    ("results", "expected_nodes", "expected_status"),
    [
        ([PreFilterResult(frozenset({"a", "b"})), None], {"a", "b"}, Status()),
        (
            [PreFilterResult(frozenset({"a", "b"})), PreFilterResult(frozenset({"b", "c"}))],
            {"b"},
            Status(),
        ),
        (
            [PreFilterResult(frozenset({"a"})), PreFilterResult(frozenset({"c"}))],
            set(),
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                "node(s) didn't satisfy plugin(s) [P0 P1] simultaneously",
            ),
        ),
        (
            [PreFilterResult(frozenset()), None],
            set(),
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't satisfy plugin P0"),
        ),
    ],
    ids=["one-narrows", "intersection", "empty-intersection", "single-empty"],
)
def test_pre_filter_results_are_intersected(results, expected_nodes, expected_status):
    classes = [recording(f"P{i}", "pre_filter", r) for i, r in enumerate(results)]
    fw = make_framework(*classes)
    result, status, _ = fw.run_pre_filter_plugins(fw.new_cycle_state(), POD, [])
    assert set(result.node_names) == expected_nodes
    assert (status.code, status.reasons) == (expected_status.code, expected_status.reasons)


def test_pre_filter_unresolvable_stops_at_once():
    fw = make_framework(
        recording("R", "pre_filter", Status.unresolvable("no way")),
        recording("Later", "pre_filter"),
    )
    _, status, plugins = fw.run_pre_filter_plugins(fw.new_cycle_state(), POD, [])
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no way", plugin="R")
    # Upstream returns no plugin set here; the scheduler adds the status's plugin.
    assert plugins == set() and CALLS == ["R.pre_filter"]


def test_pre_filter_unschedulable_lets_the_others_run():
    # kubernetes#119770: preemption may still help, so every PreFilter must run.
    fw = make_framework(
        recording("U", "pre_filter", Status.unschedulable("not yet")),
        recording("Narrow", "pre_filter", PreFilterResult(frozenset({"a"}))),
    )
    result, status, plugins = fw.run_pre_filter_plugins(fw.new_cycle_state(), POD, [])
    assert status == Status(Code.UNSCHEDULABLE, "not yet", plugin="U")
    assert CALLS == ["U.pre_filter", "Narrow.pre_filter"]
    assert result.node_names == {"a"} and plugins == {"Narrow"}


def _scorer(name, table, normalize=None):
    body = {
        "name": name,
        "__init__": lambda s, a, h: None,
        "score": hookimpl(lambda self, node_info: table[node_info.name]),
    }
    if normalize is not None:
        body["normalize_score"] = hookimpl(lambda self, scores: normalize(scores))
    return type(name, (), body)


def test_scores_are_normalised_weighted_and_summed():
    infos = nodes("a", "b", "c")
    fw = make_framework(
        _scorer("Raw", {"a": 10, "b": 50, "c": 100}),
        _scorer("Norm", {"a": 1, "b": 2, "c": 4}, lambda s: default_normalize_score(100, True, s)),
        weights={"Raw": 2, "Norm": 3},
    )
    result = fw.run_score_plugins(fw.new_cycle_state(), POD, node_batch(infos))
    assert result.names == ["a", "b", "c"]
    raw, norm = result.plugins
    assert norm.raw.tolist() == [1, 2, 4]
    assert norm.normalized.tolist() == [75, 50, 0]
    assert raw.weighted.tolist() == [20, 100, 200]
    assert result.totals.tolist() == [20 + 225, 100 + 150, 200]


@pytest.mark.parametrize(
    ("scores", "normalize", "bad"),
    [
        ({"a": 101}, None, 101),
        ({"a": 5, "b": -1}, None, -1),  # below 0: the unsigned view catches it too
        ({"a": 0, "b": 100, "c": -(2**62)}, None, -(2**62)),
        ({"a": 1}, lambda s: s.values.__setitem__(0, -3), -3),
        ({"a": 1, "b": 2}, lambda s: s.values.__setitem__(1, 250), 250),
    ],
    ids=["above-100", "negative", "very-negative", "normalized-negative", "normalized-above"],
)
def test_out_of_range_score_is_an_error_attributed_to_the_plugin(scores, normalize, bad):
    fw = make_framework(_scorer("Big", scores, normalize) if normalize else _scorer("Big", scores))
    status = fw.run_score_plugins(fw.new_cycle_state(), POD, node_batch(nodes(*scores)))
    assert status.code is Code.ERROR and status.plugin == "Big"
    assert status.message() == (
        f"plugin 'Big' returns an invalid score {bad}, it should in the range of [0, 100] "
        "after normalizing"
    )


def test_score_names_are_built_only_when_read():
    fw = make_framework(_scorer("A", {"a": 1, "b": 2}))
    batch = node_batch(nodes("a", "b"))
    result = fw.run_score_plugins(fw.new_cycle_state(), POD, batch)
    # The scheduler reads one name: the host's.
    assert [result.name_at(1), result.name_at(0)] == ["b", "a"]
    assert batch._names is None
    assert result.names == ["a", "b"]
    assert result.totals.tolist() == [1, 2]


def test_pre_score_skip_skips_score():
    plugin = type(
        "Sk",
        (),
        {
            "name": "Sk",
            "__init__": lambda s, a, h: None,
            "pre_score": hookimpl(lambda self: Status.skip()),
            "score": hookimpl(lambda self: 1000),
        },
    )
    fw = make_framework(plugin)
    state = fw.new_cycle_state()
    assert fw.run_pre_score_plugins(state, POD, []).is_success()
    result = fw.run_score_plugins(state, POD, node_batch(nodes("a")))
    assert result.plugins == [] and result.totals.tolist() == [0]


def test_reserve_failure_and_unreserve_in_reverse_order():
    def reserver(name, result=None):
        return type(
            name,
            (),
            {
                "name": name,
                "__init__": lambda s, a, h: None,
                "reserve": hookimpl(lambda self: (CALLS.append(f"{name}.reserve"), result)[1]),
                "unreserve": hookimpl(lambda self: CALLS.append(f"{name}.unreserve")),
            },
        )

    fw = make_framework(
        reserver("R1"), reserver("R2", Status.unschedulable("full")), reserver("R3")
    )
    state = fw.new_cycle_state()
    status = fw.run_reserve_plugins_reserve(state, POD, "n1")
    assert status == Status(Code.UNSCHEDULABLE, "full", plugin="R2")
    fw.run_reserve_plugins_unreserve(state, POD, "n1")
    assert CALLS == ["R1.reserve", "R2.reserve", "R3.unreserve", "R2.unreserve", "R1.unreserve"]


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def now(self):
        return self.t


def _permit(name, result):
    return recording(name, "permit", result)


def test_permit_wait_then_allow_by_every_waiting_plugin():
    clock = FakeClock()
    fw = make_framework(_permit("W1", Status.wait(10)), _permit("W2", Status.wait(30)), clock=clock)
    status = fw.run_permit_plugins(fw.new_cycle_state(), POD, "n1")
    assert status.code is Code.WAIT
    waiting = fw.get_waiting_pod(POD.uid)
    assert waiting.pending_plugins() == ["W1", "W2"]
    assert waiting.next_deadline() == 110.0
    waiting.allow("W1")
    assert waiting.status is None
    waiting.allow("W2")
    assert fw.wait_on_permit(POD).is_success()
    assert fw.get_waiting_pod(POD.uid) is None


def test_permit_wait_times_out_at_the_first_deadline():
    clock = FakeClock()
    fw = make_framework(
        _permit("W1", Status.wait(10)), _permit("W2", Status.wait(5000)), clock=clock
    )
    fw.run_permit_plugins(fw.new_cycle_state(), POD, "n1")
    waiting = fw.get_waiting_pod(POD.uid)
    # Upstream caps a wait at 15 minutes.
    assert sorted(waiting._pending.values()) == [110.0, 1000.0]
    clock.t = 109.0
    assert fw.waiting_pods.expire(clock.t) == 0
    clock.t = 110.0
    assert fw.waiting_pods.expire(clock.t) == 1
    verdict = fw.wait_on_permit(POD)
    assert verdict.code is Code.UNSCHEDULABLE and verdict.plugin == "W1"
    assert verdict.message() == (
        'pod "p" rejected while waiting on permit: rejected due to timeout after waiting '
        "at plugin W1"
    )


def test_permit_reject_through_the_handle_and_immediate_reject():
    fw = make_framework(_permit("W", Status.wait(10)), clock=FakeClock())
    fw.run_permit_plugins(fw.new_cycle_state(), POD, "n1")
    seen = []
    fw.get_waiting_pod(POD.uid).on_done(seen.append)
    assert fw.reject_waiting_pod(POD.uid)
    assert seen[0].code is Code.UNSCHEDULABLE
    fw2 = make_framework(_permit("No", Status.unschedulable("denied")), _permit("After", None))
    assert fw2.run_permit_plugins(fw2.new_cycle_state(), POD, "n1") == Status(
        Code.UNSCHEDULABLE, "denied", plugin="No"
    )
    assert "After.permit" not in CALLS


def test_bind_stops_at_the_first_plugin_that_does_not_skip():
    fw = make_framework(
        recording("Skipper", "bind", Status.skip()),
        recording("Binder", "bind"),
        recording("Unused", "bind"),
    )
    status = fw.run_bind_plugins(fw.new_cycle_state(), POD, "n1")
    assert status.is_success() and status.plugin == "Binder"
    assert CALLS == ["Skipper.bind", "Binder.bind"]


def test_bind_error_is_wrapped():
    fw = make_framework(recording("B", "bind", Status(Code.ERROR, "api down")))
    status = fw.run_bind_plugins(fw.new_cycle_state(), POD, "n1")
    assert status.code is Code.ERROR and status.message() == 'running Bind plugin "B": api down'


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        (
            [Status.unschedulable("cannot"), PostFilterResult("n1")],
            (PostFilterResult("n1"), Code.SUCCESS, None),
        ),
        ([Status.unschedulable("a"), Status.unschedulable("b")], (None, Code.UNSCHEDULABLE, "P0")),
        (
            [Status.unresolvable("stop"), PostFilterResult("n1")],
            (None, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "P0"),
        ),
        ([Status(Code.ERROR, "bad")], (None, Code.ERROR, "P0")),
        (
            [
                PostFilterResult("", status=Status.unschedulable("no victims")),
                Status.unschedulable("b"),
            ],
            (PostFilterResult(""), Code.UNSCHEDULABLE, "P0"),
        ),
    ],
    ids=["second-nominates", "all-fail", "unresolvable-stops", "error", "reject-and-clear"],
)
def test_post_filter(results, expected):
    fw = make_framework(*[recording(f"P{i}", "post_filter", r) for i, r in enumerate(results)])
    result, status = fw.run_post_filter_plugins(fw.new_cycle_state(), POD, {})
    nominated = result.nominated_node_name if result is not None else None
    want_result, want_code, want_plugin = expected
    want_nominated = want_result.nominated_node_name if want_result is not None else None
    assert (nominated, status.code, status.plugin) == (want_nominated, want_code, want_plugin)
    assert (result is None) == (want_result is None)


def test_nominated_pods_of_equal_or_higher_priority_are_counted():
    class Nominator:
        def __init__(self, pods):
            self.pods = pods

        def nominated_pods_for_node(self, name):
            return self.pods.get(name, [])

    class OnePodPerNode:
        name = "One"

        def __init__(self, args, handle):
            pass

        @hookimpl
        def filter(self, node_info):
            return Status.unschedulable("too many pods") if node_info.pods else None

    low = PodInfo(make_pod("low").priority(1).obj())
    high = PodInfo(make_pod("high").priority(10).obj())
    pod = PodInfo(make_pod("me").priority(5).obj())
    n1, n2 = nodes("n1", "n2")
    fw = make_framework(OnePodPerNode, nominator=Nominator({"n1": [high], "n2": [low]}))
    state = fw.new_cycle_state()
    assert fw.run_filter_plugins_with_nominated_pods(state, pod, n1).reasons == ["too many pods"]
    assert fw.run_filter_plugins_with_nominated_pods(state, pod, n2).is_success()
    assert n1.pods == []  # the NodeInfo itself is untouched


def test_cycle_state_flows_between_extension_points():
    key = StateKey[int]("Flow/count")

    class Flow:
        name = "Flow"

        def __init__(self, args, handle):
            pass

        @hookimpl
        def pre_filter(self, state):
            state.write(key, 7)

        @hookimpl
        def filter(self, state, node_info):
            return None if state.read(key) == 7 else Status.unschedulable("lost")

    fw = make_framework(Flow)
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, POD, [])
    assert fw.run_filter_plugins(state, POD, nodes("n")[0]).is_success()


def test_profile_errors():
    with pytest.raises(FrameworkError, match="initializing plugin 'Bad': nope"):

        class Bad:
            name = "Bad"

            def __init__(self, args, handle):
                raise ValueError("nope")

            @hookimpl
            def filter(self):
                return None

        make_framework(Bad)


def test_only_one_queue_sort():
    class Other(FifoSort):
        name = "OtherSort"

    with pytest.raises(FrameworkError, match=r"only one queue sort plugin required .* but got 2"):
        make_framework(FifoSort, Other)


def test_events_default_to_wildcard_for_rejecting_plugins():
    fw = make_framework(recording("F", "filter"))
    regs = fw.events_to_register()
    assert [(p, e.display()) for p, e, _ in regs] == [("F", "WildCardEvent")]


def test_vectorised_hooks_must_return_one_result_per_node():
    class Short:
        name = "Short"

        def __init__(self, args, handle):
            pass

        @hookimpl
        def filter(self, node_info):
            return None

        @hookimpl
        def filter_nodes(self, nodes):
            return [None]

        @hookimpl
        def score(self, node_info):
            return 1

        @hookimpl
        def score_nodes(self, nodes):
            return [1]

    fw = make_framework(Short)
    state = fw.new_cycle_state()
    batch = node_batch(nodes("a", "b"))
    _, error = fw.run_filter_batch(state, POD, batch)
    assert error.code is Code.ERROR and error.plugin == "Short"
    assert "filter_nodes of plugin 'Short' returned 1 verdicts for 2 nodes" in error.message()
    status = fw.run_score_plugins(state, POD, batch)
    assert status.message() == (
        'running Score plugins: plugin "Short" failed with: '
        "score_nodes of plugin 'Short' returned 1 scores for 2 nodes"
    )
