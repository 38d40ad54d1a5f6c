"""Ratio benchmarks: standalone scripts (``python benchmarks/bench_xxx.py``), not pytest tests."""
