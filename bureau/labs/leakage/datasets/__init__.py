"""The leakage lab's data sets: MAGPIE and AgentSocialBench loaded as flat, labelled items, and
converted into the bureau's terms (cases, roles, seed keys, queries) for the runner."""
