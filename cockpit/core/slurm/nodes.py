"""The job's processes on its nodes: one step per node through ``srun --overlap``.

The login node runs none of the job, so the process pane of a Slurm target asks each allocated
node (``squeue -h -j ID -t RUNNING -o %N``, expanded by ``scontrol show hostnames``) with a step
that overlaps the job's own (``srun --jobid=ID --overlap -N1 -n1 -w NODE``, so it needs no free
resources): ``scontrol listpids ID`` there (the job's pids on that node; where slurmstepd does not
answer it, the descendants of the job's ``slurmstepd: [ID.…]`` processes) and the usual probe.  One command, through the login node's session; a node that
cannot be reached (srun fails: the node is down or drained) is named in a finding with its layer
(``host``) and what ``scontrol show node`` says of it (``State=DOWN+NOT_RESPONDING``, its
``Reason``), never hidden.  The GPUs are asked the same way on each node (:mod:`.gpus`).  A job that is not running (queued, ended) has no node to ask.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..layers import Finding, Layer, Severity
from ..probes.procs import PS_COMMAND, Proc, ProcTree, parse_ps
from .scontrol import parse_job_line
from .state import slurm_cmd

__all__ = ["NodeProcs", "node_procs_command", "parse_node_procs", "node_findings", "MARK"]

MARK = "@@cockpit-node"
_LINE = re.compile(rf"^{MARK} (node|pids|ps|failed|none)(?: (\S+))?(?: (-?\d+))?\s*$")


@dataclass
class NodeProcs:
    node: str
    procs: list[Proc] = field(default_factory=list)
    job_pids: set[int] = field(default_factory=set)
    bad_lines: list[str] = field(default_factory=list)
    error: str = ""  # why this node could not be asked ("" when it answered)
    #: ``scontrol show node`` of a node that could not be asked: ``State``, ``Reason``…
    state: dict[str, str] = field(default_factory=dict)

    def state_text(self) -> str:
        """``State=DOWN+NOT_RESPONDING Reason=Not responding`` (what is known), or ""."""
        st, why = self.state.get("State", ""), self.state.get("Reason", "")
        return (f"State={st}" if st else "") + (f" Reason={why}" if why and why != "(null)" else "")


def node_procs_command(cfg: Any, job_id: str, *, timeout: float = 8) -> str:
    q = shlex.quote(job_id)
    on_node = f"{slurm_cmd(cfg, 'scontrol')} listpids {q} 2>/dev/null; echo '{MARK} ps'; {PS_COMMAND}"
    return (
        f"_ck_n=$({slurm_cmd(cfg, 'squeue')} -h -j {q} -t RUNNING -o %N 2>/dev/null); "
        f"if [ -z \"$_ck_n\" ]; then echo '{MARK} none'; else "
        f"for _ck_h in $({slurm_cmd(cfg, 'scontrol')} show hostnames \"$_ck_n\"); do echo \"{MARK} node $_ck_h\"; echo '{MARK} pids'; "
        f"timeout -s KILL {int(timeout)} {slurm_cmd(cfg, 'srun')} --jobid={q} --overlap -N1 -n1 -w \"$_ck_h\" --quiet "
        f"sh -c {shlex.quote(on_node)} 2>&1 || {{ echo \"{MARK} failed $_ck_h $?\"; "
        # what the scheduler says of the node (DOWN, DRAINED, NOT_RESPONDING, and why): named in the finding
        f"echo \"{MARK}-state $({slurm_cmd(cfg, 'scontrol')} show node -o \"$_ck_h\" 2>&1 | head -n 1)\"; }}; done; fi"
    )


def _step_members(procs: list[Proc], job_id: str) -> set[int]:
    """The job's processes where ``scontrol listpids`` names none (it asks slurmstepd, which some
    set-ups do not answer): every descendant of the job's ``slurmstepd: [ID.…]``, but the step
    cockpit's own probe runs in (its shell carries the marker)."""
    tree = ProcTree(procs)
    out: set[int] = set()
    for p in procs:
        if p.args.startswith(f"slurmstepd: [{job_id}."):
            desc = tree.descendants(p.pid)
            if not any(MARK in d.args for d in desc):
                out.update(d.pid for d in desc)
    return out


def parse_node_procs(out: bytes | str, job_id: str = "") -> list[NodeProcs] | None:
    """Each node's processes; None when the job runs on no node now (queued, ended)."""
    text = out.decode("utf-8", "replace") if isinstance(out, bytes) else out
    nodes: list[NodeProcs] = []
    cur: NodeProcs | None = None
    part, pids_lines, ps_lines = "", [], []  # type: ignore[var-annotated]

    def close() -> None:
        if cur is None:
            return
        for line in pids_lines:
            first = line.split()[0] if line.split() else ""
            if first.isdigit():
                cur.job_pids.add(int(first))
        if ps_lines:
            procs, cur.bad_lines = parse_ps("\n".join(ps_lines) + "\n")
            cur.procs = [dataclasses.replace(p, node=cur.node) for p in procs]
            if not cur.job_pids and job_id:
                cur.job_pids = _step_members(cur.procs, job_id)
        elif not cur.error:
            cur.error = "\n".join(pids_lines[-3:]).strip() or "no answer from the node"

    for line in text.splitlines():
        if line.startswith(f"{MARK}-state "):
            if cur is not None:
                cur.state = parse_job_line(line[len(MARK) + 7:])
            continue
        m = _LINE.match(line)
        if m is None:
            (ps_lines if part == "ps" else pids_lines).append(line)
            continue
        what = m.group(1)
        if what == "none":
            return None
        if what == "node":
            close()
            cur, part, pids_lines, ps_lines = NodeProcs(m.group(2) or "?"), "", [], []
            nodes.append(cur)
        elif what in ("pids", "ps"):
            part = what
        elif what == "failed" and cur is not None:
            cur.error = (f"srun to {m.group(2)} failed (exit {m.group(3)})"
                         + (f": {pids_lines[-1].strip()}" if pids_lines and pids_lines[-1].strip() else ""))
            ps_lines = []
    close()
    return nodes


def node_findings(nodes: list[NodeProcs]) -> list[Finding]:
    return [Finding(Layer.HOST, "node-unreachable",
                    f"node {n.node} of the job did not answer: {n.error}" + (f"; scontrol: {n.state_text()}" if n.state_text() else ""),
                    f"check the node: scontrol show node {n.node} (DOWN, DRAINED?) and its slurmd; sinfo -R says why",
                    Severity.ERROR, {"node": n.node, **({"node_state": n.state.get("State", ""), "node_reason": n.state.get("Reason", "")}
                                                       if n.state else {})})
            for n in nodes if n.error]

