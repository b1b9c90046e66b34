"""``kubesched run``'s serving flags: kube-scheduler's names and defaults, and one-line errors
before anything talks to a cluster."""

from __future__ import annotations

import argparse

import pytest

from kubesched.cli.main import main
from kubesched.serving.options import ServingOptions, add_serving_arguments, serving_options


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serving_arguments(parser)
    return parser.parse_args(argv)


def test_defaults_are_kube_schedulers() -> None:
    assert serving_options(_parse()) == ServingOptions(
        bind_address="0.0.0.0",
        secure_port=10259,
        authentication_tolerate_lookup_failure=True,
        authentication_token_webhook_cache_ttl=10.0,
        authorization_always_allow_paths=("/healthz", "/readyz", "/livez"),
        authorization_webhook_cache_authorized_ttl=10.0,
        authorization_webhook_cache_unauthorized_ttl=10.0,
    )


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (["--secure-port=0"], None, None),
        (["--authentication-skip-lookup"], "authentication_skip_lookup", True),
        (
            ["--authentication-tolerate-lookup-failure=false"],
            "authentication_tolerate_lookup_failure",
            False,
        ),
        (
            ["--authentication-token-webhook-cache-ttl=2m30s"],
            "authentication_token_webhook_cache_ttl",
            150.0,
        ),
        (
            ["--authorization-webhook-cache-unauthorized-ttl=0s"],
            "authorization_webhook_cache_unauthorized_ttl",
            0.0,
        ),
        (
            ["--authorization-always-allow-paths=/healthz, /debug/*"],
            "authorization_always_allow_paths",
            ("/healthz", "/debug/*"),
        ),
        (["--authorization-always-allow-paths="], "authorization_always_allow_paths", ()),
    ],
    ids=[
        "port-0-serves-nothing",
        "skip-lookup",
        "do-not-tolerate",
        "go-duration",
        "zero-ttl",
        "paths-and-prefix",
        "no-path-always-allowed",
    ],
)
def test_flags(argv: list[str], field: str | None, value: object) -> None:
    options = serving_options(_parse(*argv))
    if field is None:
        assert options is None
    else:
        assert getattr(options, field) == value


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--secure-port=70000"], "error: --secure-port 70000: must be between 0 and 65535\n"),
        (
            ["--tls-cert-file=/etc/hostname"],
            "error: --tls-cert-file and --tls-private-key-file go together\n",
        ),
        (
            ["--client-ca-file=/nonexistent/ca.crt"],
            "error: /nonexistent/ca.crt: --client-ca-file: no such file\n",
        ),
        (
            ["--authorization-kubeconfig=/nonexistent/kubeconfig"],
            "error: /nonexistent/kubeconfig: --authorization-kubeconfig: no such file\n",
        ),
    ],
    ids=["port-out-of-range", "cert-without-key", "missing-client-ca", "missing-kubeconfig"],
)
def test_bad_flags_are_one_line_errors(capsys, argv: list[str], message: str) -> None:
    assert main(["run", *argv]) == 1
    assert capsys.readouterr().err == message


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--authentication-token-webhook-cache-ttl=10"],
            "--authentication-token-webhook-cache-ttl '10': ",
        ),
        (
            ["--authorization-webhook-cache-authorized-ttl=-1s"],
            "--authorization-webhook-cache-authorized-ttl '-1s': ",
        ),
        (["--authorization-always-allow-paths=healthz"], "'healthz': a path starts with /"),
        (["--authorization-always-allow-paths=/a*b"], "'/a*b': '*' may only end a path"),
    ],
    ids=["duration-without-unit", "negative-duration", "relative-path", "star-inside"],
)
def test_bad_values_are_usage_errors(capsys, argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
