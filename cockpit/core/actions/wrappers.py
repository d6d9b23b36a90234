"""What a wrapper program in front of the trainer says about its end: ``timeout``.

``[job] command = "timeout 6h python train.py"``: the job's exit status is ``timeout``'s.  When the
limit runs out it stops the trainer (SIGTERM unless ``-s``) and exits **124** (with ``-s KILL``, or
once ``-k DURATION`` had to follow with SIGKILL, it dies of SIGKILL itself: 137).  Read as the
trainer's own status, 124 is an exit code nobody's code chose, and 137 "a SIGKILL: the OOM
killer?": :func:`time_limit_end` names the time limit instead, when the command starts with
``timeout`` (after other wrappers: ``env``, ``nice``, ``stdbuf``…) and, for a SIGKILL, when the job
lived as long as the limit.

GNU ``time``'s report after the trainer is skipped by :func:`cockpit.core.outcome.last_words`.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

from .jobrecord import describe_exit, signal_name

__all__ = ["TimeLimit", "time_limit", "time_limit_end"]

#: programs that run the rest of their command line (the trainer) after their own options
_WRAPPERS = frozenset({"env", "nice", "ionice", "stdbuf", "taskset", "chrt", "numactl", "setsid", "nohup", "time", "command",
                       "exec", "caffeinate", "unbuffer", "prlimit", "systemd-inhibit"})
#: a word between a wrapper and its program that is no program: an option's value (``nice -n 5``,
#: ``taskset -c 0-7``, ``taskset 0xff``, ``stdbuf -o L``, ``chrt -f 10``)
_ARGLIKE = re.compile(r"^(?:[0-9][0-9a-fA-Fx,:.\-]*|[A-Za-z])$")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
#: a SIGKILL this close to the limit (launch and exec come before timeout starts counting) is its
_SLACK_S = 1.0


@dataclass(frozen=True)
class TimeLimit:
    """``timeout``'s settings as the job's command gives them."""

    text: str  # as written: ``timeout -k 30 6h``
    seconds: float
    signal: str = "TERM"
    kill_after: float | None = None
    preserve_status: bool = False


def _seconds(word: str) -> float | None:
    m = _DURATION.match(word)
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def _parse_timeout(words: list[str]) -> TimeLimit | None:
    """``timeout``'s options and duration (``words[0]`` is ``timeout``)."""
    sig, kill, preserve, i = "TERM", None, False, 1
    while i < len(words):
        w = words[i]
        val: str | None = None
        if w in ("-s", "--signal", "-k", "--kill-after"):
            val = words[i + 1] if i + 1 < len(words) else None
            i += 1
        elif w.startswith(("--signal=", "--kill-after=")):
            val = w.split("=", 1)[1]
        elif w.startswith(("-s", "-k")) and len(w) > 2:
            val = w[2:]
        elif w == "--preserve-status":
            preserve = True
        elif w == "--":
            i += 1
            break
        elif not w.startswith("-"):
            break
        if val is not None and w.lstrip("-").startswith("s"):
            sig = val.upper().removeprefix("SIG")
            sig = signal_name(int(sig)).removeprefix("SIG") if sig.isdigit() else sig
        elif val is not None:
            kill = _seconds(val)
        i += 1
    secs = _seconds(words[i]) if i < len(words) else None
    if secs is None or secs <= 0:  # 0 disables the limit
        return None
    return TimeLimit(shlex.join(words[: i + 1]), secs, sig, kill, preserve)


def time_limit(command: str) -> TimeLimit | None:
    """The ``timeout`` the job's command runs its program under, or None (another program first)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for i, w in enumerate(words):
        name = os.path.basename(w)
        if name == "timeout":
            return _parse_timeout(words[i:])
        if not (name in _WRAPPERS or w.startswith("-") or _ASSIGN.match(w) or (i and _ARGLIKE.match(w))):
            return None  # the trainer itself (or a shell): what it runs is its own business
    return None


def time_limit_end(command: str, code: int | None, after_s: float | None) -> tuple[str, str] | None:
    """``(how, advice)`` when the job's exit status ``code`` is its ``timeout``'s limit running out."""
    lim = time_limit(command) if code is not None else None
    if lim is None:
        return None
    limit = f"`{lim.text}`"
    advice = (f"the job ran into the time limit {limit} in [job] command sets: raise it if the run needs longer, "
              "or read its last progress line for why it ran that long")
    if code == 124 and not lim.preserve_status:
        return f"exited with code 124: timed out: {limit} stopped it with SIG{lim.signal} at its limit", advice
    if code is None or code <= 128 or after_s is None:
        return None
    sig = signal_name(code - 128).removeprefix("SIG")
    if sig == "KILL" and lim.signal != "KILL" and lim.kill_after is not None:  # -k: TERM first, KILL after
        if after_s >= lim.seconds + lim.kill_after - _SLACK_S:
            return (f"killed by signal 9 (SIGKILL): timed out: {limit} sent SIG{lim.signal} at its limit, "
                    f"then SIGKILL {lim.kill_after:g}s later as the job was still there"), advice
        return None
    # -s KILL (timeout dies of it too), or --preserve-status: the trainer's own death by the limit's signal
    if sig == lim.signal and (sig == "KILL" or lim.preserve_status) and after_s >= lim.seconds - _SLACK_S:
        return f"{describe_exit(code)}: timed out: {limit} sent it at its limit", advice
    return None
