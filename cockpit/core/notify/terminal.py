"""Tell the user when a verdict lands: a terminal bell, and inside tmux a status-line message.

:func:`notify_verdict` takes an :class:`~cockpit.core.engine.AttemptResult`, its ``to_dict()``,
or a journal :class:`~cockpit.core.journal.AttemptRecord`, and

* writes ``"\\a"`` to ``stream`` (default: stderr when it is a terminal).  Inside tmux the bell
  flags the window in the status line when you are looking at another window (``monitor-bell``,
  on by default);
* inside tmux (``$TMUX`` set): ``tmux display-message -d 5000 -t $TMUX_PANE`` with one line,
  ``cockpit: attempt 4 FAILED (app): RuntimeError: …``, and sets the window option
  ``@cockpit_verdict`` to the same line (put ``#{@cockpit_verdict}`` in ``status-right`` to keep
  it on screen).  The message is escaped for tmux formats (``#`` → ``##``): a log line
  containing ``#(…)`` is shown, never run.

It never raises: a missing or failing tmux is reported in the returned dict (``errors``).  In
read-only mode it does nothing.  Blocking (tmux calls have a timeout of ``timeout`` s each):
from async code use :func:`notify_verdict_async`.  :func:`terminal_notify` does the same for a
line already written.  The front ends do not call these themselves: the
:class:`~cockpit.core.notify.notifier.Notifier` they attach to the engine does (in the TUI with
``App.bell()`` as its bell: Textual owns the terminal).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from ..text import sanitize

__all__ = ["notify_verdict", "notify_verdict_async", "terminal_notify", "verdict_line", "error_text", "one_line", "TMUX_OPTION"]

log = logging.getLogger(__name__)

TMUX_OPTION = "@cockpit_verdict"


def _as_dict(result: Any) -> dict[str, Any]:
    if isinstance(result, Mapping):
        return dict(result)
    to_dict = getattr(result, "to_dict", None)
    if callable(to_dict):
        try:
            d = to_dict()
            if isinstance(d, Mapping):
                return dict(d)
        except Exception:  # broad: notifying never raises (see the module doc); the attributes below still work
            log.warning("%s.to_dict() failed; notifying from its attributes", type(result).__name__, exc_info=True)
    return {k: getattr(result, k, None) for k in ("attempt", "outcome", "layer", "summary", "first_error")}


def _val(v: Any) -> str:
    v = getattr(v, "value", v)
    return "" if v is None else str(v)


def one_line(s: str, limit: int) -> str:
    s = " ".join(sanitize(s, newlines=True).split())
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def error_text(d: Mapping[str, Any]) -> str:
    """The first thing a person should read: the error line, else the failing stage."""
    fe = d.get("first_error")
    if isinstance(fe, Mapping):
        for key in ("line", "summary", "label", "message"):
            v = fe.get(key)
            if isinstance(v, str) and v.strip():
                return v.strip().splitlines()[0]
    elif isinstance(fe, str) and fe.strip():
        return fe.strip().splitlines()[0]
    if _val(d.get("outcome")) in ("passed", "running", "pending"):
        return ""
    summary = d.get("summary")
    if isinstance(summary, str) and summary.strip():
        s = summary.strip()
        return s.split(": ", 1)[1] if s.startswith(("attempt: ", "attempt:")) and ": " in s else s
    return ""


def verdict_line(result: Any, *, prefix: str = "cockpit", limit: int = 200) -> str:
    """``"cockpit: attempt 4 FAILED (app): RuntimeError: …"`` (one line, no control characters)."""
    d = _as_dict(result)
    outcome = _val(d.get("outcome")) or "unknown"
    layer = _val(d.get("layer"))
    head = f"attempt {d.get('attempt', '?')} {outcome.upper()}"
    if layer and outcome != "passed":
        head += f" ({layer})"
    err = error_text(d)
    line = f"{head}: {err}" if err else head
    if prefix:
        line = f"{prefix}: {line}"
    return one_line(line, limit)


def _tmux_escape(s: str) -> str:
    return s.replace("#", "##")


def notify_verdict(
    result: Any,
    *,
    bell: bool = True,
    tmux: bool = True,
    stream: TextIO | None = None,
    read_only: bool = False,
    env: Mapping[str, str] | None = None,
    display_ms: int = 5000,
    timeout: float = 2.0,
    prefix: str = "cockpit",
) -> dict[str, Any]:
    """Ring and tell tmux; returns what was done: ``message``, ``bell``, ``tmux`` (list of the
    tmux commands that succeeded), ``errors``, ``skipped``."""
    errors: list[str] = []
    try:
        message = verdict_line(result, prefix=prefix)
    except Exception as e:  # noqa: BLE001 - a malformed result still rings; the error goes to done["errors"]
        message = f"{prefix}: a verdict landed"
        errors.append(f"formatting the verdict: {e}")
    if read_only:
        return {"message": message, "bell": False, "tmux": [], "errors": errors, "skipped": "read-only"}
    done = terminal_notify(message, bell=bell, tmux=tmux, stream=stream, env=env, display_ms=display_ms, timeout=timeout)
    done["errors"] = errors + done["errors"]
    return done


def terminal_notify(
    message: str,
    *,
    bell: bool = True,
    tmux: bool = True,
    stream: TextIO | None = None,
    env: Mapping[str, str] | None = None,
    display_ms: int = 5000,
    timeout: float = 2.0,
) -> dict[str, Any]:
    """The bell and tmux for one line already written (``message``); never raises.  Same result
    dict as :func:`notify_verdict`."""
    done: dict[str, Any] = {"message": one_line(message, 200), "bell": False, "tmux": [], "errors": [], "skipped": None}
    if bell:
        out = stream
        if out is None:
            out = sys.stderr if _isatty(sys.stderr) else None
        if out is not None:
            try:
                out.write("\a")
                out.flush()
                done["bell"] = True
            except Exception as e:  # noqa: BLE001 - any stream may be passed, and notifying never raises; reported in done["errors"]
                done["errors"].append(f"bell: {e}")
    env_ = dict(os.environ if env is None else env)
    if tmux and env_.get("TMUX"):
        exe = shutil.which("tmux", path=env_.get("PATH"))
        if exe is None:
            done["errors"].append("tmux: not found on PATH")
        else:
            pane = env_.get("TMUX_PANE")
            target = ["-t", pane] if pane else []
            msg = done["message"]
            if msg.startswith("-"):
                msg = " " + msg
            attempts = [[exe, "display-message", "-d", str(int(display_ms)), *target, _tmux_escape(msg)],
                        [exe, "display-message", *target, _tmux_escape(msg)]]  # tmux < 3.2 has no -d
            for argv in attempts:
                err = _run(argv, env_, timeout)
                if err is None:
                    done["tmux"].append("display-message")
                    break
            else:
                done["errors"].append(f"tmux display-message: {err}")
            err = _run([exe, "set-option", "-w", *target, TMUX_OPTION, done["message"]], env_, timeout)
            if err is None:
                done["tmux"].append("set-option")
            else:
                done["errors"].append(f"tmux set-option: {err}")
    return done


async def notify_verdict_async(result: Any, **kw: Any) -> dict[str, Any]:
    """:func:`notify_verdict` in a thread, so tmux calls never block the event loop."""
    return await asyncio.to_thread(notify_verdict, result, **kw)


def _isatty(s: Any) -> bool:
    try:
        return bool(s is not None and s.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, a closed stream, or a dead descriptor
        return False


def _run(argv: list[str], env: Mapping[str, str], timeout: float) -> str | None:
    """None on success, else why not."""
    try:
        r = subprocess.run(argv, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:g}s"
    except OSError as e:
        return str(e)
    if r.returncode != 0:
        return (r.stderr or r.stdout).decode("utf-8", "replace").strip() or f"exit code {r.returncode}"
    return None
