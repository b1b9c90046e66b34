"""DynamicResources: Dynamic Resource Allocation of devices (ResourceClaims) during scheduling."""

from .plugin import NAME, DynamicResources, DynamicResourcesArgs

__all__ = ["NAME", "DynamicResources", "DynamicResourcesArgs"]
