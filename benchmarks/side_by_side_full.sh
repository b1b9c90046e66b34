#!/usr/bin/env bash
# Every bench workload side by side at scheduler_perf-like sizes (up to 5,000 nodes):
# each row runs `kubesched bench` (embedded), `kubesched run` and kube-scheduler v1.36.2 on the
# same objects through a scratch control plane (benchmarks/bench_side_by_side.py, one control
# plane per row). Meant for a quiet machine; see docs/bench.md for the figures' meaning.
#
#   benchmarks/side_by_side_full.sh                 # the table (about 35-50 min, see docs)
#   benchmarks/side_by_side_full.sh --large-preemption   # + preemption 5,000 x 5,000 (+25 min)
#   benchmarks/side_by_side_full.sh --small         # every row at 60 x 150: a 5-minute check
#   SCHEDULERS=embedded,external benchmarks/side_by_side_full.sh   # without `kubesched run`
#
# Output: one JSON line per run and a ratio table per row, on stdout and appended to
# benchmarks/results/side-by-side-<UTC time>.log (or $OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-$(../shared/k8s/assets.sh)}"
OUT="${OUT:-benchmarks/results/side-by-side-$(date -u +%Y%m%dT%H%M%SZ).log}"
small=false
large_preemption=false
for arg in "$@"; do
    case "$arg" in
        --small) small=true ;;
        --large-preemption) large_preemption=true ;;
        *) echo "unknown option $arg (known: --small, --large-preemption)" >&2; exit 2 ;;
    esac
done

row() {  # row NODES PODS WORKLOADS [more bench_side_by_side.py options]
    local nodes=$1 pods=$2 workloads=$3
    shift 3
    if $small; then nodes=60 pods=150; fi
    echo "## $workloads at $nodes x $pods $* (load: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT"
    .venv/bin/python benchmarks/bench_side_by_side.py --nodes "$nodes" --pods "$pods" \
        --workloads "$workloads" --schedulers "${SCHEDULERS:-embedded,kubesched,external}" \
        "$@" 2>&1 | tee -a "$OUT"
}

# The basic and constrained workloads, at 500 and 5,000 nodes.
row 500 1000 basic
row 5000 5000 basic
row 5000 10000 basic
row 5000 2000 basic --percentage-of-nodes-to-score 100
row 5000 1000 topology-spread,unschedulable,pod-anti-affinity,preferred-affinity
row 500 500 preemption,preemption-anti-affinity
# More of upstream's scheduler_perf cases.
row 5000 1000 pod-affinity,preferred-anti-affinity,node-affinity,topology-spread-min-domains,churn
# gang alone: its control plane serves kube-scheduler's alpha gang API (feature gates).
row 5000 1000 gang
# Through the API server, these figures are bounded by kube-controller-manager here
# (the claims of dra, the PV binding of stateful).
row 500 2000 dra
row 500 500 stateful
if $large_preemption; then
    row 5000 5000 preemption --timeout 2700
fi
echo "results: $OUT"
