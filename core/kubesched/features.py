"""Feature gates as kube-scheduler v1.36's: the known gates, their stages and defaults, and
the ``--feature-gates`` option's syntax and checks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from kubesched.errors import UserInputError
from kubesched.notices import notice

__all__ = [
    "KNOWN_FEATURES",
    "FeatureGates",
    "FeatureSpec",
    "Stage",
    "parse_feature_gates",
]


class Stage(StrEnum):
    """A gate's maturity, as ``kube-scheduler --help`` shows it (upstream's ``prerelease``)."""

    ALPHA = "Alpha"
    BETA = "Beta"
    GA = "GA"
    DEPRECATED = "Deprecated"


@dataclass(frozen=True)
class FeatureSpec:
    """One gate: its ``name``, ``stage`` and ``default``; ``locked`` when it cannot be set
    to anything but its default (upstream's ``LockToDefault``: every GA gate here but
    DRAPrioritizedList), and ``needs``, the gates that must be on while it is on."""

    name: str
    stage: Stage
    default: bool
    locked: bool = False
    needs: tuple[str, ...] = ()


_Spec = FeatureSpec

# The gates kube-scheduler v1.36.2 accepts: every gate its --help lists, and the GA gates
# scheduling code reads. tests/fixtures/featuregates/record.py records them from the real
# binary, and tests/framework/test_features.py holds this table to that recording.
_GATES = (
    _Spec("APIResponseCompression", Stage.BETA, True),
    _Spec("APIServerIdentity", Stage.BETA, True),
    _Spec("APIServingWithRoutine", Stage.ALPHA, False),
    _Spec("AllAlpha", Stage.ALPHA, False),
    _Spec("AllBeta", Stage.BETA, False),
    _Spec("AllowParsingUserUIDFromCertAuth", Stage.BETA, True),
    _Spec("AllowUnsafeMalformedObjectDeletion", Stage.ALPHA, False),
    _Spec("AtomicFIFO", Stage.BETA, True),
    _Spec("AuthorizePodWebsocketUpgradeCreatePermission", Stage.BETA, True),
    _Spec("CBORServingAndStorage", Stage.ALPHA, False),
    _Spec("CPUManagerPolicyAlphaOptions", Stage.ALPHA, False),
    _Spec("CPUManagerPolicyBetaOptions", Stage.BETA, True),
    _Spec("CRDObservedGenerationTracking", Stage.BETA, True),
    _Spec("CRIListStreaming", Stage.ALPHA, False),
    _Spec("CSIVolumeHealth", Stage.ALPHA, False),
    _Spec("ClearingNominatedNodeNameAfterBinding", Stage.BETA, True),
    _Spec("ClientsAllowCARotation", Stage.BETA, True),
    _Spec("ClientsAllowCBOR", Stage.ALPHA, False),
    _Spec("ClientsAllowTLSCacheGC", Stage.BETA, True),
    _Spec("ClientsPreferCBOR", Stage.ALPHA, False),
    _Spec("CloudControllerManagerWatchBasedRoutesReconciliation", Stage.ALPHA, False),
    _Spec("CloudControllerManagerWebhook", Stage.ALPHA, False),
    _Spec("ClusterTrustBundle", Stage.BETA, False),
    _Spec("ClusterTrustBundleProjection", Stage.BETA, False, needs=("ClusterTrustBundle",)),
    _Spec("ComponentFlagz", Stage.BETA, True),
    _Spec("ComponentStatusz", Stage.BETA, True),
    _Spec("ConcurrentWatchObjectDecode", Stage.BETA, False),
    _Spec("ConstrainedImpersonation", Stage.BETA, True),
    _Spec("ContainerCheckpoint", Stage.BETA, True),
    _Spec("ContainerRestartRules", Stage.BETA, True),
    _Spec("ContainerStopSignals", Stage.ALPHA, False),
    _Spec("ContextualLogging", Stage.BETA, True),
    _Spec("CoordinatedLeaderElection", Stage.BETA, False),
    _Spec("CrossNamespaceVolumeDataSource", Stage.ALPHA, False),
    _Spec("DRAAdminAccess", Stage.GA, True, locked=True),
    _Spec("DRAConsumableCapacity", Stage.BETA, True),
    _Spec("DRADeviceBindingConditions", Stage.BETA, True, needs=("DRAResourceClaimDeviceStatus",)),
    _Spec("DRADeviceTaintRules", Stage.BETA, False, needs=("DRADeviceTaints",)),
    _Spec("DRADeviceTaints", Stage.BETA, True),
    _Spec("DRAExtendedResource", Stage.BETA, True),
    _Spec("DRAListTypeAttributes", Stage.ALPHA, False),
    _Spec("DRANodeAllocatableResources", Stage.ALPHA, False),
    _Spec("DRAPartitionableDevices", Stage.BETA, True),
    _Spec("DRAPrioritizedList", Stage.GA, True),
    _Spec("DRAResourceClaimDeviceStatus", Stage.BETA, True),
    _Spec(
        "DRAResourceClaimGranularStatusAuthorization",
        Stage.BETA,
        True,
        needs=("DRAResourceClaimDeviceStatus",),
    ),
    _Spec("DRAResourcePoolStatus", Stage.ALPHA, False),
    _Spec("DRASchedulerFilterTimeout", Stage.BETA, True),
    _Spec("DRAWorkloadResourceClaims", Stage.ALPHA, False, needs=("GenericWorkload",)),
    _Spec("DeclarativeValidationBeta", Stage.BETA, True),
    _Spec("DeploymentReplicaSetTerminatingReplicas", Stage.BETA, True),
    _Spec("DetectCacheInconsistency", Stage.BETA, True),
    _Spec("DynamicResourceAllocation", Stage.GA, True, locked=True),
    _Spec("EnvFiles", Stage.BETA, True),
    _Spec("EventedPLEG", Stage.ALPHA, False),
    _Spec("ExtendWebSocketsToKubelet", Stage.BETA, True, needs=("NodeDeclaredFeatures",)),
    _Spec("GangScheduling", Stage.ALPHA, False, needs=("GenericWorkload",)),
    _Spec("GenericWorkload", Stage.ALPHA, False),
    _Spec("GracefulNodeShutdown", Stage.BETA, True),
    _Spec(
        "GracefulNodeShutdownBasedOnPodPriority", Stage.BETA, True, needs=("GracefulNodeShutdown",)
    ),
    _Spec("HPAConfigurableTolerance", Stage.BETA, True),
    _Spec("HPAScaleToZero", Stage.ALPHA, False),
    _Spec("HostnameOverride", Stage.BETA, True),
    _Spec("ImageVolumeWithDigest", Stage.ALPHA, False),
    _Spec("InOrderInformersBatchProcess", Stage.BETA, True),
    _Spec(
        "InPlacePodLevelResourcesVerticalScaling",
        Stage.BETA,
        True,
        needs=("NodeDeclaredFeatures", "PodLevelResources"),
    ),
    _Spec("InPlacePodVerticalScaling", Stage.GA, True, locked=True),
    _Spec("InPlacePodVerticalScalingExclusiveCPUs", Stage.ALPHA, False),
    _Spec("InPlacePodVerticalScalingExclusiveMemory", Stage.ALPHA, False),
    _Spec(
        "InPlacePodVerticalScalingInitContainers", Stage.BETA, True, needs=("NodeDeclaredFeatures",)
    ),
    _Spec("KubeletCrashLoopBackOffMax", Stage.BETA, True),
    _Spec("KubeletEnsureSecretPulledImages", Stage.BETA, True),
    _Spec("KubeletInUserNamespace", Stage.ALPHA, False),
    _Spec("KubeletSeparateDiskGC", Stage.BETA, True),
    _Spec("KubeletServiceAccountTokenForCredentialProviders", Stage.BETA, True),
    _Spec("ListFromCacheSnapshot", Stage.BETA, True),
    _Spec("LocalStorageCapacityIsolationFSQuotaMonitoring", Stage.BETA, False),
    _Spec("LoggingAlphaOptions", Stage.ALPHA, False),
    _Spec("LoggingBetaOptions", Stage.BETA, True),
    _Spec("ManifestBasedAdmissionControlConfig", Stage.ALPHA, False),
    _Spec("MatchLabelKeysInPodAffinity", Stage.GA, True, locked=True),
    _Spec("MatchLabelKeysInPodTopologySpread", Stage.BETA, True),
    _Spec(
        "MatchLabelKeysInPodTopologySpreadSelectorMerge",
        Stage.BETA,
        True,
        needs=("MatchLabelKeysInPodTopologySpread",),
    ),
    _Spec("MaxUnavailableStatefulSet", Stage.BETA, False),
    _Spec("MemoryQoS", Stage.ALPHA, False),
    _Spec("MinimumKubeletVersion", Stage.ALPHA, False),
    _Spec("MutablePVNodeAffinity", Stage.ALPHA, False),
    _Spec("MutablePodResourcesForSuspendedJobs", Stage.BETA, True),
    _Spec("MutableSchedulingDirectivesForSuspendedJobs", Stage.BETA, True),
    _Spec("NativeHistograms", Stage.ALPHA, False),
    _Spec("NodeDeclaredFeatures", Stage.BETA, True),
    _Spec("NodeInclusionPolicyInPodTopologySpread", Stage.GA, True, locked=True),
    _Spec("NominatedNodeNameForExpectation", Stage.BETA, True),
    _Spec("OpenAPIEnums", Stage.BETA, True),
    _Spec("OpportunisticBatching", Stage.BETA, True),
    _Spec("PLEGOnDemandRelist", Stage.BETA, True),
    _Spec("PersistentVolumeClaimUnusedSinceTime", Stage.ALPHA, False),
    _Spec("PodAndContainerStatsFromCRI", Stage.ALPHA, False),
    _Spec("PodCertificateRequest", Stage.BETA, False),
    _Spec("PodDeletionCost", Stage.BETA, True),
    _Spec("PodLevelResourceManagers", Stage.ALPHA, False, needs=("PodLevelResources",)),
    _Spec("PodLevelResources", Stage.BETA, True),
    _Spec("PodLogsQuerySplitStreams", Stage.ALPHA, False),
    _Spec("PodReadyToStartContainersCondition", Stage.BETA, True),
    _Spec("PodSchedulingReadiness", Stage.GA, True, locked=True),
    _Spec("PodTopologyLabelsAdmission", Stage.BETA, True),
    _Spec("PodsAPI", Stage.ALPHA, False),
    _Spec("PortForwardWebsockets", Stage.BETA, True),
    _Spec("PreventStaticPodAPIReferences", Stage.BETA, True),
    _Spec("QOSReserved", Stage.ALPHA, False),
    _Spec("ReduceDefaultCrashLoopBackOffDecay", Stage.ALPHA, False),
    _Spec("RelaxedServiceNameValidation", Stage.BETA, True),
    _Spec("ReloadKubeletClientCAFile", Stage.BETA, True),
    _Spec("ReloadKubeletServerCertificateFile", Stage.BETA, True),
    _Spec("RemoteRequestHeaderUID", Stage.BETA, True),
    _Spec("ResourceHealthStatus", Stage.BETA, True),
    _Spec("ResourceHealthStatusMessage", Stage.BETA, True, needs=("ResourceHealthStatus",)),
    _Spec(
        "RestartAllContainersOnContainerExits",
        Stage.BETA,
        True,
        needs=("ContainerRestartRules", "NodeDeclaredFeatures"),
    ),
    _Spec("RotateKubeletServerCertificate", Stage.BETA, True),
    _Spec("RouteExternalCertificate", Stage.ALPHA, False),
    _Spec("RuntimeClassInImageCriApi", Stage.ALPHA, False),
    _Spec("SELinuxMount", Stage.BETA, False),
    _Spec("SchedulerAsyncAPICalls", Stage.BETA, False),
    _Spec("SchedulerAsyncPreemption", Stage.BETA, True),
    _Spec("SchedulerPopFromBackoffQ", Stage.BETA, True),
    _Spec("SchedulerQueueingHints", Stage.GA, True, locked=True),
    _Spec("ServiceAccountNodeAudienceRestriction", Stage.BETA, True),
    _Spec("ShardedListAndWatch", Stage.ALPHA, False),
    _Spec("SidecarContainers", Stage.GA, True, locked=True),
    _Spec("SizeBasedListCostEstimate", Stage.BETA, True),
    _Spec("StaleControllerConsistencyDaemonSet", Stage.BETA, True, needs=("AtomicFIFO",)),
    _Spec("StaleControllerConsistencyJob", Stage.BETA, True, needs=("AtomicFIFO",)),
    _Spec("StaleControllerConsistencyReplicaSet", Stage.BETA, True, needs=("AtomicFIFO",)),
    _Spec("StaleControllerConsistencyStatefulSet", Stage.BETA, True, needs=("AtomicFIFO",)),
    _Spec("StatefulSetSemanticRevisionComparison", Stage.BETA, True),
    _Spec("StorageCapacityScoring", Stage.ALPHA, False),
    _Spec("StoragePerformantSecurityPolicy", Stage.ALPHA, False),
    _Spec("StorageVersionAPI", Stage.ALPHA, False, needs=("APIServerIdentity",)),
    _Spec("StorageVersionHash", Stage.BETA, True),
    _Spec("StorageVersionMigrator", Stage.BETA, False),
    _Spec("StrictIPCIDRValidation", Stage.BETA, True),
    _Spec("StructuredAuthenticationConfigurationEgressSelector", Stage.BETA, True),
    _Spec("StructuredAuthenticationConfigurationJWKSMetrics", Stage.BETA, True),
    _Spec("TaintTolerationComparisonOperators", Stage.ALPHA, False),
    _Spec("TokenRequestServiceAccountUIDValidation", Stage.BETA, True),
    _Spec("TopologyAwareWorkloadScheduling", Stage.ALPHA, False, needs=("GenericWorkload",)),
    _Spec("TopologyManagerPolicyAlphaOptions", Stage.ALPHA, False),
    _Spec("TopologyManagerPolicyBetaOptions", Stage.BETA, True),
    _Spec("TranslateStreamCloseWebsocketRequests", Stage.BETA, True),
    _Spec("UnauthenticatedHTTP2DOSMitigation", Stage.BETA, True),
    _Spec("UnknownVersionInteroperabilityProxy", Stage.BETA, True, needs=("APIServerIdentity",)),
    _Spec("UnlockWhileProcessingFIFO", Stage.BETA, True),
    _Spec("UserNamespacesHostNetworkSupport", Stage.ALPHA, False, needs=("NodeDeclaredFeatures",)),
    _Spec("VolumeLimitScaling", Stage.ALPHA, False),
    _Spec("WatchCacheInitializationPostStartHook", Stage.BETA, True),
    _Spec("WatchList", Stage.BETA, True),
    _Spec("WatchListClient", Stage.BETA, True),
    _Spec("WindowsCPUAndMemoryAffinity", Stage.ALPHA, False),
    _Spec("WindowsGracefulNodeShutdown", Stage.BETA, True, needs=("GracefulNodeShutdown",)),
    _Spec("WorkloadAwarePreemption", Stage.ALPHA, False, needs=("GangScheduling",)),
    _Spec("WorkloadWithJob", Stage.ALPHA, False, needs=("GenericWorkload",)),
)

KNOWN_FEATURES: Mapping[str, FeatureSpec] = MappingProxyType({g.name: g for g in _GATES})
"""Every gate kube-scheduler v1.36 knows, by name."""

_ALL_OF_STAGE = {"AllAlpha": Stage.ALPHA, "AllBeta": Stage.BETA}
"""Upstream's two gates that turn on every gate of a stage not set explicitly."""

_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
"""The spellings Go's ``strconv.ParseBool`` accepts, which upstream parses gates with."""


@dataclass(frozen=True)
class FeatureGates:
    """The state of every known gate: its default unless ``overrides`` sets it.

    Build one with :func:`parse_feature_gates` (checked as upstream checks
    ``--feature-gates``); ``FeatureGates()`` is every gate at its default.
    """

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on; a name kube-scheduler v1.36 does not know is a
        ``KeyError`` (a plugin asking for it has a typo or targets another version)."""
        spec = KNOWN_FEATURES.get(name)
        if spec is None:
            raise KeyError(f"feature {name!r} is not registered in the feature gates")
        if name in self.overrides:
            return self.overrides[name]
        # AllAlpha / AllBeta, when set either way, set every gate of their stage that
        # is not set itself (as upstream: AllBeta=false turns the beta gates off).
        for all_of_stage, stage in _ALL_OF_STAGE.items():
            if stage == spec.stage and all_of_stage in self.overrides:
                return self.overrides[all_of_stage]
        return spec.default

    def changed(self) -> dict[str, bool]:
        """The gates whose state differs from their default, by name (sorted)."""
        return {
            name: on
            for name in sorted(KNOWN_FEATURES)
            if (on := self.enabled(name)) != KNOWN_FEATURES[name].default
        }

    def to_option(self) -> str:
        """These gates as a ``--feature-gates`` value (empty when all are at their default),
        to start another scheduler with the same gates."""
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self.overrides.items()))


def parse_feature_gates(values: Iterable[str], *, source: str = "--feature-gates") -> FeatureGates:
    """Parse ``--feature-gates`` values (each ``A=true,kube:B=false``; the option may repeat)
    as kube-scheduler v1.36 does.

    An unknown gate is passed over with a notice (upstream warns ``unrecognized feature
    gate: X`` and starts); setting a GA gate is noticed as upstream warns. A value that is
    not a Go bool, a locked gate set to its opposite, a component other than ``kube`` and a
    gate left on while a gate it needs is off are ``UserInputError``s in upstream's words.
    """
    overrides: dict[str, bool] = {}
    for value in values:
        for item in value.split(","):
            if not item.strip():
                continue
            key, has_value, raw = item.partition("=")
            key = key.strip()
            component, colon, name = key.partition(":")
            if not colon:
                component, name = "kube", key
            if component.strip() != "kube":
                raise UserInputError(f"component not registered: {component.strip()}", obj=source)
            name = name.strip()
            if not has_value:
                raise UserInputError(f"missing bool value for {name}", obj=source)
            on = _GO_BOOLS.get(raw.strip())
            if on is None:
                raise UserInputError(
                    f"invalid value of {name}={raw.strip()}, err: strconv.ParseBool: "
                    f'parsing "{raw.strip()}": invalid syntax',
                    obj=source,
                )
            spec = KNOWN_FEATURES.get(name)
            if spec is None:
                notice(f"unrecognized feature gate: {name}", obj=source)
                continue
            if spec.locked and on != spec.default:
                raise UserInputError(
                    f"cannot set feature gate {name} to {str(on).lower()}, feature is locked "
                    f"to {str(spec.default).lower()}",
                    obj=source,
                )
            if spec.stage in (Stage.GA, Stage.DEPRECATED):
                notice(
                    f"setting {'GA' if spec.stage == Stage.GA else 'deprecated'} feature gate "
                    f"{name}={str(on).lower()}. It will be removed in a future release.",
                    obj=source,
                )
            overrides[name] = on
    gates = FeatureGates(MappingProxyType(overrides))
    _check_needs(gates, source)
    return gates


def _check_needs(gates: FeatureGates, source: str) -> None:
    """Upstream's dependency check: every enabled gate's needed gates are on."""
    problems = []
    for spec in KNOWN_FEATURES.values():
        if not spec.needs or not gates.enabled(spec.name):
            continue
        off = [n for n in spec.needs if not gates.enabled(n)]
        if off:
            problems.append(
                f"{spec.name} is enabled, but depends on features that are disabled: "
                f"[{' '.join(off)}]"
            )
    if len(problems) == 1:
        raise UserInputError(problems[0], obj=source)
    if problems:
        # Go's aggregate error, one message for all of them.
        raise UserInputError(f"[{', '.join(problems)}]", obj=source)
