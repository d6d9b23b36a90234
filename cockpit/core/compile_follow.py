"""torch.compile's trace followed while an attempt's job runs (docs/compile.md).

:class:`TraceFollower` keeps the target-side filter (:func:`cockpit.core.compile.shell_command`)
running on its own channel (a :class:`~cockpit.core.remote.follow.StreamFollower`: restarted with
backoff when it dies, ended when its channel closes) and feeds a :class:`LiveCompile`, which is a
:class:`~cockpit.core.compile.CompileTracker` that also knows which compiles are under way.  A
restarted filter reads the directory from its start again, so the tracker starts afresh with it.

:class:`CompileWatch` is the engine's part: one follower per attempt whose job writes a trace,
a :class:`~cockpit.core.events.CompileUpdated` when the summary changes (coalesced), the ``compile``
journal event when the verdict is recorded and when the summary changes after it (at most every
:data:`JOURNAL_EVERY` s, and once more at the end), and one final whole read (``--once``) when the
job has ended.  Verify asks :func:`live_for` for the follower of its job.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .compile import CAUGHT_UP, CompileSummary, CompileTracker, once_if_traced, shell_command
from .events import CompileUpdated, Event
from .observe_streams import NEED
from .remote.base import RemoteError, Transport
from .remote.follow import StreamFollower, wrap

if TYPE_CHECKING:  # pragma: no cover
    from .actions.jobrecord import JobRecord
    from .journal import Journal

__all__ = ["LiveCompile", "TraceFollower", "CompileWatch", "Compiling", "live_for", "follower_for", "shell_pids", "COMPILE_EVENT", "JOURNAL_EVERY"]

log = logging.getLogger(__name__)

COMPILE_EVENT = "compile"
#: seconds between two ``compile`` journal events of one attempt after its verdict
JOURNAL_EVERY = 5.0
#: seconds a burst of trace lines is gathered before subscribers hear of it
PUBLISH_AFTER = 0.3
MARK = "@cockpit-trace"

_LIVE: weakref.WeakValueDictionary[tuple[int, str], TraceFollower] = weakref.WeakValueDictionary()


@dataclass(frozen=True)
class Compiling:
    """A compile under way: a ``dynamo_start`` whose ``compilation_metrics`` has not come yet."""

    function: str
    where: str
    seconds: float


class LiveCompile(CompileTracker):
    """A :class:`~cockpit.core.compile.CompileTracker` that also keeps the compiles under way."""

    def __init__(self) -> None:
        super().__init__()
        #: (source, compile id) → (function, file:line, glog start, glog time last seen, monotonic seen)
        self.starts: dict[tuple[str, str], tuple[str, str, float, float, float]] = {}
        self.last_t = 0.0

    def feed(self, data: bytes | str, source: str = "") -> int:
        events = self.parser.feed(data, source)
        now = time.monotonic()
        for e in events:
            self.last_t = max(self.last_t, e.t)
            if e.kind == "dynamo_start" and e.compile_id is not None:
                stack = e.data.get("stack")
                top = stack[-1] if isinstance(stack, list) and stack and isinstance(stack[-1], dict) else {}
                where = f"{top.get('filename', '')}:{top.get('line', '')}" if top.get("filename") else ""
                self.starts.setdefault((e.source, e.compile_id), (str(top.get("name") or "?"), where, e.t, self.last_t, now))
        self.builder.add_all(events)
        return len(events)

    def compiling(self) -> list[Compiling]:
        """The compiles under way, the longest first (seconds: since its ``dynamo_start``, as far as seen)."""
        now, out = time.monotonic(), []
        for key, (fn, where, start, t_seen, seen) in self.starts.items():
            span = self.builder.spans.get(key)
            if span is not None and span.end is None:
                out.append(Compiling(fn, where, max(0.0, t_seen - start) + (now - seen)))
        return sorted(out, key=lambda c: -c.seconds)


class TraceFollower(StreamFollower):
    """The filter on one trace directory, streaming into :attr:`live`; ``changed`` is called
    (coalesced) when lines arrived.  ``bytes_in`` counts what crossed the link."""

    name = "compile-trace"
    tool = "the trace filter's"

    def __init__(self, transport: Transport, directory: str, changed: Callable[[], None] | None = None, *, interval: float = 0.5) -> None:
        tool = shell_command(directory, interval=interval) + " 2>/dev/null"
        # the header names the stream shell's pid (where it runs): cockpit's own process, not the job's
        super().__init__(transport.stream_lines, wrap(MARK, f"echo \"{MARK} $$\"; ", tool), mark=MARK, header_lines=1)
        self.shell_pid: int | None = None
        self.transport, self.directory, self.changed = transport, directory, changed
        self.live = LiveCompile()
        self.bytes_in = 0
        #: of ``bytes_in``, what the whole reads (``--once``) brought
        self.bytes_whole = 0
        self.started_at = time.monotonic()
        #: the filter has read all the directory held when it (re)started: :attr:`live` lacks
        #: nothing the job wrote before then (until this, "no compile seen" proves nothing)
        self.caught_up = False
        self._flush: asyncio.TimerHandle | None = None
        _LIVE[(id(transport), directory)] = self

    def on_up(self) -> None:
        self.live = LiveCompile()  # a (re)started filter reads the directory from its start
        self.caught_up = False
        words = self.header[0].split()
        self.shell_pid = int(words[1]) if len(words) > 1 and words[1].isdigit() else None

    def on_line(self, line: str) -> bool:
        self.bytes_in += len(line) + 1
        if line == CAUGHT_UP:
            self.caught_up = True
            return False
        self.live.feed(line + "\n")
        if self.changed is not None and self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(PUBLISH_AFTER, self._fire)
        return True

    def _fire(self) -> None:
        self._flush = None
        if self.changed is not None:
            self.changed()

    async def read_whole(self, timeout: float = 60.0) -> LiveCompile:
        """Everything in the directory now, in one ``--once`` run (the job has ended); no filter
        started when the directory holds no trace with a byte (most jobs: no torch.compile)."""
        res = await self.transport.run(f"{{ {once_if_traced(self.directory)}; }} 2>/dev/null", timeout=timeout)
        self.bytes_in += len(res.stdout)
        self.bytes_whole += len(res.stdout)
        whole = LiveCompile()
        whole.feed(res.stdout)
        whole.close()
        return whole

    async def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        await super().close()


def live_for(transport: Transport, directory: str) -> LiveCompile | None:
    """The live tracker of ``directory`` in ``transport``'s target, when one is followed."""
    fol = follower_for(transport, directory)
    return fol.live if fol is not None else None


def shell_pids(transport: Transport) -> list[int]:
    """The pids (the target's view) of the trace filters' stream shells in ``transport``'s target:
    cockpit's own processes, for the process pane."""
    return [f.shell_pid for (t, _), f in list(_LIVE.items()) if t == id(transport) and f.shell_pid and f.ready]


def follower_for(transport: Transport, directory: str) -> TraceFollower | None:
    """The follower of ``directory`` in ``transport``'s target, when there is one."""
    return _LIVE.get((id(transport), directory)) if directory else None


def _identity(job: JobRecord) -> tuple[object, ...]:
    """What tells one launched job from another (the same record read again is the same job)."""
    return (job.launch_id,) if job.launch_id else (job.pid, job.start_time, job.sched_id)


class CompileWatch:
    """The engine's followers, one per attempt; publishes :class:`CompileUpdated` and journals."""

    def __init__(self, transport: Transport, publish: Callable[[Event], None], journal: Journal, *, read_only: bool = False) -> None:
        self.transport, self.publish, self.journal, self.read_only = transport, publish, journal, read_only
        self.followers: dict[int, TraceFollower] = {}
        self.summaries: dict[int, CompileSummary] = {}
        self._journalled: dict[int, tuple[dict[str, Any], float]] = {}
        self._verdict: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._finishing: set[int] = set()
        #: the job each follower follows (:func:`_identity`)
        self._jobs: dict[int, tuple[object, ...]] = {}

    def follow(self, job: JobRecord, attempt: int | None) -> TraceFollower | None:
        """Follow ``job``'s trace (when it writes one) as ``attempt``'s; needs a running loop."""
        n = attempt if attempt is not None else job.attempt
        if not job.trace_dir or (n in self.followers and self._jobs.get(n) == _identity(job)):
            return self.followers.get(n)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None  # at start-up outside a loop: the journal holds what was read before
        stale = self.followers.pop(n, None)
        if stale is not None:
            # another job under the same number (a relaunch's job carries the next attempt's number
            # and directory): what its follower read is not this job's, so it ends unread
            self.summaries.pop(n, None)
            self._finishing.discard(n)
            self._spawn(stale.close(), f"compile-stale-{n}")
        for old in [a for a in self.followers if a != n]:
            self.job_ended(old)  # an older attempt's job is over by now: its last whole read
        self._jobs[n] = _identity(job)
        fol = self.followers[n] = TraceFollower(self.transport, job.trace_dir, lambda: self._changed(n))
        slots = getattr(self.transport, "slots", None)
        if slots is None or slots.limit >= NEED["compile"]:
            fol.start()  # else no channel to spare: the trace is read once, whole, when the job ends
        return fol

    def summary(self, attempt: int) -> CompileSummary | None:
        fol = self.followers.get(attempt)
        return fol.live.summary() if fol is not None else self.summaries.get(attempt)

    def _changed(self, attempt: int, final: bool = False, summary: CompileSummary | None = None) -> None:
        summary = summary if summary is not None else self.summary(attempt)
        if summary is None:
            return
        old = self.summaries.get(attempt)
        if old is not None and old.to_dict() == summary.to_dict() and not final:
            return
        self.summaries[attempt] = summary
        self.publish(CompileUpdated(attempt, summary, final))
        if attempt in self._verdict:
            self._journal(attempt, force=final)

    def verdict_recorded(self, attempt: int) -> None:
        """The attempt's verdict is in the journal: its compile summary goes beside it, then on change."""
        self._verdict.add(attempt)
        self._journal(attempt, force=True)

    def _journal(self, attempt: int, force: bool = False) -> None:
        summary = self.summaries.get(attempt) or self.summary(attempt)
        if self.read_only or summary is None or (summary.events == 0 and attempt not in self._journalled):
            return
        data, at = self._journalled.get(attempt, ({}, 0.0))
        new = summary.to_dict()
        if new == data or (not force and time.monotonic() - at < JOURNAL_EVERY):
            if new != data and not force:
                self._later(attempt, JOURNAL_EVERY - (time.monotonic() - at))
            return
        self.journal.record(attempt, COMPILE_EVENT, summary=new)
        self._journalled[attempt] = (new, time.monotonic())

    def _later(self, attempt: int, delay: float) -> None:
        async def again() -> None:
            await asyncio.sleep(max(0.0, delay))
            self._journal(attempt, force=True)
        if not any(t.get_name() == f"compile-journal-{attempt}" for t in self._tasks):
            self._spawn(again(), f"compile-journal-{attempt}")

    def job_ended(self, attempt: int) -> None:
        """The job is over: one whole read of its trace, then the follower goes."""
        if attempt in self.followers and attempt not in self._finishing:
            self._finishing.add(attempt)
            self._spawn(self.finish(attempt), f"compile-final-{attempt}")

    async def finish(self, attempt: int) -> CompileSummary | None:
        """Stop following ``attempt``'s trace after one last whole read; returns its summary."""
        fol = self.followers.get(attempt)
        if fol is None:
            return self.summaries.get(attempt)
        await fol.close()
        try:
            fol.live = await fol.read_whole()
        except (RemoteError, OSError, asyncio.TimeoutError) as e:
            log.info("the final read of %s failed: %s", fol.directory, e)
        if self.followers.get(attempt) is fol:  # else another job took the number meanwhile: not its summary
            self._changed(attempt, final=True, summary=fol.live.summary())
            self.followers.pop(attempt)
            self._finishing.discard(attempt)
        return self.summaries.get(attempt)

    async def _stop(self, attempt: int) -> None:
        fol = self.followers.pop(attempt, None)
        if fol is not None:
            await fol.close()

    def _spawn(self, coro: Any, name: str = "compile-watch") -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for attempt in list(self.followers):
            await self._stop(attempt)
