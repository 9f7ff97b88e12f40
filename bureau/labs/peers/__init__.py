"""Among its peers: the same work through the bureau, mem0 and LangGraph's store (issue 23 §1).

People who wire agents to memory pick mem0 or LangGraph's store. Both scope a search by a filter
or a namespace the *caller* passes; the bureau's agent holds a handle and passes no identity at
all. This package runs the same cases, questions and k through each, offline, with the same
MiniLM vectors, and measures what another role's private card does in the asker's top-k, own
and board recall, latency beside the bureau's, and what a caller that passes another identity
string gets. :mod:`.systems` adapts each library, :mod:`.corpus` builds the cases,
:mod:`.runner` measures, :mod:`.report` writes the table, CSV/JSON and the plot.
"""

from .. import entry_points

__getattr__ = entry_points(__name__, run="runner:run_peers")
