"""The target model's compiles, recorded: ``record_compiles(fn)`` runs ``fn`` eagerly and writes to
the structured trace what ``torch.compile(fn)`` would write for its calls.

The demo's target model runs on the main thread while the drafters compile; a real compiled call
there would trip over the drafters' FX flag as well (see ``eval_frame``), which is not the story the
demo tells.  So the model runs eagerly and its compiles are only written, with dynamo's rules:

* the first call compiles, specialised on the sizes of its list arguments (its "tensors");
* a call with another size recompiles once (the reason names the guard that failed:
  ``tensor 'batch' size mismatch at index 0. expected 8, actual 16``); that compile is dynamic in
  the size (``automatic_dynamic_shapes``), so later sizes do not recompile;
* a ``.item()`` in the function breaks the graph there: the break is written with dynamo's reason,
  and the rest of the function compiles as a frame of its own,
  ``torch_dynamo_resume_in_<function>_at_<line>``.

Each compile looks its graph up in the inductor cache (``$TORCHINDUCTOR_CACHE_DIR``): a miss after
the cache was cleared, a hit on the next run.
"""

from __future__ import annotations

import inspect
import re
import time
from typing import Any, Callable

from .._inductor import codecache
from .compile_log import CompileLog, frame_of, user_stack

#: seconds one compile takes (a real one takes seconds to minutes; the demo keeps its steps moving)
COMPILE_S = 0.15
ITEM_CALL = re.compile(r"[\w)\]]\.item\(\)")


def _item_call(fn: Any) -> tuple[int, str] | None:
    """The line (and its text) of the first ``.item()`` call in ``fn``'s source, if any."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    for i, text in enumerate(lines):
        if ITEM_CALL.search(text.split("#", 1)[0]):
            return start + i, text
    return None


class RecordedFunction:
    """``fn``, run eagerly, its compiles written to the trace (see the module doc)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.frame = frame_of(getattr(fn, "__func__", fn).__code__)
        self.names = list(inspect.signature(fn).parameters)
        self.sizes: list[tuple[str, int]] | None = None  # what the static compile was specialised on
        self.dynamic = False
        self.breaks_at = _item_call(fn)

    def __call__(self, *args: Any) -> Any:
        sizes = [(name, len(a)) for name, a in zip(self.names, args) if isinstance(a, (list, tuple))]
        if self.sizes is None:
            self.sizes = sizes
            self._compile(sizes, None)
        elif sizes != self.sizes and not self.dynamic:
            name, old, new = next((n, a, b) for (n, a), (_, b) in zip(self.sizes, sizes) if a != b)
            self.dynamic = True
            self._compile(sizes, lambda _old: f"tensor '{name}' size mismatch at index 0. expected {old}, actual {new}")
        return self.fn(*args)

    def _compile(self, sizes: list[tuple[str, int]], why: Callable[[Any], str] | None) -> None:
        stack = user_stack(3)
        shape = "dynamic" if self.dynamic else repr(sizes)
        with CompileLog(self.frame, shape, why, stack) as log:
            time.sleep(COMPILE_S)
            log.nodes = 4 + len(sizes)
            if self.breaks_at is not None:
                line, text = self.breaks_at
                log.graph_break(self.frame[1], line, text)
            log.cache_key = codecache.graph_key(f"{self.frame[0]}:{shape}", None)
            log.cache_hit = codecache.lookup(log.cache_key, f"{self.frame[0]} {shape}")
        if self.breaks_at is not None and len(log.breaks) == 1 and log.id[1] == 0:
            # the code after the break runs next, and dynamo compiles it as a frame of its own
            line, _text = self.breaks_at
            resume = (f"torch_dynamo_resume_in_{self.frame[0]}_at_{line}", self.frame[1], line)
            with CompileLog(resume, shape, None, stack) as rlog:
                time.sleep(COMPILE_S / 2)
                rlog.nodes = 3
                rlog.cache_key = codecache.graph_key(f"{resume[0]}:{shape}", None)
                rlog.cache_hit = codecache.lookup(rlog.cache_key, resume[0])


def record_compiles(fn: Callable[..., Any]) -> RecordedFunction:
    """``fn`` run eagerly, its compiles written to ``$TORCH_TRACE`` as ``torch.compile(fn)``'s would be."""
    return RecordedFunction(fn)
