"""kubesched's built-in plugins: upstream kube-scheduler's default profile, one module each.

Each plugin is registered through its own ``kubesched.plugins`` entry point, exactly
like a third party's; nothing in the core imports this package.
"""
