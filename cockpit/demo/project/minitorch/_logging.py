"""torch's structured trace (``TORCH_TRACE=DIR``), written as torch writes it (torch/_logging).

With ``TORCH_TRACE`` set, the process writes ``DIR/dedicated_log_torch_trace_XXXXXXXX.log``: one
glog line per event, ``V1203 16:40:00.123000 1234 torch/_dynamo/utils.py:2022] {json envelope}``,
the number after the time being the process id (torch 2.5 on), some events followed by their
payload, one tab-indented line per payload line.  The envelope's first key names the event; file
names in stacks are interned in a ``{"str": [name, n]}`` table.  Each event is written whole and
flushed at once, so whoever follows the file sees the compiles as they happen.

Without ``TORCH_TRACE`` nothing is written (as with torch).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from typing import Any

from . import __version__

#: where torch logs each kind of event from (the glog "file:line" of the fixtures, torch 2.14.1)
WHERE = {
    "str": "torch/_logging/structured.py:28",
    "torch_version": "torch/_logging/_internal.py:1377",
    "dynamo_start": "torch/_dynamo/convert_frame.py:304",
    "recompile_reasons": "torch/_dynamo/guards.py:5625",
    "dynamo_graph_break_reason": "torch/_dynamo/symbolic_convert.py:5342",
    "fx_graph_cache_miss": "torch/_inductor/compile_fx.py:1272",
    "fx_graph_cache_hit": "torch/_functorch/_aot_autograd/aot_autograd_result.py:217",
    "compilation_metrics": "torch/_dynamo/utils.py:2022",
}

_lock = threading.RLock()
_file: Any = None
_strings: dict[str, int] = {}
_failed = False  # the trace could not be written (a full disk, a removed directory): training goes on


def enabled() -> bool:
    return bool(os.environ.get("TORCH_TRACE")) and not _failed


def _clock() -> str:
    now = time.time()
    lt = time.localtime(now)
    ms = int(now % 1 * 1000)  # torch's glog prefix has millisecond precision, written as microseconds
    return f"{lt.tm_mon:02d}{lt.tm_mday:02d} {lt.tm_hour:02d}:{lt.tm_min:02d}:{lt.tm_sec:02d}.{ms * 1000:06d}"


def _open() -> Any:
    global _file
    if _file is None:
        directory = os.environ["TORCH_TRACE"]
        os.makedirs(directory, exist_ok=True)
        fd, _path = tempfile.mkstemp(prefix="dedicated_log_torch_trace_", suffix=".log", dir=directory)
        _file = os.fdopen(fd, "w", encoding="utf-8")
        version = {"pytorch_version": __version__, "git_version": "", "cuda_version": None, "hip_version": None}
        _emit("torch_version", {"artifact": {"name": "torch_version", "encoding": "json"}}, json.dumps(version))
    return _file


def _emit(where: str, envelope: dict[str, Any], payload: str | None = None) -> None:
    if payload is not None:
        envelope["has_payload"] = hashlib.md5(payload.encode()).hexdigest()
    text = f"V{_clock()} {os.getpid()} {WHERE.get(where, where)}] {json.dumps(envelope)}\n"
    if payload is not None:
        text += "".join(f"\t{line}\n" for line in payload.split("\n"))
    _file.write(text)
    _file.flush()


def _write(fn: Any, *args: Any) -> None:
    global _failed
    try:
        _open()
        fn(*args)
    except OSError as e:
        _failed = True
        print(f"[minitorch] cannot write the structured trace to {os.environ.get('TORCH_TRACE')}: {e}; tracing stops", file=sys.stderr)


def intern(filename: str) -> int:
    """The number of ``filename`` in the string table (its ``str`` event written the first time)."""
    with _lock:
        if filename not in _strings:
            _strings[filename] = len(_strings)
            if enabled():
                _write(_emit, "str", {"str": [filename, _strings[filename]]})
        return _strings[filename]


def trace_structured(kind: str, data: dict[str, Any], *, name: str = "", payload: str | None = None,
                     compile_id: tuple[int, int] | None = None, encoding: str = "json") -> None:
    """One event: ``kind`` (``dynamo_start``, ``compilation_metrics``, ``artifact``), its data, the
    compile it belongs to (frame id, compile id) and its payload.  An artifact is named by ``name``."""
    if not enabled():
        return
    envelope: dict[str, Any] = {kind: {"name": name, "encoding": encoding} if kind == "artifact" else data}
    if compile_id is not None:
        envelope.update(frame_id=compile_id[0], frame_compile_id=compile_id[1], attempt=0)
    with _lock:
        _write(_emit, name if kind == "artifact" else kind, envelope, payload)
