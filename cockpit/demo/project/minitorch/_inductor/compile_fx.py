from __future__ import annotations

from typing import Any

from . import codecache


def compile_fx(gm: Any, name: str) -> tuple[Any, bool]:
    """"Lower" a traced graph: look it up in the cache (storing it on a miss); returns something to
    call, and whether the cache had it."""
    hit = codecache.write_graph(name, gm.graph)
    return gm, hit
