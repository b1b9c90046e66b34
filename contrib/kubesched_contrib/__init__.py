"""Optional kubesched plugins, not in the default profile (after kubernetes-sigs/scheduler-plugins)."""
