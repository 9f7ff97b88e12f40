"""The service layer: the Bureau façade and its cases, the publish saga, the read-path catalogue.

It decides which spaces a request may search and hands widgets, responders and the lab only the
cards it decided they may see; it never imports PowerMem (the storage layer does).
"""

from .bureau import Bureau
from .case import Case

__all__ = ["Bureau", "Case"]
