"""What the tests and the benchmarks share: processes, waits, ports, /proc, readers.

Modules here import no Django unless their name says so (`live.py`), so the benchmarks,
which configure gateway processes from outside, can use them. Tests import helpers from
here; fixtures come through pytest by name (conftest files register them).
"""
