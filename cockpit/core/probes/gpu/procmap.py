"""Who the driver's pids are: each listed pid's ``/proc`` entry, read where nvidia-smi ran.

nvidia-smi reports pids in the PID namespace of the driver, the host's.  Inside a container the
driver lists nothing, so cockpit asks on the host and reads, for each listed pid, what says which
container it belongs to and what its pid is there, in the same shell command (one round trip):

``Name``, ``State``, ``PPid``, ``Threads`` and ``NSpid`` (the pid in each nested PID namespace,
the host's first) from ``/proc/PID/status``; ``/proc/PID/cgroup`` (Proxmox puts a container's
processes under ``/lxc/CTID/``); the inode of ``/proc/PID/ns/pid`` beside the container init's
(``lxc-info -n CTID -p -H``) and the probe's own.  A zombie's parent is described too.

The section follows the query frames (:mod:`.command`)::

    @@cockpit-gpu procs
    @@cockpit-gpu init 0
    | 91200
    @@cockpit-gpu pid 91200
    | Name:\\tinit
    | State:\\tS (sleeping)
    | PPid:\\t91190
    | Threads:\\t1
    | NSpid:\\t91200\\t1
    | cg 0::/lxc/200/ns/init.scope
    @@cockpit-gpu pid 91451
    | gone
    @@cockpit-gpu ns
    /proc/self/ns/pid 4026531836
    /proc/91200/ns/pid 4026532611
    @@cockpit-gpu end

Every line a process can influence (its name, its cgroup path) is prefixed ``| ``, and only the
first cgroup line is believed (a container's root may name its own cgroups, newlines included,
but only below the path the host gave it).  :func:`parse_proc_sections` never raises.

:func:`fdscan_command` is the fallback inside the target when the host cannot be asked: the
processes with ``/dev/nvidia*`` open (no per-process memory), read by :func:`parse_fdscan`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from ..text import to_text
from .mark import MARK

__all__ = ["PidInfo", "PidTable", "describe_section", "parse_proc_sections", "fdscan_command", "parse_fdscan",
           "container_of_cgroup"]

#: at most this many pid entries are read from one output (the command describes at most 64 + parents)
MAX_PIDS = 256
_LINE_MAX = 4096


@dataclass
class PidInfo:
    """One pid's ``/proc`` entry as the host saw it (``exists=False``: no such process)."""

    pid: int
    exists: bool = True
    name: str | None = None
    state: str | None = None  # the letter: R S D Z T I X
    ppid: int | None = None
    threads: int | None = None
    nspid: tuple[int, ...] = ()
    cgroup: str | None = None  # the path of the first line of /proc/PID/cgroup
    ns: int | None = None  # inode of /proc/PID/ns/pid

    @property
    def stat(self) -> str:
        """``ps``-like: ``Zl`` for a zombie leader whose threads live on."""
        if not self.exists:
            return "gone"
        return (self.state or "?") + ("l" if (self.threads or 0) > 1 else "")


@dataclass
class PidTable:
    """The section's content: the described pids, the container's init, the probe's own namespace."""

    pids: dict[int, PidInfo] = field(default_factory=dict)
    init_pid: int | None = None
    init_error: str | None = None  # why the container's init is not known (lxc-info's words)
    init_asked: bool = False
    self_ns: int | None = None

    @property
    def init(self) -> PidInfo | None:
        return self.pids.get(self.init_pid) if self.init_pid is not None else None


def describe_section(container: int | None, lxc_info: str = "lxc-info") -> str:
    """Shell code (after the queries, with ``$_cg_pids`` collected) that prints the section."""
    init = ""
    if container is not None:
        init = (
            f"_cg_i=$({shlex.quote(lxc_info)} -n {int(container)} -p -H 2>&1); echo \"{MARK} init $?\"; "
            "printf '%s\\n' \"$_cg_i\" | while IFS= read -r _cg_l; do printf '| %.200s\\n' \"$_cg_l\"; done; "
            "case $_cg_i in ''|*[!0-9]*) _cg_i=;; esac; "
        )
    return (
        f"echo '{MARK} procs'; _cg_i=; _cg_z=; _cg_ns=; {init}"
        "_cg_d() { echo \"" + MARK + " pid $1\"; _cg_ns=\"$_cg_ns /proc/$1/ns/pid\"; "
        "if [ -r /proc/$1/status ]; then _cg_pp=; _cg_zz=; "
        "while IFS= read -r _cg_l; do case $_cg_l in "
        "Name:*|State:*|Threads:*|NSpid:*) printf '| %s\\n' \"$_cg_l\";; "
        "PPid:*) printf '| %s\\n' \"$_cg_l\"; _cg_pp=${_cg_l#PPid:}; _cg_pp=${_cg_pp#\"${_cg_pp%%[0-9]*}\"};; esac; "
        "case $_cg_l in State:*Z*) _cg_zz=1;; esac; done </proc/$1/status; "
        "[ -n \"$_cg_zz\" ] && [ -n \"$_cg_pp\" ] && _cg_z=\"$_cg_z $_cg_pp\"; "
        "[ -r /proc/$1/cgroup ] && while IFS= read -r _cg_l || [ -n \"$_cg_l\" ]; do printf '| cg %.1000s\\n' \"$_cg_l\"; "
        "done </proc/$1/cgroup; else echo '| gone'; fi; }; "
        "for _cg_x in $_cg_i $_cg_pids; do _cg_d $_cg_x; done; "
        "for _cg_x in $_cg_z; do case \" $_cg_i $_cg_pids \" in *\" $_cg_x \"*) ;; *) _cg_d $_cg_x;; esac; done; "
        f"echo '{MARK} ns'; stat -L -c '%n %i' /proc/self/ns/pid $_cg_ns 2>/dev/null; echo '{MARK} end'; "
    )


_PID_LINE = re.compile(rf"^{MARK} pid (\d{{1,10}})\s*$")
_INIT_LINE = re.compile(rf"^{MARK} init (-?\d{{1,5}})\s*$")
_NS_LINE = re.compile(r"^/proc/(\d{1,10}|self)/ns/pid (\d{1,20})\s*$")
_CG_PATH = re.compile(r"^\d+:[^:]*:(/.*)$")


def _ints(text: str, limit: int = 16) -> tuple[int, ...]:
    out = []
    for word in text.split()[:limit]:
        if not word.isdigit() or len(word) > 10:
            return ()
        out.append(int(word))
    return tuple(out)


def _status_line(info: PidInfo, line: str) -> None:
    if line.startswith("cg "):
        if info.cgroup is None:  # only the first line: what follows may be a tenant's own cgroup names
            m = _CG_PATH.match(line[3:].strip())
            info.cgroup = m.group(1)[:1000] if m else ""
        return
    key, _, value = line.partition(":")
    value = value.strip()
    if key == "Name":
        info.name = value[:64]
    elif key == "State":
        info.state = value[:1] if value[:1].isalpha() else None
    elif key == "PPid" and value.isdigit() and len(value) <= 10:
        info.ppid = int(value)
    elif key == "Threads" and value.isdigit() and len(value) <= 10:
        info.threads = int(value)
    elif key == "NSpid":
        info.nspid = _ints(value)


def parse_proc_sections(text: str | bytes | None) -> PidTable | None:
    """The ``procs`` section of a probe's output (None when there is none); never raises."""
    out = to_text(text)
    start = out.find(f"{MARK} procs")
    if start < 0:
        return None
    table = PidTable()
    info: PidInfo | None = None
    section = ""
    for raw in out[start:].splitlines()[1:]:
        line = raw[:_LINE_MAX]
        if line.startswith(MARK):
            info, section = None, ""
            m = _PID_LINE.match(line)
            if m and len(table.pids) < MAX_PIDS:
                pid = int(m.group(1))
                info = table.pids.setdefault(pid, PidInfo(pid))
                section = "pid"
            elif (m := _INIT_LINE.match(line)) is not None:
                table.init_asked, section = True, f"init {m.group(1)}"
            elif line.rstrip() == f"{MARK} ns":
                section = "ns"
            elif line.rstrip() == f"{MARK} end":
                break
            continue
        if section.startswith("init"):
            value = line[2:].strip() if line.startswith("| ") else ""
            if section == "init 0" and value.isdigit() and len(value) <= 10 and table.init_pid is None:
                table.init_pid = int(value)
            elif value and table.init_error is None:
                table.init_error = value[:200]
        elif section == "ns":
            m = _NS_LINE.match(line)
            if m:
                who, inode = m.group(1), int(m.group(2))
                if who == "self":
                    table.self_ns = inode
                elif int(who) in table.pids:
                    table.pids[int(who)].ns = inode
        elif section == "pid" and info is not None and line.startswith("| "):
            body = line[2:]
            if body.strip() == "gone":
                info.exists = False
            else:
                _status_line(info, body)
    if table.init_asked and table.init_pid is None and table.init_error is None:
        table.init_error = "the container is not running (lxc-info printed no pid)"
    return table


_LXC_CG = re.compile(r"^/lxc(?:/|\.payload\.?)(\d{3,9})(?:/|$)")
_DOCKER_CG = re.compile(r"(?:^/docker/|/docker-)([0-9a-f]{12,64})(?:\.scope)?(?:/|$)")


def container_of_cgroup(path: str | None) -> tuple[str, str] | None:
    """``("lxc", "200")`` for Proxmox's ``/lxc/200/ns/…`` (and LXC's ``/lxc.payload.200/…``),
    ``("docker", "3f2a…")`` for Docker's cgroups, None for anything else."""
    if not path:
        return None
    m = _LXC_CG.match(path)
    if m:
        return ("lxc", m.group(1))
    m = _DOCKER_CG.search(path)
    if m:
        return ("docker", m.group(1)[:12])
    return None


FDSCAN_MARK = f"{MARK} fdscan"


def fdscan_command() -> str:
    """The processes of this PID namespace with ``/dev/nvidia*`` open (one ``ls`` over every
    ``/proc/PID/fd``; a zombie leader's fds live in its threads': ``/proc/PID/task/*/fd``).
    A directory is named only before its first ``/dev/nvidia*`` line: a real host's scan named
    all of its 191 processes to find the one holder, on every GPU refresh of a container."""
    return (
        "_cg_fd() { ls -l \"$@\" 2>/dev/null | { _cg_dd=; while IFS= read -r _cg_l; do case $_cg_l in "
        "/proc/*:) _cg_dd=$_cg_l;; *' -> /dev/nvidia'*) [ -n \"$_cg_dd\" ] && printf '| dir %.100s\\n' \"$_cg_dd\"; _cg_dd=; "
        "printf '| fd %.100s\\n' \"${_cg_l##* -> }\";; "
        "esac; done; }; }; "
        f"echo '{FDSCAN_MARK}'; _cg_fd /proc/[0-9]*/fd; _cg_t=; "
        "for _cg_s in /proc/[0-9]*/stat; do _cg_l=; read -r _cg_l <$_cg_s 2>/dev/null || continue; "
        "case ${_cg_l##*) } in Z*) _cg_t=\"$_cg_t ${_cg_s%/stat}/task/[0-9]*/fd\";; esac; done; "
        "[ -n \"$_cg_t\" ] && _cg_fd /proc/$$/fd $_cg_t; "
        f"echo '{MARK} end'; true"
    )


_FD_DIR = re.compile(r"^/proc/(\d{1,10})/(?:task/\d{1,10}/)?fd:$")
_FD_DEV = re.compile(r"^/dev/(nvidia[\w-]{0,40})$")


def parse_fdscan(text: str | bytes | None) -> dict[int, list[str]] | None:
    """pid → the ``/dev/nvidia*`` devices it has open (``nvidia0``, ``nvidiactl``…), from
    :func:`fdscan_command`'s output; None when the scan did not run.  Never raises."""
    out = to_text(text)
    if FDSCAN_MARK not in out:
        return None
    holders: dict[int, list[str]] = {}
    pid: int | None = None
    for raw in out[out.find(FDSCAN_MARK):].splitlines()[1:]:
        if raw.startswith(f"{MARK} end"):
            break
        if raw.startswith("| dir "):
            m = _FD_DIR.match(raw[6:].strip())
            pid = int(m.group(1)) if m else None
        elif raw.startswith("| fd ") and pid is not None:
            m = _FD_DEV.match(raw[5:].strip())
            if m and (pid in holders or len(holders) < MAX_PIDS):
                devs = holders.setdefault(pid, [])
                if m.group(1) not in devs and len(devs) < 32:
                    devs.append(m.group(1))
    return holders
