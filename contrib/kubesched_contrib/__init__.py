"""Optional kubesched plugins, not in the default profile (after scheduler-plugins)."""
