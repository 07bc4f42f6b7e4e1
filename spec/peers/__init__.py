"""Real implementations, out of the box: the catalog, its installs and the matrix.

``editspec peers list`` shows the catalog (``catalog.toml`` beside this file: pinned
versions, install recipes, maps or drivers, expectations); ``editspec peers run NAME...``
installs what is missing into the peer cache and runs the suite (and, where the tool can
be crashed, the crash explorer) against each; ``editspec peers matrix`` writes the
conformance matrix of the whole catalog (HTML, Markdown, JSON).
"""

from __future__ import annotations

from editspec.spec.peers.catalog import CatalogError, Peer, load_catalog

__all__ = ["CatalogError", "Peer", "load_catalog"]
