"""The job as it is now: one probe that reads the job's processes, its exit file and its new log bytes.

Verify (before the verdict) and the fate follower (after it) both judge the job from a
:class:`JobState`, taken with *one* command through the persistent session:

* the supervisor's pid (from this launch's pid file), the ``/proc/PID/stat`` lines of the
  supervisor and of its descendants (two levels, from ``/proc/PID/task/*/children``; when the
  supervisor is gone, every process of the job's process group, so a job whose supervisor was
  killed alone is still found);
* this launch's exit file, ``CODE SUPERVISOR_PID`` (a status written by another launch's
  supervisor is recognised and ignored), and when it was written;
* the log's size and the bytes appended since ``offset``.

**The job is not its supervisor.**  The supervisor is a ``/bin/sh`` that waits for the command;
:attr:`JobState.leader` is the job's own main process (the supervisor's child, or that child's
only child when the child is itself a shell), and "alive" is judged on the leader: a python in
``Z``/``Zl`` under a live supervisor is not alive, and the thread count is the leader's.

:class:`LogScan` is the log as a judge reads it: progress lines (first and last), every
error-severity signature match (minus ``[verify] ignore_signatures``), the threads that died, and a
tail for evidence.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..probes.logs import sanitize
from ..probes.nccl import NcclWatch
from ..probes.signatures import Classifier, Match
from ..procstat import ProcStat, read_stat
from .backlog import date_backlog, read_console
from .base import ActionContext
from .jobrecord import JobRecord
from .logline import MAX_LINE, split_lines, tz_seconds
from .nonfinite import NonFiniteWatch, make_watch
from .stall import ProgressClock
from .survivors import follow_survivors

if TYPE_CHECKING:
    from ..config import Config
from ..logclass import classifier_for

__all__ = ["JobState", "JobReader", "reader_for", "LogScan", "state_command", "parse_state", "make_scan", "error_dict", "READ_MAX"]

READ_MAX = 1 << 20


def _capped(raw: bytes) -> bytes:
    if len(raw) <= MAX_LINE:
        return raw
    return raw[:MAX_LINE] + f" …[{len(raw) - MAX_LINE} more bytes cut]".encode()
_THREAD_HEADER = re.compile(r"Exception in thread ([^\s:]+(?: \([^)]*\))?):")
_SHELLS = ("sh", "bash", "dash", "ash", "zsh", "busybox")


def state_command(job: JobRecord, offset: int, read_max: int = READ_MAX) -> str:
    """The shell text of one probe (see the module doc); its output is parsed by :func:`parse_state`.

    A negative ``offset`` reads only the log's last ``-offset`` bytes.
    """
    q = shlex.quote
    pg = int(job.pgid or job.pid or 0)
    return (
        f"p=$(cat {q(job.pid_file)} 2>/dev/null); echo \"pid=$p\"; "
        f"echo \"exit=$(cat {q(job.exit_file)} 2>/dev/null)\"; "
        f"echo \"exit_mtime=$(stat -c %Y {q(job.exit_file)} 2>/dev/null)\"; "
        f"if [ -e {q(job.log_path)} ]; then echo \"size=$(wc -c < {q(job.log_path)})\"; echo \"log_mtime=$(stat -c %Y {q(job.log_path)})\"; "
        "else echo size=-1; fi; "
        "echo \"now=$(date +%s)\"; echo \"tz=$(date +%z)\"; echo \"init=$(cat /proc/1/stat 2>/dev/null)\"; echo @@stat; "
        "if [ -n \"$p\" ] && [ -d /proc/$p ]; then "
        "k=$(cat /proc/$p/task/*/children 2>/dev/null); g=; "
        "for c in $k; do g=\"$g $(cat /proc/$c/task/*/children 2>/dev/null)\"; done; "
        "for c in $p $k $g; do cat /proc/$c/stat 2>/dev/null; echo; done; "
        f"else for f in /proc/[0-9]*/stat; do read -r l 2>/dev/null < \"$f\" && case \"$l\" in *\") \"?\" \"*\" {pg} \"*) echo \"$l\";; esac; done; fi; "
        + (f"echo @@log; tail -c +{offset + 1} {q(job.log_path)} 2>/dev/null | head -c {int(read_max)}" if offset >= 0 else
           f"echo @@log; tail -c {-offset} {q(job.log_path)} 2>/dev/null")
    )


@dataclass
class JobState:
    """One reading of the job (see the module doc)."""

    pid_text: str = ""
    supervisor: ProcStat | None = None
    members: list[ProcStat] = field(default_factory=list)
    exit_code: int | None = None
    #: the exit file held the status of another launch's supervisor (ignored, but worth saying)
    exit_foreign: str | None = None
    exit_at: float | None = None
    log_size: int = -1
    #: when the log was last written, by the target's clock (seconds since the epoch)
    log_mtime: float | None = None
    remote_now: float | None = None
    #: the target's zone (``date +%z``) in seconds east of UTC: a log line's naive time is placed by it
    tz: int | None = None
    #: the target's PID 1 (its start time tells whether the container rebooted since the launch)
    init: ProcStat | None = None
    #: the recorded job's start time (``/proc/PID/stat`` field 22), to compare with PID 1's
    job_start_time: int | None = None
    data: bytes = b""
    parsed: bool = False
    #: the command's exit status when processes it started outlive it (:mod:`.survivors`), and what to say
    launcher_exit: int | None = None
    launcher_note: str = ""

    @property
    def leader(self) -> ProcStat | None:
        """The job's own main process: the supervisor's child (through one wrapping shell)."""
        if self.supervisor is None:
            live = [m for m in self.members if m.pid != _int(self.pid_text)]
            return live[0] if live else None
        kids = [m for m in self.members if m.ppid == self.supervisor.pid]
        if not kids:
            return None
        lead = kids[0]
        grand = [m for m in self.members if m.ppid == lead.pid]
        if lead.comm in _SHELLS and len(grand) == 1:
            return grand[0]
        return lead

    @property
    def rebooted_since(self) -> bool:
        """PID 1 of the target started after the job did: the container was restarted under it."""
        return self.init is not None and self.job_start_time is not None and self.init.start_time > self.job_start_time

    def exit_ago(self) -> float | None:
        """Seconds since the exit status was written, by the target's own clock (no skew)."""
        if self.exit_at is None or self.remote_now is None:
            return None
        return max(0.0, self.remote_now - self.exit_at)

    @property
    def spawned(self) -> bool:
        return bool(self.pid_text)

    @property
    def exited(self) -> bool:
        """The supervisor wrote this launch's exit status, or nothing of the job is left."""
        return self.exit_code is not None or (self.spawned and self.supervisor is None and self.leader is None)

    @property
    def alive(self) -> bool:
        lead = self.leader
        return self.exit_code is None and lead is not None and not lead.state.startswith(("Z", "X"))

    def describe(self) -> str:
        lead = self.leader
        if lead is None:
            return "no job process"
        text = f"{lead.comm} pid {lead.pid} {lead.state}, {lead.threads} threads"
        return f"{self.launcher_note}: {text}" if self.launcher_note else text

    # -- what a scheduler's state (cockpit.core.slurm) says differently; a plain job has none of it
    @property
    def queued(self) -> bool:
        """Waiting in a scheduler's queue: never started, so never failed."""
        return False

    def identity(self, job: JobRecord) -> str:
        return f"pid {self.pid_text} (group {job.pgid})"

    def scheduler_cause(self, job: JobRecord, scan: LogScan) -> Any:
        """A scheduler's own explanation of the end (a :class:`~.cause.Cause`), or None: judge as any job."""
        return None

    def scheduler_evidence(self) -> dict[str, Any]:
        return {}


def _int(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def parse_state(out: bytes, job: JobRecord) -> JobState:
    """Parse :func:`state_command`'s output; a reused pid (other start time) is not the job."""
    st = JobState()
    head, sep, rest = out.partition(b"\n@@stat\n")
    if not sep:
        return st
    stats, sep2, data = rest.partition(b"@@log\n")
    if not sep2:
        return st
    st.parsed, st.data = True, data
    for line in head.decode("utf-8", "replace").splitlines():
        k, _, v = line.partition("=")
        v = v.strip()
        if k == "pid":
            st.pid_text = v if v.isdigit() else ""
        elif k == "exit" and v:
            _exit_field(st, v, job)
        elif k == "exit_mtime" and v.isdigit():
            st.exit_at = float(v)
        elif k == "size" and v.lstrip("-").isdigit():
            st.log_size = int(v)
        elif k == "log_mtime" and v.isdigit():
            st.log_mtime = float(v)
        elif k == "now" and v.isdigit():
            st.remote_now = float(v)
        elif k == "tz" and v:
            st.tz = tz_seconds(v)
        elif k == "init" and v:
            st.init = read_stat(v)
    st.job_start_time = job.start_time
    sup_pid = _int(st.pid_text)
    seen: set[int] = set()
    for line in stats.decode("utf-8", "replace").splitlines():
        ps = read_stat(line) if line.strip() else None
        if ps is None or ps.pid in seen:
            continue
        seen.add(ps.pid)
        if ps.pid == sup_pid:
            if job.start_time is not None and job.pid == sup_pid and ps.start_time != job.start_time:
                continue  # the pid was reused: not our supervisor
            st.supervisor = ps
        st.members.append(ps)
    if st.supervisor is None:
        # without the supervisor only the job's own process group counts (a reused pid's children do not)
        # (its session too: a process that made its own group in it, :mod:`.survivors`)
        st.members = [m for m in st.members if job.pgid is not None and job.pgid in (m.pgid, m.sid) and m.pid != sup_pid]
    return st


def _exit_field(st: JobState, v: str, job: JobRecord) -> None:
    words = v.split()
    if not words or not words[0].lstrip("-").isdigit():
        return
    if len(words) > 1 and words[1].isdigit() and job.pid is not None and int(words[1]) != job.pid:
        st.exit_foreign = v
        return
    st.exit_code = int(words[0])


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

    def feed(self, data: bytes) -> None:
        """The log's next bytes: every line a ``\\n`` or a ``\\r`` ends (:func:`~.logline.split_lines`),
        then the unfinished rest looked at for progress as it grows."""
        complete, self.partial = split_lines(self.partial, data)
        for raw in complete:
            self._line(_capped(raw).decode("utf-8", "replace"), counted=self.peeked)
            self.peeked = False
        if len(self.partial) > MAX_LINE:  # megabytes without a newline: judge what there is, keep nothing
            self._line(_capped(self.partial).decode("utf-8", "replace"), counted=self.peeked)
            self.partial, self.peeked = b"", False
        self._peek()
        if self.metrics is not None:
            self.metrics.batch_done()

    def feed_console(self, data: bytes) -> None:
        """The console file's next bytes (``capture_output = false``): judged like the log's, not metrics."""
        complete, self.console_partial = split_lines(self.console_partial, data)
        for raw in complete:
            self._line(_capped(raw).decode("utf-8", "replace"), console=True)
        if len(self.console_partial) > MAX_LINE:
            self._line(_capped(self.console_partial).decode("utf-8", "replace"), console=True)
            self.console_partial = b""

    def flush(self) -> None:
        if self.partial:
            self._line(_capped(self.partial).decode("utf-8", "replace"), counted=self.peeked)
            self.partial, self.peeked = b"", False
            if self.metrics is not None:
                self.metrics.batch_done()
        if self.console_partial:
            self._line(_capped(self.console_partial).decode("utf-8", "replace"), console=True)
            self.console_partial = b""
        if self.classifier is not None:
            self.classifier.flush()

    def _peek(self) -> None:
        """The unfinished last line (a bar being redrawn) is progress as soon as it matches, counted once."""
        if self.peeked or not self.partial or self.progress_re is None:
            return
        line = sanitize(_capped(self.partial).decode("utf-8", "replace"))
        if self.progress_re.search(line):
            self.peeked = True
            self._progress(line, self.lines + 1)

    def _progress(self, line: str, no: int) -> None:
        self.progress_count += 1
        self.last_progress = line
        self.clock.saw(line)
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
        if self.progress_re is not None and self.progress_re.search(line):
            if counted:  # seen while it was still being written: the same progress, now whole
                self.last_progress = line
                self.progress_no = self.lines
            else:
                self._progress(line, self.lines)
        if "NCCL work" in line:
            self.nccl.feed(line)
        if "Traceback (most recent call last)" in line:
            self.tb_before[self.lines] = tuple(self.tail_lines[-9:-1])
            if len(self.tb_before) > 256:
                del self.tb_before[next(iter(self.tb_before))]
        if "Exception in thread " in line:
            for name in _THREAD_HEADER.findall(line):
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


def reader_for(ctx: ActionContext, job: JobRecord, scan: LogScan | None = None, **kw: Any) -> JobReader:
    """The reader for ``job``: the class the target's runtime reads its jobs with
    (:attr:`~cockpit.core.runtimes.base.Runtime.reader_class`: Slurm's reads the scheduler)."""
    cls: type[JobReader] = ctx.transport.runtime.reader_class
    return cls(ctx, job, scan, **kw)


class JobReader:
    """Reads one job again and again: keeps the log offset and the :class:`LogScan` between reads.

    :meth:`read` catches up with the whole log (in chunks of ``READ_MAX``, up to ``max_bytes`` per
    call), so a judge always sees every line written so far, never just the first megabyte.
    """

    def __init__(self, ctx: ActionContext, job: JobRecord, scan: LogScan | None = None, *, max_bytes: int = 64 << 20,
                 tail_bytes: int | None = None) -> None:
        self.ctx, self.job = ctx, job
        self.scan = scan if scan is not None else make_scan(ctx.cfg)
        store = ctx.metrics  # the engine's metrics store: a reader from the log's start records them
        if store is not None and not tail_bytes and self.scan.metrics is None and job.attempt:
            self.scan.metrics = store.recorder(job.attempt)
        #: with ``tail_bytes``, the first read starts that far before the log's end (a quick look)
        self.offset = -tail_bytes if tail_bytes else 0
        #: ``capture_output = false``: the console capture, followed live like the log (its offset)
        self.console = job.log_path + ".console" if not ctx.cfg.job.capture_output and not job.scheduler else None
        self.console_offset = -tail_bytes if tail_bytes else 0
        self.max_bytes = max_bytes
        self.log_seen = False
        self.last = JobState()
        self.first = True

    def _date_backlog(self, st: JobState) -> None:
        date_backlog(self.scan.clock, st, self.first)
        self.first = False

    def command(self, offset: int) -> str:
        return state_command(self.job, offset)

    def parse(self, out: bytes) -> JobState:
        return parse_state(out, self.job)

    async def read(self) -> JobState:
        read = 0
        while True:
            res = await self.ctx.run(self.command(self.offset), timeout=10)
            st = self.parse(res.stdout)
            await follow_survivors(self.ctx, self.job, st)  # a launcher that exited is not the job's end
            if self.offset < 0:  # a tail read: start at the first whole line, go on from the end
                cut = st.data.find(b"\n") + 1 if st.log_size > -self.offset else 0
                self.scan.feed(st.data[cut:])
                self.scan.clock.tick()
                self._date_backlog(st)
                self.offset = max(0, st.log_size)
                self.log_seen, self.last = st.log_size >= 0, st
                await read_console(self, st)
                if st.exited:
                    self.scan.flush()
                return st
            if st.log_size >= 0 and st.log_size < self.offset:  # truncated or replaced under us
                self.offset = 0
                continue
            if st.data and st.log_size >= 0:  # bytes written after the size was taken are read next time
                st.data = st.data[: max(0, st.log_size - self.offset)]
            self.offset += len(st.data)
            read += len(st.data)
            self.scan.feed(st.data)
            self.scan.clock.tick()
            self.log_seen = self.log_seen or st.log_size >= 0
            self.last = st
            if len(st.data) < READ_MAX or read >= self.max_bytes:
                self._date_backlog(st)
                await read_console(self, st)
                if st.exited:
                    self.scan.flush()
                return st
