"""minitorch: the few parts of ``torch.compile`` that the cockpit demo's training job needs.

Real code, real behaviour, tiny scale.  Like torch 2.x:

* ``minitorch.compile(fn)`` returns a dynamo-optimized function; its wrapper (``_fn`` in
  ``_dynamo/eval_frame.py``) compiles on the first call;
* compiling traces the function with FX (``fx/_symbolic_trace.py``), which marks "FX is tracing"
  in a module-level flag (``_is_fx_tracing_flag``) for the duration of the trace;
* every call of a dynamo-optimized function first asks ``is_fx_symbolic_tracing()`` and refuses
  to run under FX tracing;
* with ``TORCH_TRACE=DIR`` set, every compile is written to torch's structured trace in ``DIR``
  (``_logging.py``, ``_dynamo/compile_log.py``), as torch writes it.

The flag is process-wide, not per thread: while one thread compiles, every other thread that calls
a compiled function sees "FX is tracing" and gets the seed story's ``RuntimeError``.
"""

__version__ = "2.5.1+demo"

from . import fx  # noqa: E402
from ._dynamo.eval_frame import compile  # noqa: E402
from ._dynamo.recorded import record_compiles  # noqa: E402

__all__ = ["compile", "fx", "record_compiles", "__version__"]
