"""What dynamo writes to the structured trace for each compile (torch/_dynamo/convert_frame.py).

One :class:`CompileLog` per compile, in the compiling thread::

    recompile_reasons        (a recompile: the guards of the frame's earlier compiles that failed)
    dynamo_start             (the user's stack, the compiled frame last: a worker thread's begins
                              in threading's _bootstrap)
    dynamo_graph_break_reason, fx_graph_cache_miss / fx_graph_cache_hit
    compilation_metrics      (co_name, co_filename, co_firstlineno, the compile's seconds, …)

A main-thread compile runs alone (:data:`gate`), as every compile does in torch 2.5 and later,
whose trace names the process, not the thread: only compiles entered from worker threads overlap
(the demo's race: the drafters compile at once), and those all read as worker threads there.
Frames are numbered per code (``frame_id``) in the order they first compile; each compile of a frame
has the next ``frame_compile_id``.  Nothing is written without ``TORCH_TRACE`` (see ``_logging``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable

from .. import __version__
from .._logging import enabled, intern, trace_structured

MINITORCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the dynamo settings a compile reports (the ones cockpit reads: the recompile limit)
DYNAMO_CONFIG = json.dumps({"accumulated_recompile_limit": 256, "assume_static_by_default": True, "automatic_dynamic_shapes": True,
                            "capture_scalar_outputs": False, "recompile_limit": 8, "suppress_errors": False})
ITEM_BREAK = """Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.
  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.

  Developer debug context: call_method TensorVariable() item () {}

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html"""

Frame = tuple[str, str, int]  # co_name, co_filename, co_firstlineno

_lock = threading.Lock()
_frame_ids: dict[Frame, int] = {}
_guards: dict[int, list[Any]] = {}  # per frame: what each earlier compile was specialised on


class Gate:
    """Compiles on worker threads may overlap each other; one on the main thread waits for them and
    runs alone.  A compile starts in a later millisecond than the last one ended (the trace's clock)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.workers = 0
        self.main = False
        self.last_end = 0.0

    def enter(self) -> bool:
        alone = threading.current_thread() is threading.main_thread()
        with self.cond:
            if alone:
                self.cond.wait_for(lambda: not self.main and self.workers == 0)
                self.main = True
            else:
                self.cond.wait_for(lambda: not self.main)
                self.workers += 1
            if int(time.time() * 1000) <= int(self.last_end * 1000):
                time.sleep(0.0015)
        return alone

    def leave(self, alone: bool) -> None:
        with self.cond:
            if alone:
                self.main = False
            else:
                self.workers -= 1
            self.last_end = time.time()
            self.cond.notify_all()


gate = Gate()


def frame_of(code: Any) -> Frame:
    return code.co_name, code.co_filename, code.co_firstlineno


def user_stack(skip: int = 1) -> list[traceback.FrameSummary]:
    """The calling thread's stack, minitorch's own frames left out (as torch leaves out its own)."""
    return [f for f in traceback.extract_stack(sys._getframe(skip)) if not os.path.abspath(f.filename).startswith(MINITORCH + os.sep)]


class CompileLog:
    """The trace of one compile of ``frame`` specialised on ``guard``; ``why(old)`` says why an earlier
    compile's guard (specialised on ``old``) failed for this call.  Use it as a context manager
    around the compile; set :attr:`nodes` and :attr:`cache_hit`, call :meth:`graph_break`."""

    def __init__(self, frame: Frame, guard: Any = None, why: Callable[[Any], str] | None = None,
                 stack: list[traceback.FrameSummary] | None = None) -> None:
        self.frame, self.guard, self.why = frame, guard, why
        self.stack = stack if stack is not None else user_stack(2)
        self.nodes = 0
        self.cache_hit: bool | None = None
        self.cache_key = ""
        self.breaks: list[str] = []
        self.recompile_reason: str | None = None
        self.id = (0, 0)
        self.t0 = 0.0
        self.alone = False

    def __enter__(self) -> CompileLog:
        self.alone = gate.enter()
        try:
            return self._start()
        except BaseException:
            gate.leave(self.alone)
            raise

    def _start(self) -> CompileLog:
        with _lock:
            fid = _frame_ids.setdefault(self.frame, len(_frame_ids))
            earlier = _guards.setdefault(fid, [])
            self.id = (fid, len(earlier))
            earlier.append(self.guard)
            earlier = earlier[:-1]
        self.t0 = time.time()
        if not enabled():
            return self
        if earlier:
            why = self.why or (lambda old: f"guard on {old!r} failed")
            failed = [f"{self.id[0]}/{i}: {why(old)}" for i, old in reversed(list(enumerate(earlier)))]
            self.recompile_reason = failed[0]
            payload = failed[0] if len(failed) == 1 else json.dumps(failed, indent=0)
            trace_structured("artifact", {}, name="recompile_reasons", payload=payload, compile_id=self.id)
        frames = [{"line": f.lineno, "name": f.name, "filename": intern(f.filename), "loc": f.line or ""} for f in self.stack]
        frames.append({"line": self.frame[2], "name": self.frame[0], "filename": intern(self.frame[1])})
        trace_structured("dynamo_start", {"stack": frames}, compile_id=self.id)
        return self

    def graph_break(self, filename: str, line: int, source: str, reason: str = ITEM_BREAK) -> None:
        """Dynamo met code it cannot put in the graph at ``filename:line``: the graph breaks there."""
        self.breaks.append(reason)
        if not enabled():
            return
        user = "".join(f'  File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line}\n' for f in self.stack)
        payload = (f"Graph break in user code at {filename}:{line}\n"
                   "Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):\n\n"
                   f"{reason}\n\nUser code traceback:\n{user}  File \"{filename}\", line {line}, in {self.frame[0]}\n    {source.strip()}\n")
        trace_structured("artifact", {}, name="dynamo_graph_break_reason", payload=payload, compile_id=self.id, encoding="string")

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        try:
            if enabled() and kind is None:
                self._metrics()
        finally:
            gate.leave(self.alone)

    def _metrics(self) -> None:
        if self.cache_hit is not None:
            name = "fx_graph_cache_hit" if self.cache_hit else "fx_graph_cache_miss"
            detail = {"cache_status_detailed": "hit" if self.cache_hit else "full_miss", "key": self.cache_key,
                      "components": [], "compile_id": f"{self.id[0]}/{self.id[1]}"}
            trace_structured("artifact", {}, name=name, payload=json.dumps(detail), compile_id=self.id)
        seconds = time.time() - self.t0
        co_name, co_filename, co_firstlineno = self.frame
        trace_structured("compilation_metrics", {
            "compile_id": f"{self.id[0]}/{self.id[1]}", "frame_key": str(self.id[0] + 1), "co_name": co_name, "co_filename": co_filename,
            "co_firstlineno": co_firstlineno, "cache_size": self.id[1], "accumulated_cache_size": self.id[1],
            "guard_count": 8 + self.nodes, "shape_env_guard_count": 0, "graph_op_count": max(0, self.nodes - 2),
            "graph_node_count": self.nodes, "graph_input_count": 1, "start_time": self.t0,
            "entire_frame_compile_time_s": round(seconds, 6), "backend_compile_time_s": round(seconds * 0.6, 6),
            "inductor_compile_time_s": round(seconds * 0.5, 6), "code_gen_time_s": round(seconds * 0.1, 6),
            "fail_type": None, "fail_reason": None, "fail_user_frame_filename": None, "fail_user_frame_lineno": None,
            "non_compliant_ops": [], "compliant_custom_ops": [], "restart_reasons": self.breaks, "dynamo_time_before_restart_s": 0.0,
            "stack_trace": [f"Line: {f.lineno}, Name: {f.name}, Filename: {f.filename}" for f in self.stack]
            + [f"Line: {co_firstlineno}, Name: {co_name}, Filename: {co_filename}"],
            "exception_stack_trace": None, "has_guarded_code": True, "dynamo_config": DYNAMO_CONFIG, "is_forward": True,
            "start_time_us": int(self.t0 * 1e6), "duration_us": int(seconds * 1e6), "recompile_reason": self.recompile_reason,
            "num_graph_breaks": None, "inductor_fx_local_cache_hit_count": int(self.cache_hit is True),
            "inductor_fx_local_cache_miss_count": int(self.cache_hit is False), "log_format_version": 3,
            "pytorch_version": __version__, "python_version": sys.version,
        }, compile_id=self.id)
