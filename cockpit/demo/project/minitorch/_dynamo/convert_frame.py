"""Turn a Python callable into a compiled one: FX trace, then inductor (torch/_dynamo/convert_frame.py).

Each compile is written to torch's structured trace when ``TORCH_TRACE`` is set (``compile_log``).
"""

from __future__ import annotations

from typing import Any, Callable

from .._inductor import codecache
from .._inductor.compile_fx import compile_fx
from ..fx._symbolic_trace import symbolic_trace
from .compile_log import CompileLog, frame_of


def code_of(fn: Any) -> Any:
    """The code dynamo compiles for ``fn``: a function's own, a module's ``forward``/``__call__``."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        method = getattr(type(fn), "forward", None) or type(fn).__call__
        code = method.__code__
    return code


def convert_frame(fn: Callable[..., Any], backend: str) -> Callable[..., Any]:
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    layers = getattr(fn, "layers", None)
    # a block is specialised on its number of layers: another block of the same class recompiles
    guard = len(layers) if isinstance(layers, list) else None
    with CompileLog(frame_of(code_of(fn)), guard, lambda old: f"len(L['self'].layers) == {old}") as log:
        gm = symbolic_trace(fn)
        log.nodes = len(gm.graph)
        if backend == "eager":
            return gm
        compiled, log.cache_hit = compile_fx(gm, name)
        log.cache_key = codecache.graph_key(name, gm.graph)
    return compiled
