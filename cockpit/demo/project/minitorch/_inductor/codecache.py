"""The inductor cache: compiled graphs land in ``$TORCHINDUCTOR_CACHE_DIR`` (as in torch).

A graph's key is a hash of what was compiled; a compile whose key is already there is a cache hit
(the trace says ``fx_graph_cache_hit``), else a miss that stores it (``fx_graph_cache_miss``).
"""

from __future__ import annotations

import getpass
import hashlib
import os
import tempfile


def cache_dir() -> str:
    d = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not d:
        try:
            user = getpass.getuser()
        except Exception:
            user = "unknown"
        d = os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")
    return d


def cached_entries() -> int:
    n = 0
    for _root, _dirs, files in os.walk(cache_dir()):
        n += len(files)
    return n


def graph_key(name: str, graph: object) -> str:
    """The cache key of a graph: its name and its nodes (the same code compiles to the same key)."""
    nodes = [f"{n.op}:{n.target}" for n in getattr(graph, "nodes", [])]
    return "f" + hashlib.sha256(f"{name}:{nodes}".encode()).hexdigest()[:51]


def lookup(key: str, note: str = "") -> bool:
    """Is ``key`` in the cache?  A miss stores it, so the next run hits.  Returns hit or miss."""
    folder = os.path.join(cache_dir(), "fxgraph", key[1:3])
    path = os.path.join(folder, key)
    if os.path.exists(path):
        return True
    os.makedirs(folder, exist_ok=True)
    with open(path, "w") as fh:
        fh.write(f"# compiled by minitorch inductor: {note or key}\n")
    return False


def write_graph(name: str, graph: object) -> bool:
    """Store a "compiled" graph; True when it was in the cache already (a hit)."""
    return lookup(graph_key(name, graph), f"{name}, {len(getattr(graph, 'nodes', []))} nodes")
