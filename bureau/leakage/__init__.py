"""Leakage measurement: the MAGPIE benchmark loader and the metrics that score a memory policy.

Kept apart from the storage code so that measuring never needs a running store: a policy's
retrievals are written into a plain DataFrame and scored here.
"""
