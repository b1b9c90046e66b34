"""Tests of scheduler extenders: configuration, each verb over HTTP and in-process."""
