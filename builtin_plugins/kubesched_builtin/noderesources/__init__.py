"""The node resources plugins: NodeResourcesFit and NodeResourcesBalancedAllocation.

Upstream's ``pkg/scheduler/framework/plugins/noderesources``. The two plugins share the
resource-allocation scoring machinery in :mod:`.resource_allocation`; the Fit scoring
strategies live in :mod:`.least_allocated`, :mod:`.most_allocated` and
:mod:`.requested_to_capacity_ratio`, as upstream's files do.
"""
