"""Benchmarking: the fixed suite, the runner that times it, and the results it writes."""
