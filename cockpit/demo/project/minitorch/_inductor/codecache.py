"""The inductor cache: compiled graphs land in ``$TORCHINDUCTOR_CACHE_DIR`` (as in torch)."""

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


def write_graph(name: str, graph: object) -> str:
    """Store a "compiled" graph; returns its path."""
    nodes = [f"{n.op}:{n.target}" for n in getattr(graph, "nodes", [])]
    key = hashlib.sha256(f"{name}:{nodes}".encode()).hexdigest()
    folder = os.path.join(cache_dir(), "fxgraph", key[:2])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "f" + key[:40])
    with open(path, "w") as fh:
        fh.write(f"# compiled by minitorch inductor: {name}\n# {len(getattr(graph, 'nodes', []))} nodes\n")
    return path
