"""Tests of the contrib plugins (kubesched_contrib) and the core extension points they use."""
