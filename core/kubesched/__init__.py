"""kubesched: the Kubernetes scheduler as a Python plugin framework, and its plugin SDK.

Plugin authors import what they need from here, Kubernetes objects from
``kubesched.api`` and test helpers from ``kubesched.testing``. Everything in
``__all__`` is the SDK: it follows semantic versioning as ``__sdk_version__`` (see
the compatibility policy in docs/sdk.md); nothing deeper is promised.
"""

from kubesched.backend.protocol import ConflictError, NotFoundError, PodCondition
from kubesched.clock import Clock, FakeClock, RealClock
from kubesched.errors import ErrorType, FieldProblem, PluginArgsError, UserInputError
from kubesched.features import FeatureGates, parse_feature_gates
from kubesched.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    PODS_TO_ACTIVATE_KEY,
    WILDCARD_EVENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeScores,
    Placement,
    PluginArgs,
    PodGroupAssignments,
    PodsToActivate,
    PostFilterResult,
    PreFilterResult,
    QueueingHint,
    StateData,
    StateKey,
    Status,
    default_normalize_score,
    hookimpl,
)
from kubesched.framework.args import (
    ArgsError,
    ArgsModel,
    duplicate,
    invalid,
    label_name_errors,
    not_supported,
    raise_args_errors,
    required,
)
from kubesched.framework.controllers import ClusterController, ControllerCluster
from kubesched.framework.diagnosis import Diagnosis, FitError
from kubesched.framework.gomath import (
    INT64_MAX,
    INT64_MIN,
    go_div,
    go_div_array,
    go_round,
    go_round_array,
    mul_div_array,
    sat_add_array,
    sat_sub_array,
    saturate,
)
from kubesched.framework.handle import (
    ClusterClient,
    EventRecorder,
    Handle,
    PodNominator,
    SnapshotLister,
)
from kubesched.framework.listers import ObjectLister
from kubesched.framework.node_table import NodeTable
from kubesched.framework.preemption import (
    DISRUPTION_TARGET,
    ERR_REASON_NO_VICTIMS,
    PREEMPTION_EXPLANATION_KEY,
    REASON_PREEMPTION_BY_SCHEDULER,
    Candidate,
    CandidateExplanation,
    DefaultPreemptionArgs,
    Evaluator,
    PDBView,
    PreemptionExplanation,
    PreemptionInterface,
    filter_pods_with_pdb_violation,
    importance_key,
    more_important_pod,
    nodes_where_preemption_might_help,
    pick_one_node_for_preemption,
    select_victims_on_node,
)
from kubesched.framework.preemption_batch import select_victims_on_nodes
from kubesched.framework.runtime.waiting_pods import WaitingPod
from kubesched.framework.sdk import SDK_VERSION
from kubesched.framework.types import (
    AffinityTerm,
    HostPort,
    ImageStateSummary,
    NodeBatch,
    NodeInfo,
    NodeToStatus,
    PodInfo,
    QueuedPodInfo,
    Resource,
    WeightedAffinityTerm,
)
from kubesched.notices import notice

__version__ = "0.1.0"

__sdk_version__ = SDK_VERSION
"""The version of the plugin SDK (this namespace's ``__all__``), ``MAJOR.MINOR``.

A minor release only adds to the SDK or deprecates (with a warning for one minor
release before removal); a major release may change or remove. A plugin declares
the SDK it was built for with a class attribute ``sdk_version = "1.0"``;
``kubesched plugins`` warns when that is not compatible with this one.
"""

__all__ = [
    "DISRUPTION_TARGET",
    "ERR_REASON_NO_VICTIMS",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "PODS_TO_ACTIVATE_KEY",
    "PREEMPTION_EXPLANATION_KEY",
    "REASON_PREEMPTION_BY_SCHEDULER",
    "WILDCARD_EVENT",
    "ActionType",
    "AffinityTerm",
    "ArgsError",
    "ArgsModel",
    "Candidate",
    "CandidateExplanation",
    "Clock",
    "ClusterClient",
    "ClusterController",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "ConflictError",
    "ControllerCluster",
    "CycleState",
    "DefaultPreemptionArgs",
    "Diagnosis",
    "ErrorType",
    "Evaluator",
    "EventRecorder",
    "EventResource",
    "FakeClock",
    "FeatureGates",
    "FieldProblem",
    "FitError",
    "Handle",
    "HostPort",
    "ImageStateSummary",
    "NodeBatch",
    "NodeInfo",
    "NodeScores",
    "NodeTable",
    "NodeToStatus",
    "NotFoundError",
    "ObjectLister",
    "PDBView",
    "Placement",
    "PluginArgs",
    "PluginArgsError",
    "PodCondition",
    "PodGroupAssignments",
    "PodInfo",
    "PodNominator",
    "PodsToActivate",
    "PostFilterResult",
    "PreFilterResult",
    "PreemptionExplanation",
    "PreemptionInterface",
    "QueuedPodInfo",
    "QueueingHint",
    "RealClock",
    "Resource",
    "SnapshotLister",
    "StateData",
    "StateKey",
    "Status",
    "UserInputError",
    "WaitingPod",
    "WeightedAffinityTerm",
    "__sdk_version__",
    "__version__",
    "default_normalize_score",
    "duplicate",
    "filter_pods_with_pdb_violation",
    "go_div",
    "go_div_array",
    "go_round",
    "go_round_array",
    "hookimpl",
    "importance_key",
    "invalid",
    "label_name_errors",
    "more_important_pod",
    "mul_div_array",
    "nodes_where_preemption_might_help",
    "not_supported",
    "notice",
    "parse_feature_gates",
    "pick_one_node_for_preemption",
    "raise_args_errors",
    "required",
    "sat_add_array",
    "sat_sub_array",
    "saturate",
    "select_victims_on_node",
    "select_victims_on_nodes",
]
