from __future__ import annotations

from typing import Any

from . import codecache


def compile_fx(gm: Any, name: str) -> Any:
    """"Lower" a traced graph: write it to the cache and return something to call."""
    codecache.write_graph(name, gm.graph)
    return gm
