"""SySched and the SeccompProfile kind, after kubernetes-sigs/scheduler-plugins."""

from .api import SECCOMP_PROFILE_KIND, SeccompProfile
from .plugin import NAME, SySched, SySchedArgs

__all__ = ["NAME", "SECCOMP_PROFILE_KIND", "SeccompProfile", "SySched", "SySchedArgs"]
