"""The job as it is now: one probe that reads the job's processes, its exit file and its new log bytes.

Verify (before the verdict) and the fate follower (after it) both judge the job from a
:class:`JobState`, taken with *one* command through the persistent session:

* the supervisor's pid (from this launch's pid file), the ``/proc/PID/stat`` lines of the
  supervisor and of its descendants (:data:`DEPTH` levels, from ``/proc/PID/task/*/children``; when the
  supervisor is gone, every process of the job's process group, so a job whose supervisor was
  killed alone is still found);
* this launch's exit file, ``CODE SUPERVISOR_PID`` (a status written by another launch's
  supervisor is recognised and ignored), and when it was written, read *after* the processes:
  a supervisor that is gone from the process table wrote its status before it went, so one
  reading never shows a job that exited 0 as "gone without an exit status";
* the log's size, read *after* the exit file, and the bytes appended since ``offset``: every byte
  the job wrote before its status is in the reading that shows the status (read before it, the
  traceback a crashing job writes a moment before its exit could fall outside that reading, and
  the verdict said "with no traceback in the log").  :class:`JobReader` asks for the last
  :data:`OVERLAP` bytes it read too and checks they are still there: a log truncated in place and
  written past the old offset between two reads (logrotate's ``copytruncate`` on the job's
  ``>>`` log, a second ``python train.py > log``) is read again from its start, never from the
  middle of new text (whose first lines, a traceback, would go unseen).

:class:`JobState` (:mod:`.jobreading`, re-exported here) is one reading as plain data; its
:attr:`~JobState.leader` is the job's own main process, not its supervisor.

:class:`~.logscan.LogScan` (:mod:`.logscan`) is the log as a judge reads it: progress lines (first and
last), every error-severity signature match (minus ``[verify] ignore_signatures``), the threads that
died, and a tail for evidence.
"""

from __future__ import annotations

import re
import shlex
import time
from typing import Any

from ..procstat import read_stat
from .backlog import date_backlog, from_whole_line, middle_to_skip, read_console
from .base import ActionContext
from .forked import follow_forked
from .jobreading import JobState, live_pids, pid_number
from .jobrecord import JobRecord
from .logline import MAX_LINE, tz_seconds
from .logscan import LogScan, error_dict, make_scan
from .survivors import MainSeen, follow_survivors, seen_main

__all__ = ["JobState", "JobReader", "live_pids", "reader_for", "LogScan", "state_command", "echo_time", "parse_state", "make_scan", "error_dict", "READ_MAX",
           "MAX_LINE"]

READ_MAX = 1 << 20
#: the most a reader reads in one call once it has caught up with what its first look found (the
#: rest waits for the next call); a reader made without ``max_bytes`` reads this at call time
READ_PER_CALL = 64 << 20
#: bytes before its offset a reader reads again to tell a rewritten log from a grown one
OVERLAP = 64
#: how many levels of the supervisor's descendants a reading holds (supervisor → wrapping sh →
#: train.sh → trainer → its workers: a trainer's workers are told from a trainer a launcher left)
DEPTH = 4


#: times to the millisecond where the target's ``stat`` and ``date`` can (GNU: ``%.3Y``, ``%N``), else
#: whole seconds (:func:`echo_time`): read again the whole-second way when the answer holds anything
#: but digits and a dot (BusyBox), never when it is empty (no exit file yet: no second fork); an exit read to the second
#: aged a job that ran 0.9 s as 0.4 s
_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def echo_time(key: str, precise: str, whole: str) -> str:
    """Shell text that prints ``key=SECONDS``: ``precise``'s answer, or ``whole``'s when that one
    holds anything but digits and a dot (see above)."""
    return f"m=$({precise}); case \"$m\" in *[!0-9.]*) m=$({whole});; esac; echo \"{key}=$m\"; "


def state_command(job: JobRecord, offset: int, read_max: int = READ_MAX, *, follow: bool = False, moved: str | None = None) -> str:
    """The shell text of one probe (see the module doc); its output is parsed by :func:`parse_state`.

    A negative ``offset`` reads only the log's last ``-offset`` bytes.  With ``follow`` (the log is
    the supervisor's stdout: ``capture_output``), a log moved away under the job (logrotate's
    rename and ``create``) is read where the job writes it: the supervisor's stdout while it lives,
    then ``moved``, the path it was last seen at.
    """
    q = shlex.quote
    pg = int(job.pgid or job.pid or 0)
    log = q(job.log_path)
    where = f"lf={log}; "
    if follow:  # the supervisor's stdout is the log, unless it was moved (a name that starts with the log's)
        where += (f"if [ -n \"$p\" ] && [ -f /proc/$p/fd/1 ]; then [ /proc/$p/fd/1 -ef {log} ] || {{ m=$(readlink /proc/$p/fd/1); "
                  f"case \"$m\" in {log}?*) lf=/proc/$p/fd/1; echo \"moved=$m\";; esac; }}; "
                  + (f"elif [ -f {q(moved)} ]; then lf={q(moved)}; echo \"moved=\"{q(moved)}; " if moved else "") + "fi; ")
    # a pid file deleted under the job (its output directory wiped) falls back to the journalled pid
    # (parse_state checks its start time, so a reused pid is not the job)
    recorded = f"[ -n \"$p\" ] || p={int(job.pid)}; " if job.pid and job.start_time is not None else ""
    return (
        f"p=$(cat {q(job.pid_file)} 2>/dev/null); {recorded}echo \"pid=$p\"; "
        "echo \"init=$(cat /proc/1/stat 2>/dev/null)\"; echo @@stat; "
        # the supervisor's own line first: one that exits between a look at /proc/$p and the read of
        # its stat left a reading with neither its tree nor the job's group (a lingering worker unseen)
        "if [ -n \"$p\" ] && read -r l 2>/dev/null </proc/$p/stat; then echo \"$l\"; "
        # DEPTH levels of descendants, one cat a level (the globs expand in the shell): supervisor →
        # wrapping sh → train.sh → trainer → its data-loader workers
        f"a=; v=$p; for d in {' '.join(str(i) for i in range(DEPTH))}; do f=; for c in $v; do f=\"$f /proc/$c/task/*/children\"; done; "
        "v=$(cat $f 2>/dev/null); [ -n \"$v\" ] || break; a=\"$a $v\"; done; "
        "for c in $a; do read -r l 2>/dev/null </proc/$c/stat && echo \"$l\"; done; "
        f"else for f in /proc/[0-9]*/stat; do read -r l 2>/dev/null < \"$f\" && case \"$l\" in *\") \"?\" \"*\" {pg} \"*) echo \"$l\";; esac; done; fi; "
        # the exit file after the processes: a supervisor gone from the table wrote it before it went
        f"echo @@exit; echo \"exit=$(cat {q(job.exit_file)} 2>/dev/null)\"; "
        + echo_time("exit_mtime", f"stat -c %.3Y {q(job.exit_file)} 2>/dev/null", f"stat -c %Y {q(job.exit_file)} 2>/dev/null")
        # the log's size after the exit file: every byte the job wrote before its status is in this reading
        + where +
        "if [ -e \"$lf\" ]; then echo \"size=$(wc -c < \"$lf\")\"; " + echo_time("log_mtime", 'stat -L -c %.3Y "$lf"', 'stat -L -c %Y "$lf"')
        + "else echo size=-1; fi; " + echo_time("now", "date +%s.%N 2>/dev/null", "date +%s") + "echo \"tz=$(date +%z)\"; "
        + (f"echo @@log; tail -c +{offset + 1} \"$lf\" 2>/dev/null | head -c {int(read_max)}" if offset >= 0 else
           f"echo @@log; tail -c {-offset} \"$lf\" 2>/dev/null")
    )


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
    stats, _, tail = stats.partition(b"@@exit\n")  # the exit file, read after the processes
    for line in (head + b"\n" + tail).decode("utf-8", "replace").splitlines():
        k, _, v = line.partition("=")
        v = v.strip()
        if k == "pid":
            st.pid_text = v if v.isdigit() else ""
        elif k == "exit" and v:
            _exit_field(st, v, job)
        elif k == "exit_mtime" and _SECONDS.fullmatch(v):
            st.exit_at = float(v)
        elif k == "size" and v.lstrip("-").isdigit():
            st.log_size = int(v)
        elif k == "moved" and v:
            st.log_moved, st.log_deleted = v.removesuffix(" (deleted)"), v.endswith(" (deleted)")
        elif k == "log_mtime" and _SECONDS.fullmatch(v):
            st.log_mtime = float(v)
        elif k == "now" and _SECONDS.fullmatch(v):
            st.remote_now = float(v)
        elif k == "tz" and v:
            st.tz = tz_seconds(v)
        elif k == "init" and v:
            st.init = read_stat(v)
    st.job_start_time = job.start_time
    sup_pid = pid_number(st.pid_text)
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



def reader_for(ctx: ActionContext, job: JobRecord, scan: LogScan | None = None, **kw: Any) -> JobReader:
    """The reader for ``job``: the class the target's runtime reads its jobs with
    (:attr:`~cockpit.core.runtimes.base.Runtime.reader_class`: Slurm's reads the scheduler)."""
    cls: type[JobReader] = ctx.transport.runtime.reader_class
    return cls(ctx, job, scan, **kw)


class JobReader:
    """Reads one job again and again: keeps the log offset and the :class:`LogScan` between reads.

    :meth:`read` catches up with the whole log (in chunks of ``READ_MAX``, up to ``max_bytes`` per
    call), so a judge always sees every line written so far, never just the first megabyte.  The
    first call, and a call whose reading shows the job exited, read at least what the log held then,
    whatever ``max_bytes`` says: a later cockpit's one reading (``cockpit verify``, ``status``) of a
    log over ``max_bytes``, or a follower's reading of the exit behind such a log, judged from part of
    it, and told a crash at its end "no traceback in the log".  Behind a log of more than
    :data:`~.backlog.SKIP_OVER_READINGS` readings' worth, such a call reads the first and the last reading's
    worth and skips the middle (:attr:`skipped`): the end is what a judge needs, and pulling tens
    of GB over the link took minutes (the metrics then miss the middle's lines).
    """

    def __init__(self, ctx: ActionContext, job: JobRecord, scan: LogScan | None = None, *, max_bytes: int | None = None,
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
        self.max_bytes = READ_PER_CALL if max_bytes is None else max_bytes
        self.log_seen = False
        self.last = JobState()
        self.first = True
        #: the transport's connection count at the last reading, where the caller keeps it (verify):
        #: a link rebuilt by another reading in between is said (:func:`.reattach.read_job`)
        self.connects: int | None = None
        #: when (monotonic) :func:`.reattach.read_job` last read the job through this reader
        self.read_at: float | None = None
        #: the job's main process as last seen alive under its supervisor (with whether progress was
        #: seen by then): when it is what exits, its status is the job's (:func:`~.survivors.main_exited`)
        self.main: MainSeen | None = None
        if job.main_pid is not None and job.main_start is not None:  # journalled by an earlier cockpit's verify
            self.main = MainSeen(job.main_pid, job.main_start, job.main_comm, job.main_progressed)
        #: where the log was last seen moved to (:func:`state_command`'s ``follow``)
        self.moved: str | None = None
        #: the log was seen deleted under the job (a later reading that finds no log cannot read its end)
        self.deleted = False
        #: the last bytes read (up to :data:`OVERLAP`): asked for again before the offset
        self.seen_tail = b""
        #: times the log was found rewritten under the reader (truncated, then past the old offset)
        self.rewrites = 0
        #: times it was found shorter than the offset (truncated or replaced, not regrown yet)
        self.truncations = 0
        #: bytes of the log's middle skipped by a first look behind a very large log
        #: (:data:`~.backlog.SKIP_OVER_READINGS`), and whether the next bytes start mid-line
        self.skipped = 0
        self.mid_line = False
        #: the job's live processes (:func:`live_pids`) at the last reading and at the one before it
        self.pids: frozenset[int] = frozenset()
        self.prev_pids: frozenset[int] = frozenset()
        #: per loop-death candidate, the job's processes in the reading before it was first seen (:mod:`.loopdeath`)
        self.loop_anchor: dict[Any, frozenset[int]] = {}
        #: the progress count after the reading that first showed the main process's exit with processes it
        #: started alive (:mod:`.forked`: one that writes progress after it carries the job on)
        self.exit_progress: int | None = None
        self.exit_seen: float | None = None  # when (monotonic) that exit was first seen so
        #: the main process in ``D`` at every reading since then (its pid, start time, monotonic time)
        self.d_since: tuple[int, int, float] | None = None
        #: the main thread's CPU share and outputs last read for a stall: ((pid, start time), monotonic time, cpu, away)
        self.sampled: tuple[tuple[int, int], float, float | None, str] | None = None

    async def _forked(self, st: JobState) -> None:
        if not await follow_forked(self.ctx, self.job, st, self.scan, self.exit_progress):
            self.exit_progress = self.scan.progress_count if st.leftovers else None
            self.exit_seen = (self.exit_seen or time.monotonic()) if st.leftovers else None

    def _saw_main(self, st: JobState) -> None:
        self.prev_pids, self.pids = self.pids, live_pids(st)
        lead = st.leader
        if not (st.alive and lead is not None and lead.state.startswith("D")):
            self.d_since = None
        elif self.d_since is None or self.d_since[:2] != (lead.pid, lead.start_time):
            self.d_since = (lead.pid, lead.start_time, time.monotonic())
        m = seen_main(self.main, st, self.scan.progress_count > 0)
        if m is not None and m is not self.main:
            self.main = m
            self.job.main_pid, self.job.main_start, self.job.main_comm, self.job.main_progressed = m.pid, m.start_time, m.comm, m.progressed

    def _date_backlog(self, st: JobState) -> None:
        date_backlog(self.scan.clock, st, self.first, self.job.launched_at, self.scan.tail_lines[-1] if self.scan.tail_lines else None)
        self.first = False

    def command(self, offset: int) -> str:
        return state_command(self.job, offset, follow=self.ctx.cfg.job.capture_output and not self.job.scheduler, moved=self.moved)

    def parse(self, out: bytes) -> JobState:
        return parse_state(out, self.job)

    async def read(self) -> JobState:
        read = 0
        upto: int | None = None  # the first call: the log's size when it began (what the job already wrote)
        first = self.first
        while True:
            back = len(self.seen_tail) if self.offset > 0 else 0
            res = await self.ctx.run(self.command(self.offset - back), timeout=10)
            st = self.parse(res.stdout)
            self.moved = st.log_moved or self.moved
            self.deleted = self.deleted or st.log_deleted
            # the captured log exists from the spawn on (its redirection comes first): gone is deleted
            st.log_gone = st.log_size < 0 and st.spawned and (self.deleted or self.log_seen or self.console is None and not self.job.scheduler)
            await follow_survivors(self.ctx, self.job, st, self.main)  # a launcher that exited is not the job's end
            if self.offset < 0:  # a tail read: start at the first whole line, go on from the end
                cut = st.data.find(b"\n") + 1 if st.log_size > -self.offset else 0
                await self.scan.feed_async(st.data[cut:])
                self.scan.clock.tick()
                self._date_backlog(st)
                self.offset = max(0, st.log_size)
                self.log_seen, self.last = st.log_size >= 0, st
                self._saw_main(st)
                await read_console(self, st)
                await self._forked(st)
                if st.exited:
                    self.scan.flush()
                return st
            if st.log_size >= 0 and st.log_size < self.offset:  # truncated or replaced under us
                self.offset, self.seen_tail = 0, b""
                self.truncations += 1
                continue
            got = len(st.data)  # a whole chunk (READ_MAX, the overlap asked again included): the log goes on
            head, st.data = st.data[:back], st.data[back:]  # short: nothing could be read this time
            if st.log_size >= 0 and len(head) == back and head != self.seen_tail:  # rewritten past the old offset
                self.offset, self.seen_tail = 0, b""
                self.rewrites += 1
                continue
            if st.data and st.log_size >= 0:  # bytes written after the size was taken are read next time
                st.data = st.data[: max(0, st.log_size - self.offset)]
            self.offset += len(st.data)
            self.seen_tail = (self.seen_tail + st.data)[-OVERLAP:]
            read += len(st.data)
            data, self.mid_line = from_whole_line(st.data, self.mid_line)
            await self.scan.feed_async(data)
            self.scan.clock.tick()
            self.log_seen = self.log_seen or st.log_size >= 0
            self.last = st
            if upto is None and self.first or st.exited:  # what exists before a judge's first look, or its last
                upto = max(st.log_size, -1 if upto is None else upto)
            if got < READ_MAX or read >= self.max_bytes and (upto is None or self.offset >= upto):
                self._saw_main(st)
                self._date_backlog(st)
                await read_console(self, st, whole=first or st.exited)
                await self._forked(st)
                if st.exited:
                    self.scan.flush()
                return st
            if skip := middle_to_skip(upto, self.offset, read, self.max_bytes):
                self.offset += skip
                self.skipped += skip
                self.seen_tail, self.mid_line = b"", True
                self.scan.partial, self.scan.peeked = b"", False  # the line cut by the skip is never judged
