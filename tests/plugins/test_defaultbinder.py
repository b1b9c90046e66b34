"""DefaultBinder: binds through the client; client failures are ERROR statuses."""

from __future__ import annotations

from kubesched import Code, PodInfo
from kubesched.testing import make_framework, make_pod
from kubesched_builtin.defaultbinder import ERR_NO_CLIENT, NAME, DefaultBinder


class FakeClient:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.bound: list[tuple[str, str]] = []

    def bind(self, pod, node_name: str) -> None:
        if self.error is not None:
            raise self.error
        self.bound.append((pod.metadata.name, node_name))


def test_binds_through_the_client() -> None:
    client = FakeClient()
    fw = make_framework(DefaultBinder, client=client)
    pi = PodInfo(make_pod("p").obj())
    status = fw.run_bind_plugins(fw.new_cycle_state(), pi, "n1")
    assert status.is_success()
    assert client.bound == [("p", "n1")]


def test_client_error_is_an_error_status() -> None:
    fw = make_framework(DefaultBinder, client=FakeClient(RuntimeError('pods "p" is already bound')))
    status = fw.plugin(NAME).bind(make_pod("p").obj(), PodInfo(make_pod("p").obj()), "n1")
    assert status.code is Code.ERROR
    assert status.reasons == ['pods "p" is already bound']
    run = fw.run_bind_plugins(fw.new_cycle_state(), PodInfo(make_pod("p").obj()), "n1")
    assert run.code is Code.ERROR and run.plugin == NAME
    assert 'pods "p" is already bound' in run.message()


def test_no_client_is_an_error() -> None:
    fw = make_framework(DefaultBinder)
    status = fw.run_bind_plugins(fw.new_cycle_state(), PodInfo(make_pod("p").obj()), "n1")
    assert status.code is Code.ERROR
    assert ERR_NO_CLIENT in status.message()
