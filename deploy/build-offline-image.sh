#!/usr/bin/env bash
# Builds and checks kubesched's image without Docker and without a container registry.
#
# Where no Docker engine runs and python:3.11-slim cannot be pulled, this script:
#   1. makes a stand-in base image from Debian's own packages (mmdebstrap: bookworm
#      minbase + python3.11 + pip), imported with `buildah from scratch`;
#   2. builds the repository's real Dockerfile on it with `buildah bud`
#      (--build-arg BASE_IMAGE=<stand-in>);
#   3. checks the image: `kubesched --version`, a non-root user, the default plugins among
#      its entry points, `simulate` of the quickstart;
#   4. with --with-plugin, builds a second image the way docs/deploy.md says to add a
#      third-party plugin (its wheel in deploy/plugins/), the plugin made with
#      `kubesched new-plugin` from the cookiecutter template, and checks that the image
#      lists it and a profile using it filters with it;
#   5. with --run-check, runs the image with podman as deploy/deployment.yaml does (uid
#      65532, read-only root filesystem, every capability dropped, no privilege
#      escalation, /tmp writable) against a scratch kube-apiserver (KUBEBUILDER_ASSETS,
#      e.g. "$(../shared/k8s/assets.sh)"), with the ConfigMap's configuration: it must take
#      the Lease, bind a pod of schedulerName kubesched and answer /healthz and /readyz.
#
# Needs root (or a user with subuids), `apt-get install buildah mmdebstrap`, Debian's
# package archive and PyPI. Isolation is chroot (no user namespace needed); storage is
# buildah's default (overlay), or STORAGE_DRIVER=vfs where overlay mounts are refused.
# About 3 minutes the first time on 2 busy cores; the base image is kept and reused.
#
#   deploy/build-offline-image.sh [--tag IMAGE] [--with-plugin] [--run-check] [--rebuild-base]
set -euo pipefail

TAG=localhost/kubesched:0.1.0
BASE=localhost/kubesched-base:python3.11-bookworm
WITH_PLUGIN=0
RUN_CHECK=0
REBUILD_BASE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --tag) TAG="$2"; shift 2 ;;
        --with-plugin) WITH_PLUGIN=1; shift ;;
        --run-check) RUN_CHECK=1; shift ;;
        --rebuild-base) REBUILD_BASE=1; shift ;;
        -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-offline-image.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

tools="buildah mmdebstrap"
[ "$RUN_CHECK" = 1 ] && tools="$tools podman runc"
for tool in $tools; do
    command -v "$tool" >/dev/null || {
        echo "build-offline-image.sh: '$tool' not found: apt-get install $tools" >&2
        exit 1
    }
done
if [ "$RUN_CHECK" = 1 ] && [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
    echo "build-offline-image.sh: --run-check needs KUBEBUILDER_ASSETS (etcd, kube-apiserver)" >&2
    exit 1
fi

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export ROOT
export BUILDAH_ISOLATION=chroot
# buildah 1.28 ignores the STORAGE_DRIVER variable: pass it as the option.
buildah() { command buildah ${STORAGE_DRIVER:+--storage-driver "$STORAGE_DRIVER"} "$@"; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
step() { printf '\n== %s\n' "$*"; }

# -- 1. the stand-in for python:3.11-slim -------------------------------------------------
if [ "$REBUILD_BASE" = 1 ] || ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
    step "base image $BASE from Debian bookworm packages"
    # python:3.11-slim has `python` and `pip` on PATH and lets pip install system-wide; the
    # CA certificates added on this machine (/usr/local/share/ca-certificates, e.g. a TLS
    # inspecting proxy's) are trusted inside too, so that pip reaches PyPI as the host does.
    # shellcheck disable=SC2016  # "$1" is the hooks' own: the root file system's folder
    mmdebstrap --variant=minbase --include=python3.11,python3-pip,ca-certificates \
        --customize-hook='rm -f "$1"/usr/lib/python3.11/EXTERNALLY-MANAGED' \
        --customize-hook='ln -sf /usr/bin/python3 "$1"/usr/local/bin/python' \
        --customize-hook='ln -sf /usr/bin/pip3 "$1"/usr/local/bin/pip' \
        --customize-hook='if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
            cp /usr/local/share/ca-certificates/*.crt "$1"/usr/local/share/ca-certificates/
            chroot "$1" update-ca-certificates >/dev/null; fi' \
        bookworm "$WORK/rootfs.tar"
    ctr="$(buildah from scratch)"
    buildah add --quiet "$ctr" "$WORK/rootfs.tar" /
    rm -f "$WORK/rootfs.tar"
    buildah config --env LANG=C.UTF-8 \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --cmd python3 "$ctr"
    buildah commit --quiet --rm "$ctr" "$BASE" >/dev/null
fi

# -- 2. the real Dockerfile ---------------------------------------------------------------
step "buildah bud $TAG"
buildah bud --quiet --layers --network host --build-arg BASE_IMAGE="$BASE" -t "$TAG" "$ROOT" >/dev/null

# -- 3. checks -----------------------------------------------------------------------------
run_as_image_user() {  # run_as_image_user IMAGE CMD...: a command as the image's USER
    local image="$1" ctr user rc=0
    shift
    ctr="$(buildah from --quiet "$image")"
    user="$(buildah inspect --format '{{.OCIv1.Config.User}}' "$image")"
    buildah run --isolation chroot --user "$user" "$ctr" -- "$@" || rc=$?
    buildah rm "$ctr" >/dev/null
    return "$rc"
}
fail() { echo "build-offline-image.sh: FAILED: $*" >&2; exit 1; }

step "checks of $TAG"
entrypoint="$(buildah inspect --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}} user={{.OCIv1.Config.User}}' "$TAG")"
echo "config: $entrypoint"
version="$(run_as_image_user "$TAG" kubesched --version)"
echo "kubesched --version: $version"
uid="$(run_as_image_user "$TAG" id -u)"
[ "$uid" = 65532 ] || fail "the image runs as uid $uid, not 65532"
echo "runs as uid $uid"
plugins="$(run_as_image_user "$TAG" kubesched plugins -o json)"
for name in NodeResourcesFit PodTopologySpread InterPodAffinity DefaultPreemption DefaultBinder; do
    grep -q "\"$name\"" <<<"$plugins" || fail "plugin $name is not among the image's entry points"
done
echo "entry points: $(grep -o '"name": *"[A-Za-z]*"' <<<"$plugins" | wc -l) plugins, the default ones included"
# The quickstart, copied in, simulated as the image's user.
ctr="$(buildah from --quiet "$TAG")"
buildah copy --quiet "$ctr" "$ROOT/examples/quickstart" /examples/quickstart >/dev/null
summary="$(buildah run --isolation chroot --user 65532:65532 "$ctr" -- \
    kubesched simulate /examples/quickstart -o json | python3 -c \
    'import json,sys; s=json.load(sys.stdin)["summary"][0]; print(s["scheduled"], s["pending"])')"
buildah rm "$ctr" >/dev/null
[ "$summary" = "30 2" ] || fail "simulate examples/quickstart: scheduled, pending = $summary, not 30 2"
echo "simulate examples/quickstart in the image: 30 scheduled, 2 pending, as outside"

# -- 4. a third-party plugin, as docs/deploy.md says -----------------------------------------
if [ "$WITH_PLUGIN" = 1 ]; then
    step "a plugin from the cookiecutter template, in $TAG-with-plugin"
    # The template's example: a Filter that accepts only nodes labelled
    # example.com/image-smoke (no quickstart node is).
    "$ROOT/.venv/bin/kubesched" new-plugin --name ImageSmoke -e Filter --no-args --no-input \
        --description "checks that a third-party plugin reaches the image" \
        --output-dir "$WORK" >/dev/null
    # The build context: the working tree's tracked files, with the plugin's wheel in
    # deploy/plugins/.
    mkdir -p "$WORK/context"
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
        | xargs -0 cp -d --parents -t "$WORK/context")
    "$ROOT/.venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation \
        --wheel-dir "$WORK/context/deploy/plugins" "$WORK/kubesched-image-smoke"
    buildah bud --quiet --layers --network host --build-arg BASE_IMAGE="$BASE" -t "$TAG-with-plugin" \
        "$WORK/context" >/dev/null
    listed="$(run_as_image_user "$TAG-with-plugin" kubesched plugins)"
    grep ImageSmoke <<<"$listed" || fail "ImageSmoke is not listed by 'kubesched plugins'"
    # A profile with the plugin: every quickstart pod is refused with its reason.
    cat >"$WORK/with-plugin.yaml" <<'YAML'
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      enabled:
      - name: ImageSmoke
YAML
    ctr="$(buildah from --quiet "$TAG-with-plugin")"
    buildah copy --quiet "$ctr" "$ROOT/examples/quickstart" /examples/quickstart >/dev/null
    buildah copy --quiet "$ctr" "$WORK/with-plugin.yaml" /etc/kubesched/config.yaml >/dev/null
    out="$(buildah run --isolation chroot --user 65532:65532 "$ctr" -- \
        kubesched simulate /examples/quickstart --config /etc/kubesched/config.yaml)"
    buildah rm "$ctr" >/dev/null
    grep -q "didn't have the ImageSmoke label" <<<"$out" \
        || fail "the ImageSmoke profile did not filter with the plugin: $out"
    echo "simulate with the ImageSmoke profile: pods refused with \"node(s) didn't have the ImageSmoke label\""
fi

# -- 5. the image run as the Deployment runs it ----------------------------------------------
if [ "$RUN_CHECK" = 1 ]; then
    step "podman run $TAG as deploy/deployment.yaml, against a scratch kube-apiserver"
    # runc and cgroupfs work where crun refuses hybrid cgroup hierarchies; the ulimits are
    # set below the hard ones, which a runtime without CAP_SYS_RESOURCE may not raise.
    PODMAN="podman ${STORAGE_DRIVER:+--storage-driver $STORAGE_DRIVER} --runtime runc --cgroup-manager cgroupfs" \
    IMAGE="$TAG" "$ROOT/.venv/bin/python" - <<'PY'
"""Start a control plane, run the image against it, check what the Deployment relies on."""
import json
import os
import shlex
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.bench.workloads import node_manifest, pod_manifest
from kubesched.testing.envtest import ControlPlane, create_objects, free_port

podman = shlex.split(os.environ["PODMAN"])
root = Path(os.environ["ROOT"])
configmap = yaml.safe_load((root / "deploy" / "configmap.yaml").read_text())
config = yaml.safe_load(configmap["data"]["config.yaml"])
with ControlPlane() as cp, tempfile.TemporaryDirectory() as tmp:
    client = KubeClient(load_configuration(str(cp.kubeconfig)))
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "kubesched"}})
    pod = pod_manifest("via-image", spec={"schedulerName": "kubesched"})
    create_objects(client, [node_manifest(0), pod])
    # The ConfigMap's configuration and the admin kubeconfig, mounted at /etc/kubesched
    # (the container's /tmp is its own tmpfs, as the Deployment's emptyDir).
    etc = Path(tmp) / "etc"
    etc.mkdir()
    kubeconfig = yaml.safe_load(cp.kubeconfig.read_text())
    for cluster in kubeconfig["clusters"]:
        ca = Path(cluster["cluster"]["certificate-authority"])
        (etc / "ca.crt").write_bytes(ca.read_bytes())
        cluster["cluster"]["certificate-authority"] = "/etc/kubesched/ca.crt"
    (etc / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    config["clientConnection"]["kubeconfig"] = "/etc/kubesched/kubeconfig"
    (etc / "config.yaml").write_text(yaml.safe_dump(config))
    for f in etc.iterdir():
        f.chmod(0o644)  # readable by uid 65532
    port = free_port()
    name = f"kubesched-check-{port}"
    subprocess.run(
        [*podman, "run", "--detach", "--name", name, "--network", "host",
         "--read-only", "--user", "65532:65532", "--cap-drop", "ALL",
         "--security-opt", "no-new-privileges", "--tmpfs", "/tmp",
         "--ulimit", "nofile=8192:8192", "--ulimit", "nproc=4096:4096",
         "--volume", f"{etc}:/etc/kubesched:ro",
         os.environ["IMAGE"], "run", "--config", "/etc/kubesched/config.yaml",
         "--bind-address", "127.0.0.1", "--secure-port", str(port),
         "--authentication-skip-lookup"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        node = None
        while node is None and time.monotonic() < deadline:
            node = client.request("GET", "/api/v1/namespaces/default/pods/via-image")["spec"].get(
                "nodeName"
            )
            time.sleep(1)
        probes = {}
        for path in ("/healthz", "/readyz"):
            # The image's self-signed certificate, made at its start.
            insecure = ssl._create_unverified_context()
            url = f"https://127.0.0.1:{port}{path}"
            with urllib.request.urlopen(url, timeout=10, context=insecure) as r:
                probes[path] = (r.status, r.read().decode().strip())
        lease = client.request(
            "GET", "/apis/coordination.k8s.io/v1/namespaces/kubesched/leases/kube-scheduler"
        )
        user = subprocess.run([*podman, "exec", name, "id", "-u"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
    except Exception:
        subprocess.run([*podman, "logs", name])
        raise
    finally:
        subprocess.run([*podman, "rm", "--force", name], stdout=subprocess.DEVNULL)
    print(json.dumps({"bound to": node, "probes": probes, "lease holder":
                      lease["spec"]["holderIdentity"], "uid": user}))  # fmt: skip
    ok = node == "node-0" and all(s == 200 for s, _ in probes.values()) and user == "65532"
    ok = ok and bool(lease["spec"].get("holderIdentity"))
    sys.exit(0 if ok else "the image did not run as the Deployment needs")
PY
fi
step "done: $TAG"
