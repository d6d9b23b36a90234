"""The training loop died, the process lives on: **loop death** (fate ``died``).

A job whose main thread raises (a ``FloatingPointError`` from a diverging loss) while threads it
started keep running never exits: Python waits for its non-daemon threads at shutdown, for ever.
Its pid is alive, so "alive" alone would read ``running`` for as long as anyone cares to look,
with the GPU memory held and no progress to come.  The log says otherwise, and this module reads it:

* an uncaught exception in the main thread: a traceback **not** headed ``Exception in thread …``
  (that is a worker's death, an error for the verdict but not the loop's end), whose outermost
  frame is the program's entry (``in <module>``, or runpy's ``_run_module_as_main``: the exception
  unwound the whole program), and which no log record at ERROR/WARNING introduces (a handled
  error logged with ``logging.exception`` prints a traceback too, and the loop goes on);
* the interpreter's own fatal lines (``Fatal Python error``, ``Segmentation fault``) and a CUDA
  device-side assert, which leave no loop to go on with whatever thread printed them;

and no progress line of the same writer after it.  It counts once the process has outlived it by
:data:`LOOP_CONFIRM_S` (a process that is merely exiting after its traceback is given that long
to go, and then its exit status tells the story).  The cause names the exception, when it was
seen, and the threads that hold the process, read from ``/proc/PID/task/*/comm`` of the job's
processes in one remote command (the main thread itself left out), and with ``[job] py_spy`` set,
the Python names ``py-spy dump`` gives for them.  With torchrun's
``[rank1]:``/``[default1]:`` line prefixes, the rank whose loop died is named, even while the
others wait in a collective.

Stopping the job stays the user's choice: the cause says how.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
import time
from dataclasses import dataclass
from typing import Any

from ..probes.signatures import Match
from ..remote.base import RemoteError
from .base import ActionContext
from .cause import Cause, fmt_secs
from .jobrecord import JobRecord
from .jobstate import JobReader, JobState, LogScan, error_dict, live_pids
from .stacks import parse_py_spy

__all__ = ["LoopDeath", "LOOP_CONFIRM_S", "find_loop_death", "note_loop_death", "ended_with", "threads_command", "parse_threads", "held_by",
           "loop_death_cause", "unconfirmed_s", "confirm_loop_death", "python_names"]

log = logging.getLogger(__name__)

#: how long the process must outlive its main thread's death before it counts as held (a large job's
#: teardown after an uncaught exception, CUDA and NCCL included, takes a second or two)
LOOP_CONFIRM_S = 2.0
#: the signatures whose line means the interpreter (or the CUDA context) is finished, any thread …
FATAL_KINDS = ("segfault", "cuda-assert")
#: … when the line is the interpreter's (or the CUDA runtime's) own, not a mention of it in another line
_FATAL_LINE = re.compile(r"^(?:Fatal Python error: |Segmentation fault\b)|device-side assert triggered"
                         r"|\bblock: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion ")
#: the outermost frame of a traceback that unwound the whole program
_ENTRY = re.compile(r'^\s+File "[^"]*", line \d+, in (?:<module>|_run_module_as_main|_run_code)\s*$')
_HEADER = "Traceback (most recent call last):"
#: torchrun's per-rank prefixes: ``[rank1]:`` (its default) and ``[default1]:`` (``--tee``/``--log-dir``)
_RANK = re.compile(r"^\[(?:rank|default)(\d+)\]:")
#: a Python log record at ERROR/WARNING: the level name as a field of its own, in capitals
#: (``ERROR:root:…``, ``… - ERROR - …``, ``[…][WARNING]``, ``| ERROR    |``); not torch's C++
#: ``[W1203 …] Warning: …`` nor a message that merely says "Error:"
_LOGGED = re.compile(r"(?:^|[\s\[|(-])(?:ERROR|WARNING|WARN|CRITICAL|FATAL|EXCEPTION)(?:[\s\]|:)-]|$)")
#: names listed in a cause before "+N more"
MAX_NAMES = 8

_SHELLS = ("sh", "bash", "dash", "ash", "zsh", "busybox")
_STOP_HINT = "stop it (S in the TUI, or cockpit stop) to free its GPU memory"


@dataclass(frozen=True)
class LoopDeath:
    """One main-thread death in the log: the error, its exception, its writer's prefix and rank."""

    match: Match
    #: the exception's type (``FloatingPointError``), or "" for a fatal line
    exc: str
    #: its message (or the fatal line's label)
    message: str
    prefix: str
    rank: str | None
    #: when a judge first saw it (this machine's clock)
    seen_at: float
    #: every rank whose loop died (distributed jobs), in order
    ranks: tuple[str, ...] = ()


def _prefix_of(m: Match) -> str:
    """The writer's prefix of a match: what comes before ``Traceback`` in its header, else the rank tag."""
    for line in m.traceback:
        at = line.find(_HEADER)
        if at >= 0:
            return line[:at]
    r = _RANK.match(m.line)
    return r.group(0) if r else ""


def _unwound(m: Match, prefix: str) -> bool:
    """The last traceback of the chain starts at the program's entry: nothing caught it."""
    heads = [i for i, line in enumerate(m.traceback) if line.startswith(prefix) and line[len(prefix):].rstrip() == _HEADER]
    if not heads:
        return False
    for line in m.traceback[heads[-1] + 1:]:
        if line.startswith(prefix) and line[len(prefix):].lstrip().startswith("File "):
            return bool(_ENTRY.match(line[len(prefix):]))
    return False


def _logged(scan: LogScan, m: Match, prefix: str) -> bool:
    """A log record at ERROR/WARNING right before the header: a handled error, logged with its traceback."""
    before = scan.tb_before.get(m.traceback_start or -1, ())
    for line in reversed(before):
        if prefix and not line.startswith(prefix):
            continue  # another rank's line
        body = line[len(prefix):].strip()
        if body:
            return bool(_LOGGED.search(body))
    return False


def _went_on(scan: LogScan, m: Match, prefix: str) -> bool:
    """Progress of the same writer after the error: the loop caught it and went on."""
    if scan.progress_no <= m.line_no:
        return False
    return not prefix or (scan.last_progress or "").startswith(prefix)


def _candidate(scan: LogScan, m: Match) -> tuple[str, str, str] | None:
    """(exception, message, prefix) when ``m`` is the main thread's death, else None."""
    if m.thread is not None:
        return None  # a worker thread's traceback: an error, not the loop's end
    if m.traceback:
        prefix = _prefix_of(m)
        if not _unwound(m, prefix) or _logged(scan, m, prefix):
            return None
        last = m.exceptions[-1] if m.exceptions else ""  # kept without its prefix
        exc, _, msg = last.partition(":")
        exc = exc.strip()
        if not exc or " " in exc:  # not an exception line after all
            exc, msg = "", m.label
        return exc, msg.strip(), prefix
    if m.kind in FATAL_KINDS:
        prefix = _prefix_of(m)
        body = m.line[len(prefix):] if m.line.startswith(prefix) else m.line
        return ("", m.label, prefix) if _FATAL_LINE.search(body.strip()) else None
    return None


def find_loop_death(scan: LogScan, now: float | None = None) -> LoopDeath | None:
    """The first main-thread death in the scanned log (see the module doc), or None.

    Pure but for one thing: the first call that sees a candidate stamps it (``scan.loop_seen``),
    so the time it reports is when cockpit first read it."""
    now = time.time() if now is None else now
    found: list[LoopDeath] = []
    for m in scan.errors():
        c = _candidate(scan, m)
        if c is None:
            continue
        exc, msg, prefix = c
        if _went_on(scan, m, prefix) or scan.restart_no > m.line_no:  # went on, or its agent restarted it
            continue
        key = m.chain_id if m.chain_id is not None else ("line", m.line_no)
        seen = scan.loop_seen.setdefault(key, now)
        r = _RANK.match(prefix)
        found.append(LoopDeath(m, exc, msg, prefix, r.group(1) if r else None, seen))
    if not found:
        return None
    ranks = tuple(dict.fromkeys(f.rank for f in found if f.rank is not None))
    first = found[0]
    return LoopDeath(first.match, first.exc, first.message, first.prefix, first.rank, first.seen_at, ranks)


def unconfirmed_s(ld: LoopDeath | None, now: float | None = None) -> float:
    """Seconds still to wait before a loop death counts (0: it counts, or there is none)."""
    if ld is None:
        return 0.0
    now = time.time() if now is None else now
    return max(0.0, ld.seen_at + LOOP_CONFIRM_S - now)


def job_pids(st: JobState) -> list[int]:
    """The job's live processes (not its supervisor, not a wrapping shell), the leader first."""
    lead = st.leader
    sup = st.supervisor.pid if st.supervisor is not None else None
    pids = [lead.pid] if lead is not None and not lead.state.startswith(("Z", "X")) else []
    for m in st.members:
        if m.pid != sup and m.pid not in pids and not m.state.startswith(("Z", "X")) and m.comm not in _SHELLS:
            pids.append(m.pid)
    return pids


def threads_command(pids: list[int]) -> str:
    """One command: the job's processes, ``pids`` and their descendants two levels down (ranks and
    workers forked by the leader live below what the job's state probe reads), as ``@p PID COMM``,
    and every thread of each but its main thread as ``PID TID COMM``."""
    start = " ".join(str(int(p)) for p in pids)
    return (
        f"l='{start}'; k=; for p in $l; do k=\"$k $(cat /proc/$p/task/*/children 2>/dev/null)\"; done; "
        "g=; for p in $k; do g=\"$g $(cat /proc/$p/task/*/children 2>/dev/null)\"; done; "
        "for p in $l $k $g; do [ -d /proc/$p ] || continue; echo \"@p $p $(cat /proc/$p/comm 2>/dev/null)\"; "
        "for t in /proc/$p/task/[0-9]*; do n=${t##*/}; [ \"$n\" = \"$p\" ] || echo \"$p $n $(cat $t/comm 2>/dev/null)\"; done; "
        "done 2>/dev/null"
    )


def _parse(out: str) -> dict[int, dict[int, str]]:
    """:func:`threads_command`'s output as pid → {tid: name} (wrapping shells left out)."""
    procs: dict[int, str] = {}
    got: dict[int, dict[int, str]] = {}
    for line in out.splitlines():
        if line.startswith("@p "):
            w = line[3:].split(" ", 1)
            if w[0].isdigit():
                procs.setdefault(int(w[0]), w[1].strip() if len(w) > 1 else "?")
            continue
        w = line.split(" ", 2)
        if len(w) >= 2 and w[0].isdigit() and w[1].isdigit():
            got.setdefault(int(w[0]), {})[int(w[1])] = w[2].strip() if len(w) > 2 and w[2].strip() else "?"
    return {pid: got.get(pid, {}) for pid, comm in procs.items() if comm not in _SHELLS}


def _lists(tids: dict[int, dict[int, str]]) -> dict[int, list[str]]:
    return {pid: [n for _, n in sorted(ts.items())] for pid, ts in tids.items()}


def parse_threads(out: str) -> dict[int, list[str]]:
    """:func:`threads_command`'s output: each process of the job (wrapping shells left out) with its
    other threads' names in tid order (an empty list: only its main thread)."""
    return _lists(_parse(out))


def python_names(tids: dict[int, dict[int, str]], pid: int, spy_text: str) -> None:
    """Put ``py-spy dump``'s Python thread names (``threading.Thread(name=…)``) over the kernel's
    ``comm`` for the threads it knows: before Python 3.14 an unnamed Python thread's comm is only
    the interpreter's name.  Threads py-spy does not list (native ones: NCCL, CUDA) keep theirs."""
    mine = tids.get(pid)
    if mine is None:
        return
    for t in parse_py_spy(pid, spy_text):
        if t.tid in mine and t.name:
            mine[t.tid] = t.name


def _names(names: list[str]) -> str:
    """``drafter-0, drafter-1`` / ``python3 ×3`` (unnamed Python threads share the process's comm)."""
    counts = dict.fromkeys(names, 0)
    for n in names:
        counts[n] += 1
    items = [n if c == 1 else f"{n} ×{c}" for n, c in counts.items()]
    more = len(items) - MAX_NAMES
    return ", ".join(items[:MAX_NAMES]) + (f", +{more} more" if more > 0 else "")


def held_by(threads: dict[int, list[str]]) -> str:
    """``held by 3 threads (drafter-0, …), …``: what keeps the process alive, as a phrase (each
    process's other threads, as :func:`parse_threads` gives them); with several processes (ranks,
    workers) each thread's pid is said."""
    processes = len(threads)
    live = {pid: ns for pid, ns in threads.items() if ns}
    n = sum(len(ns) for ns in live.values())
    if n == 0:
        return "with no other thread (its main thread has not finished shutting down)"
    # /proc cannot tell a daemon thread from another; that the process outlived its main thread says
    # that at least one of them is not a daemon (Python joins those at exit)
    if n == 1:
        pid, ns = next((p, ns) for p, ns in live.items())
        return f"held by 1 non-daemon thread ({ns[0]}" + (f" of pid {pid})" if processes > 1 else ")")
    if len(live) == 1 and processes <= 1:
        names = _names(next(iter(live.values())))
    else:
        names = "; ".join(f"pid {pid}: {_names(ns)}" for pid, ns in live.items())
    return f"held by {n} threads ({names}), at least one of them non-daemon"


def describe(ld: LoopDeath, held: str) -> str:
    """The fate's cause: what the loop raised and when, what holds the process, how to end it."""
    if len(ld.ranks) > 1:
        who = f"the training loops of ranks {', '.join(ld.ranks)} died; rank {ld.ranks[0]}'s"
    else:
        who = f"rank {ld.rank}'s" if ld.rank is not None else "the"
    at = time.strftime("%H:%M:%S", time.localtime(ld.seen_at))
    if ld.exc:
        what = f"raised {ld.exc} at {at}" + (f" ({ld.message[:160]})" if ld.message else "")
    else:
        what = f"hit a fatal error at {at}: {ld.message[:160]}"
    return f"{who} training loop {what}; the process is still alive, {held}: it will not exit by itself; {_STOP_HINT}"


async def _read_threads(ctx: ActionContext, pids: list[int]) -> dict[int, list[str]]:
    res = await ctx.run(threads_command(pids), timeout=10)
    tids = _parse(res.text)
    spy = ctx.cfg.job.py_spy  # configured: the Python names of the threads too (one dump per process that has any)
    for pid in [p for p, ts in tids.items() if ts] if spy else []:
        dump = await ctx.run(f"timeout 5 {shlex.quote(spy)} dump --nonblocking --pid {int(pid)} 2>/dev/null", timeout=10)
        python_names(tids, pid, dump.text)
    return _lists(tids)


async def loop_death_cause(ctx: ActionContext, job: JobRecord, st: JobState, scan: LogScan, ld: LoopDeath) -> Cause | None:
    """The :class:`Cause` of a confirmed loop death, with the threads that hold the job (one command).

    None when the threads say it is none: a traceback (not a fatal line) and not one other thread
    in any process of the job.  Nothing holds such a process but its main thread, so that thread
    runs on: it caught the exception (``traceback.print_exc()`` or a ``logger.exception`` whose
    format has no level, then a slow recovery; an ``os.execv`` of itself to resume) or it is in its
    exit; a hang there is the stall window's to judge, not a death "it will not exit by itself"."""
    pids = [] if job.scheduler else job_pids(st)  # a scheduler's processes live on its nodes, not here
    held = "held by threads that outlive the loop"
    threads: dict[int, list[str]] = {}
    try:
        if pids:
            threads = await _read_threads(ctx, pids)
            held = held_by(threads)
    except RemoteError as e:  # the names are evidence; the death is already certain
        log.info("could not read the job's threads: %s", e.message)
    if threads and ld.match.traceback and not any(threads.values()):
        return None
    after = max(0.0, ld.seen_at - job.launched_at) if job.launched_at else None
    when = (f"{fmt_secs(after)} after launch; " if after is not None else "") + (
        f"last progress: {scan.last_progress[:120]}" if scan.last_progress else "no progress line before it")
    data: dict[str, Any] = {
        "loop_death": {"exception": ld.exc, "message": ld.message, "rank": ld.rank, "ranks": list(ld.ranks), "seen_at": ld.seen_at},
        "threads": {str(pid): ns for pid, ns in threads.items()},
        "first_error": error_dict(ld.match), "final_error": scan.final_error(), "dead_threads": scan.dead_threads(),
        "last_progress": scan.last_progress, "after_s": after,
    }
    advice = (f"{_STOP_HINT[0].upper()}{_STOP_HINT[1:]}. Python waits for every non-daemon thread before it exits: "
              "make helper threads daemon=True or join them in a finally. " + ld.match.advice).strip()
    return Cause(ld.match.layer, describe(ld, held), advice, data, "died", after, when)


async def confirm_loop_death(ctx: ActionContext, job: JobRecord, reader: JobReader, st: JobState) -> tuple[JobState, Cause | None]:
    """With the job alive: its loop death once it counts (read again after :data:`LOOP_CONFIRM_S`
    when it was seen only now), and the job's state as last read (it may have exited meanwhile)."""
    ld = note_loop_death(reader, find_loop_death(reader.scan))
    if ld is None:
        return st, None
    wait = unconfirmed_s(ld)
    if wait > 0:
        await asyncio.sleep(wait)
        st = await reader.read()
        ld = find_loop_death(reader.scan)
        if not st.alive or ld is None or unconfirmed_s(ld) > 0:
            return st, None
    if ended_with(reader, ld, st):
        return st, None
    return st, await loop_death_cause(ctx, job, st, reader.scan, ld)


def _key(ld: LoopDeath) -> Any:
    m = ld.match
    return m.chain_id if m.chain_id is not None else ("line", m.line_no)


def note_loop_death(reader: JobReader, ld: LoopDeath | None) -> LoopDeath | None:
    """Keep the job's processes of the reading before ``ld`` was first read (:func:`ended_with`); returns ``ld``."""
    if ld is not None:
        reader.loop_anchor.setdefault(_key(ld), reader.prev_pids)
    return ld


def ended_with(reader: JobReader, ld: LoopDeath, st: JobState) -> bool:
    """A process of the job that lived just before the traceback was read is gone: it printed the
    traceback and exited (a worker its agent restarts, a subprocess of the trainer), so the traceback
    is no loop of a held process."""
    return bool(reader.loop_anchor.get(_key(ld), frozenset()) - live_pids(st))
