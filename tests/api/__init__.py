"""Tests of kubesched.api."""
