"""What the leakage lab measures: leak and recall over the exposure table, their random
expectations, abstraction leakage as term repetition, and the checks' worth on hand-judged items."""
