"""The memory policies the leakage lab compares: the four boundaries, policy e (purpose-bound
mediation, a wiring check) and what could fail beside it (a content mediator, label noise)."""
