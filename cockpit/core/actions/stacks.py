"""Where every thread of the job is: ``py-spy dump`` inside the target, or the kernel's view.

A hang leaves one piece of evidence: where each thread waits.  :func:`dump_stacks` runs, inside
the target, for each of the job's processes (the supervisor's child and its descendants):

* ``py-spy dump --nonblocking --pid PID`` under ``timeout`` when py-spy is there (``[job] py_spy``,
  or ``py-spy`` on the target's PATH): every thread's Python stack, without stopping the job;
* otherwise, and for the kernel side, ``/proc/PID/task/*/{comm,wchan,stat}``: each thread's name,
  state and kernel wait channel (``futex_wait_queue`` for a lock, ``pipe_read``, an ``nv…``
  function for the GPU driver).  cockpit then says how to install py-spy.

:class:`StackDump` groups identical stacks ("2 threads waiting in ``first (train.py:12)``") and
renders as text for the TUI, the journal (``stacks`` event) and ``history --markdown``.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from ..text import LINE_CAP, sanitize
from .base import ActionContext
from .jobrecord import JobRecord
from .jobstate import parse_state, state_command
from .survivors import follow_survivors

__all__ = ["StackDump", "ThreadStack", "dump_stacks", "parse_py_spy", "INSTALL_HINT"]

INSTALL_HINT = "install py-spy in the target (pip install py-spy) or set [job] py_spy to its path for Python stacks"
_THREAD = re.compile(r'^Thread (?P<tid>\d+) \((?P<state>[^)]*)\): "(?P<name>[^"]*)"')


@dataclass
class ThreadStack:
    pid: int
    tid: int
    name: str
    state: str
    frames: list[str] = field(default_factory=list)
    wchan: str = ""

    def key(self) -> tuple[str, ...]:
        return tuple(self.frames) if self.frames else (f"[kernel] {self.state} {self.wchan}",)


@dataclass
class StackDump:
    """Every thread's stack, as taken at ``at`` with ``method`` (``py-spy`` or ``proc``)."""

    method: str
    at: float
    threads: list[ThreadStack] = field(default_factory=list)
    note: str = ""

    def groups(self) -> list[tuple[tuple[str, ...], list[ThreadStack]]]:
        """Threads with identical stacks together, the biggest group first."""
        out: dict[tuple[str, ...], list[ThreadStack]] = {}
        for t in self.threads:
            out.setdefault(t.key(), []).append(t)
        return sorted(out.items(), key=lambda kv: -len(kv[1]))

    def summary(self) -> str:
        parts = []
        for key, ts in self.groups()[:4]:
            where = key[0] if key else "?"
            parts.append(f"{len(ts)} thread{'s' if len(ts) > 1 else ''} in {where}")
        return "; ".join(parts) or "no thread found"

    def text(self) -> str:
        lines = [f"stacks by {self.method} at {time.strftime('%H:%M:%S', time.localtime(self.at))}: {self.summary()}"]
        if self.note:
            lines.append(self.note)
        for key, ts in self.groups():
            names = ", ".join(f"{t.name or t.tid} ({t.state}{', ' + t.wchan if t.wchan else ''})" for t in ts)
            lines.append("")
            lines.append(f"{len(ts)} × {names}")
            lines += [f"    {f}" for f in key]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "at": self.at, "summary": self.summary(), "note": self.note, "text": self.text(),
                "threads": [{"pid": t.pid, "tid": t.tid, "name": t.name, "state": t.state, "wchan": t.wchan, "frames": t.frames}
                            for t in self.threads]}


def parse_py_spy(pid: int, text: str) -> list[ThreadStack]:
    """``py-spy dump`` output → threads (innermost frame first, as py-spy prints them)."""
    threads: list[ThreadStack] = []
    for line in sanitize(text, LINE_CAP, newlines=True).split("\n"):  # the job's text is data
        m = _THREAD.match(line)
        if m:
            threads.append(ThreadStack(pid, int(m["tid"]), m["name"], m["state"]))
        elif threads and line.startswith("    ") and line.strip():
            threads[-1].frames.append(line.strip())
    return threads


def _parse_proc(text: str) -> list[ThreadStack]:
    """``@@t PID TID`` blocks of comm, wchan and stat → threads (kernel view only)."""
    out: list[ThreadStack] = []
    for block in sanitize(text, LINE_CAP, newlines=True).split("@@t ")[1:]:
        lines = block.split("\n")
        head = lines[0].split()
        if len(head) != 2 or not all(h.isdigit() for h in head):
            continue
        comm = lines[1].strip() if len(lines) > 1 else ""
        wchan = lines[2].strip() if len(lines) > 2 else ""
        stat = lines[3] if len(lines) > 3 else ""
        state = stat[stat.rfind(")") + 2:].split(" ", 1)[0] if ")" in stat else "?"
        out.append(ThreadStack(int(head[0]), int(head[1]), comm, state, wchan="" if wchan == "0" else wchan))
    return out


async def dump_stacks(ctx: ActionContext, job: JobRecord, *, timeout: float = 10.0) -> StackDump:
    """Every thread of the job's processes (see the module doc); never stops the job."""
    res = await ctx.run(state_command(job, -1), timeout=10)
    st = parse_state(res.stdout, job)
    # a launcher that exited leaves its trainer outside the supervisor's tree: the job's group is read
    # as every other reader of the job reads it (the supervisor may still show for a moment)
    await follow_survivors(ctx, job, st)
    sup = st.supervisor.pid if st.supervisor else None
    pids = [m.pid for m in st.members if m.pid != sup and not m.state.startswith("Z")] or ([st.leader.pid] if st.leader else [])
    dump = StackDump("proc", time.time())
    if not pids:
        dump.note = "no live process of the job to dump"
        return dump
    q = shlex.quote
    spy = ctx.cfg.job.py_spy or "py-spy"
    found = await ctx.run(f"command -v {q(spy)} 2>/dev/null || {{ [ -x {q(spy)} ] && echo {q(spy)}; }}", timeout=5)
    exe = found.text.strip().splitlines()[0] if found.text.strip() else ""
    if exe:
        dump.method = "py-spy"
        for pid in pids:
            r = await ctx.run(f"timeout {timeout:g} {q(exe)} dump --nonblocking --pid {int(pid)} 2>&1", timeout=timeout + 5)
            threads = parse_py_spy(pid, r.text)
            if threads:
                dump.threads += threads
            elif r.text.strip():
                dump.note += f"py-spy on pid {pid}: {sanitize(r.text.strip().splitlines()[-1][:200])}\n"
    kernel = await ctx.run(" ".join(
        f"for t in /proc/{int(p)}/task/[0-9]*; do echo \"@@t {int(p)} ${{t##*/}}\"; cat $t/comm $t/wchan 2>/dev/null; echo; cat $t/stat 2>/dev/null; done;"
        for p in pids), timeout=10)
    ktids = {(t.pid, t.tid): t for t in _parse_proc(kernel.text)}
    if dump.threads:
        for t in dump.threads:
            k = ktids.get((t.pid, t.tid))
            if k is not None:
                t.wchan = k.wchan
        dump.note = ""  # a wrapper shell py-spy cannot read is no news once the Python process is dumped
    else:
        dump.method = "proc"
        dump.threads = list(ktids.values())
        if not exe:
            dump.note = (dump.note + INSTALL_HINT).strip()
    dump.note = dump.note.strip()
    return dump
