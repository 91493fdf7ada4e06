"""Support code of the tests: oracles, inputs, process and cluster helpers."""
