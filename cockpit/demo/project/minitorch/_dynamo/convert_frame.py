"""Turn a Python callable into a compiled one: FX trace, then inductor (torch/_dynamo/convert_frame.py)."""

from __future__ import annotations

from typing import Any, Callable

from .._inductor.compile_fx import compile_fx
from ..fx._symbolic_trace import symbolic_trace


def convert_frame(fn: Callable[..., Any], backend: str) -> Callable[..., Any]:
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    gm = symbolic_trace(fn)
    if backend == "eager":
        return gm
    return compile_fx(gm, name)
