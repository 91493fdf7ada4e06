"""releval's benchmark: synthetic data, peer runners and the harness behind ``make bench``.

Not part of the installed package (it lives outside ``src/``); run it from the
repository root as ``python -m bench.harness --size quick``.
"""
