"""The wrapper every compiled function goes through (torch/_dynamo/eval_frame.py, reduced).

``compile(fn)`` returns ``_fn``.  Its first check is torch's: a dynamo-optimized function must not
run while FX is tracing.  FX's flag is global to the process, so "while FX is tracing" includes
"while *another thread* is tracing", and that is the race of the demo.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from ..fx._symbolic_trace import is_fx_symbolic_tracing
from . import config
from .convert_frame import convert_frame


class _TorchDynamoContext:
    def __init__(self, backend: str = "inductor") -> None:
        self.backend = backend

    def __call__(self, fn: Callable[..., Any]) -> "OptimizedFunction":
        return OptimizedFunction(fn, self.backend)


class OptimizedFunction:
    """A function or module wrapped by ``compile``: compiled on its first call."""

    def __init__(self, fn: Callable[..., Any], backend: str) -> None:
        self._orig_mod = fn
        self.backend = backend
        self._compiled: Callable[..., Any] | None = None
        self._compile_lock = threading.Lock()  # one compile per function, like dynamo's cache entry
        self._fn = self._make_fn()

    def _make_fn(self) -> Callable[..., Any]:
        fn = self._orig_mod

        def _fn(*args: Any, **kwargs: Any) -> Any:
            if is_fx_symbolic_tracing():
                if config.error_on_nested_fx_trace:
                    raise RuntimeError(
                        "Detected that you are using FX to symbolically trace "
                        "a dynamo-optimized function. This is not supported at the moment."
                    )
                return fn(*args, **kwargs)
            compiled = self._compiled
            if compiled is None:
                compiled = self._compile()
            return compiled(*args, **kwargs)

        if hasattr(fn, "__name__"):
            _fn = functools.wraps(fn)(_fn)
        return _fn

    def _compile(self) -> Callable[..., Any]:
        with self._compile_lock:
            if self._compiled is None:
                self._compiled = convert_frame(self._orig_mod, self.backend)
            return self._compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)


def optimize(backend: str = "inductor") -> _TorchDynamoContext:
    return _TorchDynamoContext(backend)


def compile(model: Callable[..., Any], *, backend: str = "inductor") -> OptimizedFunction:
    """``torch.compile``: wrap ``model`` so its first call traces and compiles it."""
    return optimize(backend)(model)
