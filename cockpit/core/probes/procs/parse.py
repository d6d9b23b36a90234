"""Reading the process-table probe's output into :class:`~.tree.Proc` objects; never raises.

procps format (one line per process, fields in this order, the free-text field last)::

    pid ppid pgid sid stat etimes pcpu rss nlwp wchan user comm args

``comm`` is padded to 15 display columns and may contain spaces (``prctl(PR_SET_NAME)``), so it
is cut by column, not by whitespace; ``args`` is the rest of the line, spaces and unicode intact
(``LC_ALL=C.UTF-8``: in the C locale ps turns every non-ASCII byte into ``?``).

``/proc`` format: ``@@uptime``, ``@@conf`` (CLK_TCK) and ``@@pw`` (uid → name) lines, then one
tab-separated record per process: ``P uid rss_kb threads wchan cmdline stat``, where ``stat`` is
``/proc/PID/stat`` verbatim (kept last: ``comm`` inside it may contain anything, the last ``)``
ends it) and ``cmdline`` has NUL, newline and tab turned into spaces.

Elapsed times come from ``/proc/uptime`` in both formats.  Inside an LXC container whose
``/proc/uptime`` is virtualised by lxcfs (the container's uptime, while process start times count
from the host's boot) both ps and the fallback can report elapsed times that are too small; they
are clamped at zero.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterator

from ...procstat import read_stat
from ..text import to_text
from .command import HEADER
from .tree import Proc

__all__ = ["parse_ps", "parse_procps", "parse_proc_records"]

log = logging.getLogger(__name__)

_STATE_RE = re.compile(r"[DIRSTtWXZPKx][<NLsl+]*\Z")


def _cols(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _split_comm_args(rest: str) -> tuple[str, str]:
    """Split ``comm`` (padded to 15 display columns, may hold spaces) from ``args``."""
    width = 0
    for i, ch in enumerate(rest):
        if width >= 15:
            if ch == " ":
                return rest[:i].rstrip(" "), rest[i + 1 :]
            break
        width += _cols(ch)
    else:
        # the line ended inside the comm column: no args (should not happen, ps prints "-")
        return rest.rstrip(" "), ""
    # alignment not as expected: fall back to the first run of spaces
    parts = rest.split(None, 1)
    if not parts:
        return "", ""
    return parts[0], (parts[1] if len(parts) > 1 else "")


def _procps_line(line: str) -> Proc | None:
    parts = line.split(None, 11)
    if len(parts) < 12:
        return None
    pid, ppid, pgid, sid, stat, etimes, pcpu, rss, nlwp, wchan, user, rest = parts
    try:
        if not _STATE_RE.match(stat):
            return None
        comm, args = _split_comm_args(rest)
        return Proc(
            pid=int(pid),
            ppid=int(ppid),
            pgid=int(pgid),
            sid=int(sid),
            state=stat,
            elapsed_s=max(0, int(etimes)),
            cpu=float(pcpu),
            rss_kb=int(rss),
            user=user,
            comm=comm,
            args=args,
            threads=max(1, int(nlwp)),
            wchan=wchan,
        )
    except ValueError:
        return None


def _data_lines(text: str | bytes) -> Iterator[str]:
    """The probe's non-blank lines, without its header line."""
    for line in to_text(text).splitlines():
        if line.strip() and not line.startswith(HEADER):
            yield line


def _keep(p: Proc | None, line: str, procs: list[Proc], bad: list[str]) -> None:
    """Add a parsed process, or its line (cut to 500 characters) to the unreadable ones."""
    if p is None or not all(v >= 0 for v in (p.pid, p.ppid, p.pgid, p.sid, p.rss_kb)):
        bad.append(line[:500])
    else:
        procs.append(p)


def _dedupe(procs: list[Proc], bad: list[str]) -> tuple[list[Proc], list[str]]:
    seen: set[int] = set()
    out = []
    for p in procs:
        if p.pid in seen:
            bad.append(f"duplicate pid {p.pid}: {p.args[:200]}")
            continue
        seen.add(p.pid)
        out.append(p)
    return out, bad


def parse_procps(text: str | bytes) -> tuple[list[Proc], list[str]]:
    """Parse the procps format (without or with the header line)."""
    procs: list[Proc] = []
    bad: list[str] = []
    for line in _data_lines(text):
        _keep(_procps_line(line), line, procs, bad)
    return _dedupe(procs, bad)


def _stat_flags(*, pid: int, session: int, pgrp: int, tpgid: int, nice: int, nthreads: int) -> str:
    """The STAT flags procps would print after the state letter: ``<``/``N``, ``s``, ``l``, ``+``."""
    flags = ""
    if nice < 0:
        flags += "<"
    elif nice > 0:
        flags += "N"
    if pid == session:
        flags += "s"
    if nthreads > 1:
        flags += "l"
    if tpgid == pgrp and tpgid > 0:
        flags += "+"
    return flags


def _proc_record(line: str, uptime: float | None, clk: int, users: dict[str, str]) -> Proc | None:
    # P \t uid \t rss_kb \t threads \t wchan \t cmdline \t stat
    parts = line.split("\t", 6)
    if len(parts) != 7 or parts[0] != "P":
        return None
    _, uid, rss, threads, wchan, cmdline, stat = parts
    st = read_stat(stat)
    if st is None:
        return None
    pid, comm, code = st.pid, st.comm, st.state
    ppid, pgrp, session, tpgid = st.ppid, st.pgid, st.sid, st.tpgid
    utime, stime, nice, nthreads, start = st.utime, st.stime, st.nice, st.threads, st.start_time
    if len(code) != 1 or not _STATE_RE.match(code):
        return None
    try:
        nthreads = int(threads) if threads else nthreads
        rss_kb = int(rss) if rss else 0
    except ValueError:
        return None
    flags = _stat_flags(pid=pid, session=session, pgrp=pgrp, tpgid=tpgid, nice=nice, nthreads=nthreads)
    elapsed = 0.0
    if uptime is not None and clk > 0:
        elapsed = max(0.0, uptime - start / clk)
    cpu = round(100.0 * (utime + stime) / clk / elapsed, 1) if elapsed > 0 and clk > 0 else 0.0
    if cmdline.endswith(" "):
        cmdline = cmdline[:-1]
    if code == "Z":
        args = f"[{comm}] <defunct>"
    elif not cmdline.strip():
        args = f"[{comm}]"
    else:
        args = cmdline
    return Proc(
        pid=pid,
        ppid=ppid,
        pgid=pgrp,
        sid=session,
        state=code + flags,
        elapsed_s=int(elapsed),
        cpu=cpu,
        rss_kb=rss_kb,
        user=users.get(uid, uid),
        comm=comm,
        args=args,
        threads=max(1, nthreads),
        wchan="-" if wchan in ("", "0") else wchan,
    )


def parse_proc_records(text: str | bytes) -> tuple[list[Proc], list[str]]:
    """Parse the ``/proc`` reader's format (see the module docstring)."""
    uptime: float | None = None
    clk = 100
    users: dict[str, str] = {}
    procs: list[Proc] = []
    bad: list[str] = []
    for line in _data_lines(text):
        if line.startswith("@@uptime "):
            try:
                uptime = float(line.split()[1])
            except (IndexError, ValueError):
                bad.append(line[:500])
            continue
        if line.startswith("@@conf "):
            try:
                clk = int(line.split()[1]) or 100
            except (IndexError, ValueError):
                bad.append(line[:500])
            continue
        if line.startswith("@@pw "):
            bits = line.split(" ", 2)
            if len(bits) == 3 and bits[1] and bits[1] not in users:
                users[bits[1]] = bits[2]
            continue
        _keep(_proc_record(line, uptime, clk, users), line, procs, bad)
    return _dedupe(procs, bad)


def parse_ps(text: str | bytes | None) -> tuple[list[Proc], list[str]]:
    """Parse :data:`~.command.PS_COMMAND`'s output (either format); never raises.

    Returns the processes and the lines that could not be read (each cut to 500 characters).
    Output without a header line is read as procps format.  When ps timed out the result is
    ``([], ["@@cockpit-ps timeout N"])``: use :func:`~.findings.ps_probe_findings` to report it.
    """
    try:
        body = to_text(text)
        head = body.lstrip()[:40]
        if head.startswith(f"{HEADER} timeout"):
            return [], [head.splitlines()[0]]
        if head.startswith(f"{HEADER} proc\n") or head.rstrip() == f"{HEADER} proc":
            return parse_proc_records(body)
        return parse_procps(body)
    except Exception as exc:  # a parser bug must not end polling: it is logged and shown as a bad line
        log.debug("parse_ps failed", exc_info=True)
        return [], [f"parser error: {exc!r}"]
