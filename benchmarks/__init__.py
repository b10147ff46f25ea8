"""Benchmarks: each prints what it measured and its ratio to a baseline measured in the same run."""
