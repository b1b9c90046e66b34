"""The ``extenders`` section of KubeSchedulerConfiguration: defaults and validation, with
the messages kube-scheduler v1.36 prints for the same files."""

from __future__ import annotations

import base64

import pytest

from kubesched.config import config_from_dict, validate_configuration
from kubesched.config.types import KubeSchedulerConfiguration, ignored_extended_resources
from kubesched.errors import UserInputError


def _config(extenders: list[dict]) -> KubeSchedulerConfiguration:
    return KubeSchedulerConfiguration.model_validate(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "extenders": extenders,
        }
    )


def _problems(extenders: list[dict]) -> list[str]:
    return [str(p) for p in validate_configuration(_config(extenders)) if "extenders" in p.path]


# Each message as `kube-scheduler --config` v1.36.2 printed it for the same extenders.
CASES = [
    ("valid", [{"urlPrefix": "http://e/", "filterVerb": "filter"}], []),
    (
        "prioritizer without weight",
        [{"urlPrefix": "http://e/", "prioritizeVerb": "prio"}],
        ["extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"],
    ),
    (
        "negative weight",
        [{"urlPrefix": "http://e/", "prioritizeVerb": "p", "weight": -3}],
        ["extenders[0].weight: Invalid value: -3: must have a positive weight applied to it"],
    ),
    ("weight without prioritizer is fine", [{"urlPrefix": "http://e/", "weight": 0}], []),
    (
        "two binders",
        [
            {"urlPrefix": "http://a/", "bindVerb": "bind"},
            {"urlPrefix": "http://b/", "bindVerb": "b"},
        ],
        [
            'extenders: Invalid value: "found 2 extenders implementing bind": only one '
            "extender can implement bind"
        ],
    ),
    (
        "managed resources",
        [
            {
                "urlPrefix": "http://e/",
                "managedResources": [
                    {"name": "example.com/gpu"},
                    {"name": "example.com/gpu"},
                    {"name": "cpu"},
                    {"name": "bad name!"},
                    {"name": "foo"},
                ],
            }
        ],
        [
            'extenders[0].managedResources[1].name: Invalid value: "example.com/gpu": '
            "duplicate extender managed resource name",
            'extenders[0].managedResources[2].name: Invalid value: "cpu": is an invalid '
            "extended resource name",
            'extenders[0].managedResources[3].name: Invalid value: "bad name!": name part must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            'extenders[0].managedResources[4].name: Invalid value: "foo": is an invalid '
            "extended resource name",
        ],
    ),
    (
        "duplicates across extenders",
        [
            {"urlPrefix": "http://a/", "managedResources": [{"name": "example.com/gpu"}]},
            {"urlPrefix": "http://b/", "managedResources": [{"name": "example.com/gpu"}]},
        ],
        [
            'extenders[1].managedResources[0].name: Invalid value: "example.com/gpu": '
            "duplicate extender managed resource name"
        ],
    ),
    (
        "in-process extender not installed",
        [{"urlPrefix": "python://nope", "filterVerb": "f"}],
        [
            'extenders[0].urlPrefix: Invalid value: "python://nope": in-process extender '
            '"nope" is not installed (entry point group kubesched.extenders); installed: labels'
        ],
    ),
    ("in-process extender installed", [{"urlPrefix": "python://labels"}], []),
]


@pytest.mark.parametrize(("extenders", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation_messages_are_kube_schedulers(extenders: list[dict], want: list[str]) -> None:
    assert _problems(extenders) == want


def test_defaults_are_kube_schedulers() -> None:
    # kube-scheduler --write-config-to prints httpTimeout: 5s and no weight for this extender.
    ext = _config([{"urlPrefix": "http://e/", "filterVerb": "filter"}]).extenders[0]
    assert (ext.http_timeout, ext.weight, ext.enable_https, ext.tls_config) == (5.0, 0, False, None)
    assert (ext.ignorable, ext.node_cache_capable, ext.managed_resources) == (False, False, ())


@pytest.mark.parametrize(
    ("given", "want"), [("2s", 2.0), ("1m30s", 90.0), ("0s", 5.0)], ids=["2s", "1m30s", "zero"]
)
def test_http_timeout(given: str, want: float) -> None:
    assert (
        _config([{"urlPrefix": "http://e/", "httpTimeout": given}]).extenders[0].http_timeout
        == want
    )


def test_tls_data_is_base64_and_round_trips() -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    ext = _config(
        [
            {
                "urlPrefix": "https://e/",
                "enableHTTPS": True,
                "tlsConfig": {"caData": base64.b64encode(pem).decode(), "serverName": "x"},
            }
        ]
    ).extenders[0]
    assert ext.enable_https and ext.tls_config.ca_data == pem
    dumped = ext.model_dump(mode="json", by_alias=True)
    assert dumped["enableHTTPS"] is True
    assert base64.b64decode(dumped["tlsConfig"]["caData"]) == pem


@pytest.mark.parametrize(
    ("extender", "path"),
    [
        ({"urlPrefix": "http://e/", "bogus": 1}, "extenders[0].bogus"),
        (
            {"urlPrefix": "http://e/", "tlsConfig": {"caData": "!!!"}},
            "extenders[0].tlsConfig.caData",
        ),
        ({"urlPrefix": "http://e/", "enableHttps": True}, "extenders[0].enableHttps"),
    ],
    ids=["unknown field", "bad base64", "wrong case"],
)
def test_bad_fields_name_their_path(extender: dict, path: str) -> None:
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": [extender],
    }
    with pytest.raises(UserInputError) as err:
        config_from_dict(data)
    assert path in str(err.value)


def test_null_extenders_is_none() -> None:
    config = KubeSchedulerConfiguration.model_validate({"extenders": None})
    assert config.extenders == ()


def test_ignored_by_scheduler_resources() -> None:
    config = _config(
        [
            {
                "urlPrefix": "http://a/",
                "managedResources": [
                    {"name": "example.com/gpu", "ignoredByScheduler": True},
                    {"name": "example.com/fpga"},
                ],
            },
            {
                "urlPrefix": "http://b/",
                "managedResources": [{"name": "example.com/vgpu", "ignoredByScheduler": True}],
            },
        ]
    )
    assert ignored_extended_resources(config.extenders) == ("example.com/gpu", "example.com/vgpu")


@pytest.mark.parametrize(
    ("extender", "message"),
    [
        (
            {"urlPrefix": "https://e/", "tlsConfig": {"caFile": "/no/such/ca.pem"}},
            "cannot set up extender 'https://e/': tlsConfig.caFile /no/such/ca.pem: No such "
            "file or directory",
        ),
        (
            {"urlPrefix": "https://e/", "tlsConfig": {"caData": "bm90IGEgY2VydA=="}},
            "cannot set up extender 'https://e/': tlsConfig.caData: ",
        ),
    ],
    ids=["missing CA file", "CA not PEM"],
)
def test_extenders_that_cannot_be_set_up(extender: dict, message: str) -> None:
    from kubesched.extenders import build_extenders

    with pytest.raises(UserInputError) as err:
        build_extenders(_config([extender]).extenders)
    assert err.value.obj == "KubeSchedulerConfiguration extenders[0]"
    assert str(err.value.message).startswith(message)
