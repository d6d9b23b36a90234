"""The process table inside the target: one probe command, a tolerant parser, a tree, findings.

The probe (:data:`PS_COMMAND`) runs through ``sh`` inside the container.  It tries procps ``ps``
first and falls back to reading ``/proc`` with a small shell loop (busybox containers have no
procps, and busybox ``ps`` knows none of the fields we need).  Its output starts with a header
line that says which of the two formats follows, so :func:`parse_ps` reads both.

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

:func:`analyse` turns a process list into :class:`~cockpit.core.layers.Finding` objects:

``zombie`` (layer ``container``)
    a ``Z`` entry: dead, not reaped.  Nothing can kill it; its parent's death (then PID 1 reaps it,
    if PID 1 is an init that reaps) or a reboot of the container clears it.
``zombie-threads`` (layer ``container``)
    a ``Zl`` entry: the thread-group leader exited but other threads are still alive, stuck in the
    kernel (typically the GPU driver).  It cannot be reaped until they leave; reboot.
``uninterruptible`` (layer ``gpu`` when the kernel wait channel names the NVIDIA driver, else
    ``process``, as DESIGN's layer table puts "stuck in D" under the job's lifecycle)
    a ``D`` entry.  A brief ``D`` is ordinary I/O; one that persists across polls is not.
``job-missing``, ``duplicate-job`` (layer ``process``)
    none of the job's recorded pids is in the table; another copy of the job's command runs outside
    the job's process group.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator

from ..layers import Finding, Layer, Severity

__all__ = [
    "PS_FIELDS",
    "PS_PROCPS_COMMAND",
    "PS_PROC_COMMAND",
    "PS_COMMAND",
    "ps_command",
    "Proc",
    "ProcTree",
    "parse_ps",
    "ps_probe_findings",
    "parse_procps",
    "parse_proc_records",
    "job_members",
    "pid1_reaps",
    "analyse",
    "fmt_age",
]

#: ``ps -o`` fields, in output order: every fixed field first, the free-text ``args`` last.
PS_FIELDS = (
    "pid",  # process id
    "ppid",  # parent pid (0: the parent is outside this PID namespace, e.g. a `pct exec` session)
    "pgid",  # process group id
    "sid",  # session id
    "stat",  # state + flags: R S D Z T t X I, then < N L s l +
    "etimes",  # elapsed seconds since the process started
    "pcpu",  # %CPU averaged over the process lifetime
    "rss",  # resident set size, KiB
    "nlwp",  # number of threads
    "wchan:32",  # kernel function the process sleeps in ("-" when running)
    "user:32",  # user name (the numeric uid when it is wider than 32)
    "comm",  # executable name, at most 15 bytes, may contain spaces
    "args",  # full command line
)

_HEADER = "@@cockpit-ps"

#: procps ``ps`` alone (no header line).
PS_PROCPS_COMMAND = "LC_ALL=C.UTF-8 ps -e -ww -o " + ",".join(f + "=" for f in PS_FIELDS)

#: The ``/proc`` reader for containers without procps (busybox, distroless); dash/ash compatible.
PS_PROC_COMMAND = (
    "read -r _cp_u _ </proc/uptime; echo \"@@uptime $_cp_u\"; "
    "echo \"@@conf $(getconf CLK_TCK 2>/dev/null || echo 100)\"; "
    "while IFS=: read -r _cp_n _ _cp_i _; do echo \"@@pw $_cp_i $_cp_n\"; done 2>/dev/null </etc/passwd; "
    "for _cp_d in /proc/[0-9]*; do "
    "_cp_s=; read -r _cp_s 2>/dev/null <\"$_cp_d/stat\" || [ -n \"$_cp_s\" ] || continue; "
    "_cp_id=; _cp_r=; _cp_t=; "
    "while read -r _cp_k _cp_v _; do case $_cp_k in Uid:) _cp_id=$_cp_v;; VmRSS:) _cp_r=$_cp_v;; "
    "Threads:) _cp_t=$_cp_v; break;; esac; done 2>/dev/null <\"$_cp_d/status\"; "
    "_cp_w=; read -r _cp_w 2>/dev/null <\"$_cp_d/wchan\"; "
    "_cp_c=$(tr '\\000\\n\\t' '   ' 2>/dev/null <\"$_cp_d/cmdline\"); "
    "printf 'P\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' \"$_cp_id\" \"$_cp_r\" \"$_cp_t\" \"$_cp_w\" \"$_cp_c\" \"$_cp_s\"; "
    "done"
)


def ps_command(timeout: float = 5) -> str:
    """The probe: procps ``ps`` if it works, else the ``/proc`` reader; a header says which.

    Run it through ``sh`` inside the container; exit status 0 in every case.  ``ps`` runs under
    ``timeout -s KILL`` when the container has a ``timeout`` that accepts it: reading
    ``/proc/PID/cmdline`` waits for the target's memory-map lock, so a process stuck in the
    kernel (the seed's ``Zl`` leader) can hang ``ps`` itself; the output is then the single line
    ``@@cockpit-ps timeout SECONDS`` (see :func:`ps_probe_findings`), and the ``/proc`` reader is
    not tried (it would hang the same way).
    """
    t = max(1, int(round(float(timeout))))
    return (
        f"_cp_t=; timeout -s KILL 1 true 2>/dev/null && _cp_t='timeout -s KILL {t}'; "
        f"_cp_o=$(LC_ALL=C.UTF-8 $_cp_t {PS_PROCPS_COMMAND.replace('LC_ALL=C.UTF-8 ', '')} 2>/dev/null); _cp_r=$?; "
        f"if [ $_cp_r -eq 0 ] && [ -n \"$_cp_o\" ]; then "
        f"echo '{_HEADER} procps'; printf '%s\\n' \"$_cp_o\"; "
        f"elif [ -n \"$_cp_t\" ] && {{ [ $_cp_r -eq 137 ] || [ $_cp_r -eq 124 ]; }}; then echo '{_HEADER} timeout {t}'; "
        f"else echo '{_HEADER} proc'; {PS_PROC_COMMAND}; fi"
    )


#: The exact command string :func:`ps_command` builds with its default deadline.
PS_COMMAND = ps_command()


@dataclass(frozen=True)
class Proc:
    """One process as ``ps`` saw it."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str  # full STAT, e.g. "Ss", "Zl", "D", "R+"
    elapsed_s: int
    cpu: float  # %CPU over the process lifetime, as ps computes it (can exceed 100)
    rss_kb: int
    user: str
    comm: str
    args: str
    threads: int = 1
    wchan: str = ""  # kernel wait channel ("" unknown, "-" running)

    @property
    def code(self) -> str:
        """The one-letter state: R, S, D, Z, T, ..."""
        return self.state[:1]

    @property
    def is_zombie(self) -> bool:
        return self.code == "Z" or self.args.endswith("<defunct>")

    @property
    def is_uninterruptible(self) -> bool:
        return self.code == "D"

    @property
    def multithreaded(self) -> bool:
        return "l" in self.state[1:] or self.threads > 1

    @property
    def name(self) -> str:
        """A short name: ``comm``, or the basename of the first argument when comm is empty."""
        if self.comm:
            return self.comm
        first = self.args.split(" ", 1)[0]
        return os.path.basename(first) or first

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# parsing


def _to_text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data).decode("utf-8", "replace")
    return data


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


def _check_ints(*values: int) -> bool:
    return all(v >= 0 for v in values)


def parse_procps(text: str | bytes) -> tuple[list[Proc], list[str]]:
    """Parse the procps format (without or with the header line)."""
    procs: list[Proc] = []
    bad: list[str] = []
    for line in _to_text(text).splitlines():
        if not line.strip() or line.startswith(_HEADER):
            continue
        p = _procps_line(line)
        if p is None or not _check_ints(p.pid, p.ppid, p.pgid, p.sid, p.rss_kb):
            bad.append(line[:500])
        else:
            procs.append(p)
    return _dedupe(procs, bad)


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


def _proc_record(line: str, uptime: float | None, clk: int, users: dict[str, str]) -> Proc | None:
    # P \t uid \t rss_kb \t threads \t wchan \t cmdline \t stat
    parts = line.split("\t", 6)
    if len(parts) != 7 or parts[0] != "P":
        return None
    _, uid, rss, threads, wchan, cmdline, stat = parts
    lp = stat.find(" (")
    rp = stat.rfind(")")
    if lp <= 0 or rp < lp:
        return None
    try:
        pid = int(stat[:lp])
        comm = stat[lp + 2 : rp]
        f = stat[rp + 1 :].split()
        if len(f) < 20:
            return None
        code = f[0]
        ppid, pgrp, session, tpgid = int(f[1]), int(f[2]), int(f[3]), int(f[5])
        utime, stime = int(f[11]), int(f[12])
        nice, nthreads, start = int(f[16]), int(f[17]), int(f[19])
    except ValueError:
        return None
    if len(code) != 1 or not _STATE_RE.match(code):
        return None
    try:
        nthreads = int(threads) if threads else nthreads
        rss_kb = int(rss) if rss else 0
    except ValueError:
        return None
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
    for line in _to_text(text).splitlines():
        if not line.strip() or line.startswith(_HEADER):
            continue
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
        p = _proc_record(line, uptime, clk, users)
        if p is None or not _check_ints(p.pid, p.ppid, p.pgid, p.sid, p.rss_kb):
            bad.append(line[:500])
        else:
            procs.append(p)
    return _dedupe(procs, bad)


def parse_ps(text: str | bytes | None) -> tuple[list[Proc], list[str]]:
    """Parse :data:`PS_COMMAND`'s output (either format); never raises.

    Returns the processes and the lines that could not be read (each cut to 500 characters).
    Output without a header line is read as procps format.  When ps timed out the result is
    ``([], ["@@cockpit-ps timeout N"])``: use :func:`ps_probe_findings` to report it.
    """
    try:
        body = _to_text(text)
        head = body.lstrip()[:40]
        if head.startswith(f"{_HEADER} timeout"):
            return [], [head.splitlines()[0]]
        if head.startswith(f"{_HEADER} proc\n") or head.rstrip() == f"{_HEADER} proc":
            return parse_proc_records(body)
        return parse_procps(body)
    except Exception as exc:  # pragma: no cover - defensive: a parser bug must not break a poll
        return [], [f"parser error: {exc!r}"]


def ps_probe_findings(text: str | bytes | None) -> list[Finding]:
    """Findings about the probe itself: ``ps`` hung (killed at its deadline)."""
    head = _to_text(text).lstrip()[:60]
    if not head.startswith(f"{_HEADER} timeout"):
        return []
    secs = head.split()[2] if len(head.split()) > 2 else "?"
    return [
        Finding(
            layer=Layer.CONTAINER,
            kind="ps-hung",
            summary=f"ps did not finish within {secs}s: reading some process's /proc entry blocks",
            advice=(
                "A process is stuck in the kernel holding its memory map (often in the GPU driver; check the "
                "host's kernel messages for an Xid or hung task). Nothing inside can end it: reboot the container."
            ),
            severity=Severity.ERROR,
            subject={"timeout_s": secs},
        )
    ]


# --------------------------------------------------------------------------------------------
# the tree


class ProcTree:
    """Processes linked by ppid.  Roots are processes whose parent is not in the table (PPID 0
    included: inside a PID namespace a process entered from outside has PPID 0).  Cycles in
    malformed input do not loop: their members become roots too."""

    def __init__(self, procs: Iterable[Proc]):
        self.by_pid: dict[int, Proc] = {}
        for p in procs:
            self.by_pid.setdefault(p.pid, p)
        self._children: dict[int, list[int]] = {}
        for p in self.by_pid.values():
            if p.ppid != p.pid and p.ppid in self.by_pid:
                self._children.setdefault(p.ppid, []).append(p.pid)
        for kids in self._children.values():
            kids.sort()
        self.roots: list[Proc] = sorted(
            (p for p in self.by_pid.values() if p.ppid == p.pid or p.ppid not in self.by_pid),
            key=lambda p: p.pid,
        )

    def __len__(self) -> int:
        return len(self.by_pid)

    def __contains__(self, pid: object) -> bool:
        return pid in self.by_pid

    def get(self, pid: int) -> Proc | None:
        return self.by_pid.get(pid)

    @property
    def pid1(self) -> Proc | None:
        return self.by_pid.get(1)

    def parent(self, pid: int) -> Proc | None:
        p = self.by_pid.get(pid)
        if p is None or p.ppid == p.pid:
            return None
        return self.by_pid.get(p.ppid)

    def children(self, pid: int) -> list[Proc]:
        return [self.by_pid[c] for c in self._children.get(pid, ())]

    def descendants(self, pid: int) -> list[Proc]:
        out: list[Proc] = []
        seen = {pid}
        stack = list(reversed(self._children.get(pid, ())))
        while stack:
            c = stack.pop()
            if c in seen:
                continue
            seen.add(c)
            out.append(self.by_pid[c])
            stack.extend(reversed(self._children.get(c, ())))
        return out

    def ancestors(self, pid: int) -> list[Proc]:
        """Parent, grandparent, ... up to a root (stops on a cycle)."""
        out: list[Proc] = []
        seen = {pid}
        p = self.parent(pid)
        while p is not None and p.pid not in seen:
            out.append(p)
            seen.add(p.pid)
            p = self.parent(p.pid)
        return out

    def walk(self) -> Iterator[tuple[int, Proc]]:
        """(depth, process) in display order: each root, then its subtree depth-first."""
        seen: set[int] = set()
        pending = [p.pid for p in self.roots]
        leftovers = sorted(self.by_pid)
        while True:
            for root in pending:
                stack = [(0, root)]
                while stack:
                    depth, pid = stack.pop()
                    if pid in seen:
                        continue
                    seen.add(pid)
                    yield depth, self.by_pid[pid]
                    for c in reversed(self._children.get(pid, ())):
                        stack.append((depth + 1, c))
            rest = [pid for pid in leftovers if pid not in seen]
            if not rest:
                return
            pending = rest[:1]  # a cycle: start anywhere in it


# --------------------------------------------------------------------------------------------
# analysis

#: PID 1 programs and whether they reap orphaned children (None: depends / unknown).
INIT_REAPS: dict[str, bool | None] = {
    "systemd": True,
    "init": True,
    "tini": True,
    "tini-static": True,
    "dumb-init": True,
    "s6-svscan": True,
    "s6-linux-init": True,
    "runit": True,
    "runit-init": True,
    "runsvdir": True,
    "docker-init": True,
    "catatonit": True,
    "openrc-init": True,
    "upstart": True,
    "my_init": True,
    "supervisord": True,  # its reap loop waits on any pid, orphans included
    "lxc-init": True,
    "sh": None,  # a shell reaps only at certain moments (between commands, in `wait`)
    "bash": None,
    "dash": None,
    "ash": None,
    "busybox": None,
    "zsh": None,
    "sleep": False,
    "tail": False,
    "cat": False,
    "python": False,
    "python3": False,
    "node": False,
    "java": False,
    "jupyter": False,
    "jupyter-lab": False,
    "sshd": False,
}


def pid1_reaps(pid1: Proc | None) -> bool | None:
    """Whether this PID 1 reaps orphans: True (a known init), False (known not to), None."""
    if pid1 is None:
        return None
    names = [pid1.comm]
    first = pid1.args.split(" ", 1)[0] if pid1.args else ""
    if first:
        names.append(os.path.basename(first))
    for n in names:
        n = n.strip()
        if n in INIT_REAPS:
            return INIT_REAPS[n]
        m = re.match(r"(python|node|java)[\d.]*\Z", n)
        if m:
            return False
    return None


def fmt_age(seconds: float | int | None) -> str:
    """``45s``, ``17m07s``, ``2h03m``, ``3d04h``."""
    if seconds is None:
        return "?"
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _short(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def job_members(tree: ProcTree, job_pids: Iterable[int] = (), job_pgid: int | None = None) -> set[int]:
    """The job's processes: its recorded pids, its process group, and their descendants."""
    roots = {p for p in job_pids if p in tree}
    if job_pgid is not None:
        roots |= {p.pid for p in tree.by_pid.values() if p.pgid == job_pgid}
    out = set(roots)
    for pid in roots:
        out |= {d.pid for d in tree.descendants(pid)}
    return out


def _argv_equal(args: str, command: str) -> bool:
    a, b = args.split(), command.split()
    if not a or not b or len(a) != len(b):
        return False
    if a == b:
        return True
    return a[1:] == b[1:] and os.path.basename(a[0]) == os.path.basename(b[0])


_GPU_WCHAN = re.compile(r"(?:^|_)(?:nv|uvm|nvidia|os_|_nv)|nvidia|^nv|^uvm", re.IGNORECASE)

_REBOOT = "only the parent's death or a reboot of the container clears it"


def _zombie_advice(z: Proc, tree: ProcTree, reaps: bool | None) -> str:
    parent = tree.parent(z.pid)
    pid1 = tree.pid1
    p1 = pid1.name if pid1 else "PID 1"
    if z.multithreaded:
        return (
            "Its other threads are still alive, stuck in the kernel (often the GPU driver: check the "
            "host's kernel messages for an Xid); no signal ends them and it cannot be reaped until "
            "they leave: reboot the container (a wedged GPU may need a reset or a host reboot)."
        )
    if parent is None:
        return (
            f"Its parent (ppid {z.ppid}) is outside this PID namespace, e.g. a `pct exec`/`lxc-attach` "
            "session on the host: it is reaped when that session ends. End that session on the host, "
            "or reboot the container."
        )
    if parent.pid == 1:
        if reaps is True:
            return (
                f"PID 1 ({p1}) reaps orphans, so this should vanish within moments; if it stays across "
                "polls, PID 1 is not calling wait() (hung?): reboot the container."
            )
        if reaps is False:
            return (
                f"PID 1 ({_short(pid1.args, 60) if pid1 else '?'}) is not an init and never reaps orphans: "
                "zombies pile up until the container reboots. Reboot it, and run the job under an init "
                "(systemd, tini, dumb-init)."
            )
        return (
            f"PID 1 ({p1}) may not reap orphans (a shell reaps only at times); "
            f"{_REBOOT}. Reboot the container, or run PID 1 as a real init (tini, systemd)."
        )
    tail = (
        "PID 1 then reaps it"
        if reaps is True
        else "but PID 1 does not reap, so reboot the container"
        if reaps is False
        else "and PID 1 may or may not reap it"
    )
    return (
        f"A dead process cannot be killed: its parent {parent.pid} ({_short(parent.args, 60)}) has not "
        f"called wait(). Ending the parent hands it to PID 1 ({tail}); {_REBOOT}."
    )


def analyse(
    procs: Iterable[Proc],
    *,
    job_pids: Iterable[int] = (),
    job_pgid: int | None = None,
    job_command: str | None = None,
) -> list[Finding]:
    """Findings about a process table: zombies, ``D`` states, the job's own processes.

    ``job_pids``/``job_pgid`` are pids as seen inside the container (what the launch recorded);
    ``job_command`` is the job's command line, used to spot other copies of the job.
    """
    procs = list(procs)
    tree = ProcTree(procs)
    job_pids = [int(p) for p in job_pids]
    members = job_members(tree, job_pids, job_pgid)
    reaps = pid1_reaps(tree.pid1)
    findings: list[Finding] = []

    # zombies: job's and Zl individually; the rest grouped by parent
    plain: dict[int, list[Proc]] = {}
    for p in sorted(tree.by_pid.values(), key=lambda p: p.pid):
        if not p.is_zombie:
            continue
        in_job = p.pid in members
        if p.multithreaded or in_job:
            findings.append(_zombie_finding([p], tree, reaps, in_job))
        else:
            plain.setdefault(p.ppid, []).append(p)
    for _, group in sorted(plain.items()):
        findings.append(_zombie_finding(group, tree, reaps, False))

    # uninterruptible sleep
    for p in sorted(tree.by_pid.values(), key=lambda p: p.pid):
        if not p.is_uninterruptible:
            continue
        in_gpu = bool(p.wchan and p.wchan not in ("-", "0") and _GPU_WCHAN.search(p.wchan))
        where = f"in the kernel function {p.wchan}" if p.wchan and p.wchan not in ("-", "0") else "in the kernel"
        findings.append(
            Finding(
                layer=Layer.GPU if in_gpu else Layer.PROCESS,
                kind="uninterruptible",
                summary=f"pid {p.pid} ({p.name}) is in uninterruptible sleep (D) {where}"
                + (" — the job" if p.pid in members else ""),
                advice=(
                    "A brief D is ordinary I/O; one that lasts cannot be killed (even SIGKILL waits): "
                    + (
                        "it waits in the NVIDIA driver: check the host's kernel messages for an Xid; a GPU "
                        "reset or host reboot may be needed."
                        if in_gpu
                        else "check storage (NFS, full or slow disk) and the host's kernel messages; a "
                        "container reboot clears it."
                    )
                ),
                severity=Severity.ERROR if p.pid in members else Severity.WARNING,
                subject={
                    "pid": p.pid,
                    "ppid": p.ppid,
                    "comm": p.comm,
                    "args": p.args,
                    "state": p.state,
                    "wchan": p.wchan,
                    "elapsed_s": p.elapsed_s,
                    "job": p.pid in members,
                },
            )
        )

    # the job
    if job_pids and not any(pid in tree for pid in job_pids) and not (
        job_pgid is not None and members
    ):
        findings.append(
            Finding(
                layer=Layer.PROCESS,
                kind="job-missing",
                summary=f"job pid {', '.join(map(str, job_pids))} is not in the process table",
                advice="The job exited or never started: read its log tail and the host's kernel messages "
                "(an OOM kill leaves no trace in the log).",
                severity=Severity.ERROR,
                subject={"job_pids": job_pids, "job_pgid": job_pgid},
            )
        )
    if job_command and job_command.strip():
        ancestors: set[int] = set()
        for m in members:
            ancestors |= {a.pid for a in tree.ancestors(m)}
        copies = [
            p
            for p in sorted(tree.by_pid.values(), key=lambda p: p.pid)
            if not p.is_zombie
            and p.pid not in members
            and p.pid not in ancestors
            and _argv_equal(p.args, job_command)
        ]
        if members:
            strays = copies
        else:
            strays = copies if len(copies) > 1 else []
        for p in strays:
            findings.append(
                Finding(
                    layer=Layer.PROCESS,
                    kind="duplicate-job",
                    summary=f"another copy of the job runs: pid {p.pid} (pgid {p.pgid}, {fmt_age(p.elapsed_s)} old)"
                    if members
                    else f"{len(copies)} processes run the job's command: pid {p.pid} is one",
                    advice="Two copies share the GPU and write the same files: stop the stray copy by pid "
                    "(and start time), and check what launched it.",
                    severity=Severity.WARNING,
                    subject={
                        "pid": p.pid,
                        "ppid": p.ppid,
                        "pgid": p.pgid,
                        "args": p.args,
                        "elapsed_s": p.elapsed_s,
                        "job_pgid": job_pgid,
                    },
                )
            )
    return findings


def _zombie_finding(group: list[Proc], tree: ProcTree, reaps: bool | None, in_job: bool) -> Finding:
    z = group[0]
    parent = tree.parent(z.pid)
    pname = f"{parent.pid} ({parent.name})" if parent else f"{z.ppid} (outside this PID namespace)"
    pid1 = tree.pid1
    if z.multithreaded:
        kind = "zombie-threads"
        more = f"{z.threads - 1} thread(s)" if z.threads > 1 else "some threads"
        summary = (
            f"pid {z.pid} ({z.name}, started {fmt_age(z.elapsed_s)} ago) is a zombie ({z.state}) with {more} "
            f"still alive, stuck in the kernel; parent {pname}"
        )
    elif len(group) == 1:
        kind = "zombie"
        summary = (
            f"pid {z.pid} ({z.name}, started {fmt_age(z.elapsed_s)} ago) is a zombie ({z.state}): "
            f"parent {pname} has not reaped it"
        )
    else:
        kind = "zombie"
        oldest = max(g.elapsed_s for g in group)
        names = sorted({g.name for g in group})
        summary = (
            f"{len(group)} zombies ({', '.join(names[:3])}{'…' if len(names) > 3 else ''}, the oldest started "
            f"{fmt_age(oldest)} ago): parent {pname} has not reaped them"
        )
    if in_job:
        summary += " — the job"
    subject = {
        "pid": z.pid,
        "ppid": z.ppid,
        "comm": z.comm,
        "args": z.args,
        "state": z.state,
        "elapsed_s": z.elapsed_s,
        "threads": z.threads,
        "parent_pid": parent.pid if parent else None,
        "parent_comm": parent.comm if parent else None,
        "parent_args": parent.args if parent else None,
        "pid1_comm": pid1.comm if pid1 else None,
        "pid1_args": pid1.args if pid1 else None,
        "pid1_reaps": reaps,
        "job": in_job,
    }
    if len(group) > 1:
        subject["pids"] = [g.pid for g in group]
    return Finding(
        layer=Layer.CONTAINER,
        kind=kind,
        summary=summary,
        advice=_zombie_advice(z, tree, reaps),
        severity=Severity.ERROR if (in_job or z.multithreaded) else Severity.WARNING,
        subject=subject,
    )
