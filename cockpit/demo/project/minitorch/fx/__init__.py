from ._symbolic_trace import Graph, GraphModule, Tracer, is_fx_symbolic_tracing, is_fx_tracing, symbolic_trace

__all__ = ["Graph", "GraphModule", "Tracer", "is_fx_symbolic_tracing", "is_fx_tracing", "symbolic_trace"]
