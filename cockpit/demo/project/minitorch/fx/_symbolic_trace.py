"""FX symbolic tracing, reduced to what matters for the race.

As in torch, "FX is tracing" is a *module-level* flag that :meth:`Tracer.trace` sets on entry and
restores on exit.  It is not per thread: a trace in one thread is visible to all of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

#: True while any thread traces.  torch.fx._symbolic_trace has the same global.
_is_fx_tracing_flag = False

#: seconds to trace one layer (a real trace of a large block takes seconds)
TRACE_S_PER_LAYER = 0.15


def is_fx_tracing() -> bool:
    return _is_fx_tracing_flag


def is_fx_symbolic_tracing() -> bool:
    """Is FX tracing right now?  (Reads the global flag: any thread's trace counts.)"""
    return _is_fx_tracing_flag


@dataclass
class Node:
    op: str
    target: str
    args: tuple[Any, ...] = ()


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.nodes)


class GraphModule:
    """A traced module: the original callable plus the graph recorded for it."""

    def __init__(self, root: Any, graph: Graph) -> None:
        self.root = root
        self.graph = graph

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.root(*args, **kwargs)


class Tracer:
    def trace(self, root: Any) -> Graph:
        global _is_fx_tracing_flag
        old_is_fx_tracing_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        try:
            graph = Graph([Node("placeholder", "x")])
            for i, layer in enumerate(getattr(root, "layers", [root])):
                graph.nodes.append(self.create_node(f"layers.{i}", layer))
            graph.nodes.append(Node("output", "output"))
            return graph
        finally:
            _is_fx_tracing_flag = old_is_fx_tracing_flag

    def create_node(self, name: str, layer: Any) -> Node:
        time.sleep(TRACE_S_PER_LAYER)  # shape propagation, guards, …
        return Node("call_module", name, (layer,))


def symbolic_trace(root: Callable[..., Any]) -> GraphModule:
    return GraphModule(root, Tracer().trace(root))
