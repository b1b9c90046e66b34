"""End-to-end tests: whole simulations through kubesched.simulate."""
