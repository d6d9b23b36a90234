"""The log as a judge reads it: :class:`LogScan`.

Progress lines (first and last), every error-severity signature match (minus ``[verify]
ignore_signatures``), the threads that died, a tail for evidence, the first non-finite value of a
required metric (:mod:`.nonfinite`) and the attempt's metrics (:mod:`cockpit.core.metrics`).

A :class:`~.jobstate.JobReader` hands it each read of the log.  A read can hold a long backlog
(tens of thousands of lines after a fate interval at 10,000 lines/s): :meth:`LogScan.feed_async`
judges it in slices of a few milliseconds and gives the event loop a turn between them, so a
front end's frames go on while the backlog is read.  The lines not judged yet wait in the scan
(in order): a read cancelled between two slices leaves them for the next feed, which judges them
first, so no line is ever skipped or judged twice.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..probes.logs import sanitize
from ..probes.nccl import NcclWatch
from ..probes.signatures import Classifier, Match
from ..probes.tb_parts import thread_names
from .logline import MAX_LINE, split_lines, unfinished
from .nonfinite import NonFiniteWatch, make_watch
from .progressclock import ProgressClock

if TYPE_CHECKING:
    from ..config import Config
from ..logclass import classifier_for

__all__ = ["LogScan", "make_scan", "error_dict", "SLICE_S"]

#: seconds of judging between two turns of the event loop (:meth:`LogScan.feed_async`)
SLICE_S = 0.005

def _capped(raw: bytes) -> bytes:
    if len(raw) <= MAX_LINE:
        return raw
    return raw[:MAX_LINE] + f" …[{len(raw) - MAX_LINE} more bytes cut]".encode()


def _rest_text(rest: bytes) -> str:
    """An unfinished rest of :func:`~.logline.split_lines` as the line it would be (capped)."""
    return _capped(unfinished(rest)).decode("utf-8", "replace")


#: what torchelastic's agent says when it restarts its workers after one failed
RESTART_WORDS = "will restart worker group"


@dataclass
class LogScan:
    """The log as a judge reads it: progress, errors (minus ignored ids), dead threads, a tail."""

    progress_re: re.Pattern[str] | None
    classifier: Classifier | None = None
    ignore: frozenset[str] = frozenset()
    partial: bytes = b""
    lines: int = 0
    progress_line: str | None = None
    progress_count: int = 0
    last_progress: str | None = None
    tail_lines: list[str] = field(default_factory=list)
    #: ``Exception in thread NAME:`` headers seen anywhere in a line (robust to mid-line interleaving)
    thread_headers: list[str] = field(default_factory=list)
    #: when progress lines arrived (stall detection)
    clock: ProgressClock = field(default_factory=ProgressClock)
    #: NCCL watchdog reports per rank (which rank fell behind in a distributed hang)
    nccl: NcclWatch = field(default_factory=NcclWatch)
    #: the attempt's metrics recorder (:class:`cockpit.core.metrics.Recorder`): every line, numbered from the log's start
    metrics: Any = None
    #: the line number of the last progress line (a loop that raised and then went on is not dead)
    progress_no: int = 0
    #: the line number of torchelastic's last "will restart worker group" (a crash before it was a
    #: worker's, restarted by its agent: not the job's loop death)
    restart_no: int = 0
    #: the lines before each ``Traceback`` header, by its line number: a traceback that a log record
    #: at ERROR/WARNING introduces was handled (``logging.exception``), not the loop's death (:mod:`.loopdeath`)
    tb_before: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: when a judge first saw each loop-death candidate (:mod:`.loopdeath`)
    loop_seen: dict[Any, float] = field(default_factory=dict)
    #: the first NaN/inf of a metric that must stay finite (:mod:`.nonfinite`)
    nonfinite: NonFiniteWatch | None = None
    #: the unfinished last line counted as progress already (:meth:`_peek`); the console file's
    #: unfinished line (:meth:`feed_console`); the log's own lines (the metrics number them)
    peeked: bool = False
    console_partial: bytes = b""
    log_lines: int = 0
    #: lines split off the log but not judged yet, oldest first (:meth:`feed_async`)
    queue: deque[bytes] = field(default_factory=deque)

    def feed(self, data: bytes) -> None:
        """The log's next bytes: every line a ``\\n`` or a ``\\r`` ends (:func:`~.logline.split_lines`),
        then the unfinished rest looked at for progress as it grows."""
        self._split(data)
        self._drain(None)
        self._done()

    async def feed_async(self, data: bytes, slice_s: float = SLICE_S) -> None:
        """:meth:`feed`, in slices of about ``slice_s`` seconds with a turn of the event loop between
        them (see the module doc); cancelled, the lines not judged yet wait for the next feed."""
        self._split(data)
        while not self._drain(slice_s):
            await asyncio.sleep(0)
        self._done()

    def _split(self, data: bytes) -> None:
        complete, self.partial = split_lines(self.partial, data)
        self.queue.extend(complete)
        if len(self.partial) > MAX_LINE:  # megabytes without a newline: judge what there is, keep nothing
            self.queue.append(unfinished(self.partial))
            self.partial = b""

    def _drain(self, budget: float | None) -> bool:
        """Judge the queued lines in order (the first one takes :attr:`peeked`); with a ``budget``,
        stop once about that many seconds have gone: False when lines are left."""
        q, line = self.queue, self._line
        end = None if budget is None else time.perf_counter() + budget
        while q:
            for _ in range(min(len(q), 64)):
                line(_capped(q.popleft()).decode("utf-8", "replace"), counted=self.peeked)
                self.peeked = False
            if end is not None and q and time.perf_counter() >= end:
                return False
        return True

    def _done(self) -> None:
        self._peek()
        if self.metrics is not None:
            self.metrics.batch_done()

    def feed_console(self, data: bytes) -> None:
        """The console file's next bytes (``capture_output = false``): judged like the log's, not metrics."""
        self._drain(None)  # the log's lines read before them come first
        complete, self.console_partial = split_lines(self.console_partial, data)
        for raw in complete:
            self._line(_capped(raw).decode("utf-8", "replace"), console=True)
        if len(self.console_partial) > MAX_LINE:
            self._line(_rest_text(self.console_partial), console=True)
            self.console_partial = b""

    def flush(self) -> None:
        pending = bool(self.queue)
        self._drain(None)
        if unfinished(self.partial):
            self._line(_rest_text(self.partial), counted=self.peeked)
            pending = True
        self.partial, self.peeked = b"", False
        if pending and self.metrics is not None:
            self.metrics.batch_done()
        if unfinished(self.console_partial):
            self._line(_rest_text(self.console_partial), console=True)
        self.console_partial = b""
        if self.classifier is not None:
            self.classifier.flush()

    def _peek(self) -> None:
        """The unfinished last line (a bar being redrawn) is progress as soon as it matches, counted once."""
        if self.peeked or self.progress_re is None or not unfinished(self.partial):
            return
        line = sanitize(_rest_text(self.partial))
        if m := self.progress_re.search(line):
            self.peeked = True
            self._progress(line, self.lines + 1, m.group(0))

    def _progress(self, line: str, no: int, marker: str = "") -> None:
        self.progress_count += 1
        self.last_progress = line
        self.clock.saw(line, marker)
        self.progress_no = no
        if self.progress_line is None:
            self.progress_line = line

    def _line(self, line: str, *, counted: bool = False, console: bool = False) -> None:
        if not console:
            self.log_lines += 1
            if self.metrics is not None:
                self.metrics.line(self.log_lines, line)
            if self.nonfinite is not None:
                self.nonfinite.line(self.log_lines, line)
        line = sanitize(line)  # escapes and control characters from the job never reach a terminal or the journal raw
        self.lines += 1
        self.tail_lines.append(line)
        if len(self.tail_lines) > 40:
            del self.tail_lines[:-40]
        if self.progress_re is not None and (m := self.progress_re.search(line)):
            if counted:  # seen while it was still being written: the same progress, now whole
                self.last_progress = line
                self.progress_no = self.lines
            else:
                self._progress(line, self.lines, m.group(0))
        if line.startswith("[rank"):
            self.nccl.saw(line)
        if RESTART_WORDS in line:
            self.restart_no = self.lines
        if "NCCL work" in line:
            self.nccl.feed(line)
        if "Traceback (most recent call last)" in line:
            self.tb_before[self.lines] = tuple(self.tail_lines[-9:-1])
            if len(self.tb_before) > 256:
                del self.tb_before[next(iter(self.tb_before))]
        if "Exception in thread " in line:
            for name in thread_names(line):
                if name not in self.thread_headers:
                    self.thread_headers.append(name)
        if self.classifier is not None:
            self.classifier.feed(line)

    def errors(self) -> list[Match]:
        """Every error-severity match, oldest first (the classifier already drops the ids in
        ``[verify] ignore_signatures``: :func:`make_scan` gives it the same set)."""
        if self.classifier is None:
            return []
        errs = list(self.classifier.errors)
        first = self.classifier.first_error  # kept even when the bounded history has moved past it
        if first is not None and _key(first) not in {_key(e) for e in errs}:
            errs.insert(0, first)
        return sorted(errs, key=lambda m: m.traceback_start or m.line_no)

    def dead_threads(self) -> list[str]:
        """Threads whose traceback is in the log (``Exception in thread NAME``), in order."""
        names: list[str] = []
        errs = self.errors()
        for m in errs:
            if m.thread and m.thread not in names:
                names.append(m.thread)
        if errs and "python-traceback" not in self.ignore:
            names += [n for n in self.thread_headers if n not in names]
        return names

    def error(self) -> dict[str, Any] | None:
        """The first error (the root cause is usually the first), as plain data."""
        errs = self.errors()
        return error_dict(errs[0]) if errs else None

    def final_error(self) -> dict[str, Any] | None:
        errs = self.errors()
        return error_dict(errs[-1]) if errs else None

    def tail(self, n: int = 15) -> str:
        return "\n".join(self.tail_lines[-n:])


def _key(m: Match) -> object:
    """One error, however many versions of it the classifier made: its chain, or its line."""
    return m.chain_id if m.chain_id is not None else ("line", m.line_no)


def error_dict(err: Match | None) -> dict[str, Any] | None:
    """A classifier match as the flat dict stored in verdicts and the journal."""
    if err is None:
        return None
    return {
        "layer": err.layer.value,
        "kind": err.kind,
        "label": err.label,
        "summary": err.label if not err.thread else f"{err.label} (thread {err.thread})",
        "advice": err.advice,
        "line": err.line,
        "line_no": err.line_no,
        "thread": err.thread,
        "traceback": list(err.traceback),
    }


def make_scan(cfg: Config) -> LogScan:
    """A :class:`LogScan` with the built-in and the user's signatures and the config's ignore list."""
    progress_re = re.compile(cfg.job.progress_pattern) if cfg.job.progress_pattern else None
    classifier = classifier_for(cfg)
    return LogScan(progress_re, classifier, ignore=classifier.ignore, nonfinite=make_watch(cfg))
