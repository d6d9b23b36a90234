"""Slurm's own words, read: ``scontrol show job -o`` parsed, its states and pending reasons sorted
into what cockpit does with them (see :mod:`cockpit.core.slurm`).  Pure functions, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..layers import Layer

__all__ = ["SlurmJob", "parse_job_line", "QUEUED", "RUNNING", "TERMINAL", "ENDED_BY", "blocked_reason", "parse_exit",
           "parse_sacct", "parse_sacct_all", "rss_kib", "SACCT_FIELDS", "accounting_off", "NO_ACCOUNTING"]

#: waiting for resources or a start: the job was never tried (queued is never failed)
QUEUED = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED", "STOPPED", "CONFIGURING"})
#: running (COMPLETING: the batch script ended and Slurm is cleaning up: its end state follows)
RUNNING = frozenset({"RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING"})
TERMINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
                      "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})

#: a job ended by something other than its own code: (layer, what happened, advice)
ENDED_BY: dict[str, tuple[Layer, str, str]] = {
    "NODE_FAIL": (Layer.HOST, "a node of the job failed (NODE_FAIL)", "ask the cluster's admins about the node; sinfo -R lists why nodes are down"),
    "BOOT_FAIL": (Layer.HOST, "its nodes failed to boot (BOOT_FAIL)", "the cluster could not start the nodes: sinfo -R"),
    "OUT_OF_MEMORY": (Layer.CONTAINER, "killed for using more memory than it asked for (OUT_OF_MEMORY)",
                      "ask for more memory (extra_args = [\"--mem=…\"]) or lower the batch size"),
    "TIMEOUT": (Layer.PROCESS, "hit its time limit (TIMEOUT)", "raise [slurm] time, or checkpoint and resume"),
    "DEADLINE": (Layer.PROCESS, "reached its --deadline (DEADLINE)", "remove or move the deadline"),
    "PREEMPTED": (Layer.PROCESS, "preempted by a higher-priority job (PREEMPTED)", "use a partition or QOS that is not preemptible, or requeue"),
    "CANCELLED": (Layer.PROCESS, "cancelled (CANCELLED): scancel, by someone or by the cluster", "who cancelled it? scontrol show job, or the cluster's admins"),
    "REVOKED": (Layer.PROCESS, "revoked by the federation (REVOKED)", ""),
}

#: pending reasons that mean the job cannot start as things are (not just "wait your turn")
_HOST_REASONS = ("ReqNodeNotAvail", "Nodes_required_for_job_are_DOWN", "NodeDown", "PartitionDown", "PartitionInactive",
                 "launch_failed_requeued_held", "BurstBufferStageIn")
_CONFIG_REASONS = ("BadConstraints", "PartitionNodeLimit", "PartitionTimeLimit", "PartitionConfig", "InvalidAccount", "InvalidQOS",
                   "AccountNotAllowed", "QOSNotAllowed", "ReqNodeNotAvail_AccountNotAllowed")
_HELD_REASONS = ("JobHeldUser", "JobHeldAdmin")


def blocked_reason(reason: str) -> tuple[Layer, str] | None:
    """A pending reason that means the job cannot start now (layer, advice), or None for a plain wait."""
    r = reason.replace(" ", "_")
    if any(r.startswith(x) for x in _CONFIG_REASONS):
        return Layer.CONFIG, "the request can never be met as written: fix [slurm] (partition, account, time, nodes, gpus)"
    if any(r.startswith(x) for x in _HOST_REASONS):
        return Layer.HOST, "the nodes it needs are drained or down: sinfo -R says why; another partition, or ask the admins"
    if any(r.startswith(x) for x in _HELD_REASONS):
        return Layer.PROCESS, "the job is held: scontrol release JOBID"
    return None


_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")


def parse_job_line(line: str) -> dict[str, str]:
    """``Key=value`` pairs of one ``scontrol show job -o`` line (a value may hold spaces: Reason, paths)."""
    out: dict[str, str] = {}
    marks = list(_KEY.finditer(line))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(line)
        out.setdefault(m.group(1), line[m.end():end].strip())
    return out


#: what ``sacct -n -P -o …`` is asked for (``|``-separated, no header; the allocation's line, then its steps')
SACCT_FIELDS = "JobID,State,ExitCode,Elapsed,NodeList,MaxRSS"
_ACCOUNTING_OFF = ("accounting storage is disabled", "not running a supported accounting_storage plugin",
                   "slurmdbd: connection refused", "unable to contact slurmdbd")


#: said once in the evidence of a cluster whose sacct has nothing (the lab's)
NO_ACCOUNTING = "none: sacct says the cluster keeps no accounting (Slurm accounting storage is disabled); read from scontrol and squeue"


def accounting_off(text: str) -> bool:
    """sacct's answer on a cluster without accounting (``AccountingStorageType=accounting_storage/none``)."""
    low = text.lower()
    return any(m in low for m in _ACCOUNTING_OFF)


def parse_sacct(line: str, job_id: str) -> dict[str, str] | None:
    """One ``sacct -n -P -o JobID,State,ExitCode,Elapsed,NodeList[,…]`` line as scontrol's field
    names (``JobState``, ``ExitCode``, ``RunTime``, ``NodeList``), ``source = sacct``; None when it
    is not this job's line (an error, accounting off, nothing)."""
    parts = line.strip().split("|")
    if len(parts) < 5 or parts[0].split(".")[0] != job_id:
        return None
    state = parts[1].split()[0] if parts[1].split() else ""  # "CANCELLED by 1000" → CANCELLED
    if not state.isupper():
        return None
    return {"JobId": job_id, "JobState": state, "ExitCode": parts[2], "RunTime": parts[3], "NodeList": parts[4],
            "Reason": "None", "source": "sacct"}


_RSS_UNITS = {"K": 1, "M": 1024, "G": 1024 ** 2, "T": 1024 ** 3}


def rss_kib(text: str) -> int | None:
    """sacct's ``MaxRSS`` (``1532K``, ``14.50G``, ``0``) in KiB; None when it says nothing."""
    t = text.strip()
    if not t:
        return None
    unit = _RSS_UNITS.get(t[-1].upper())
    num = t[:-1] if unit else t
    try:
        return int(float(num) * (unit or 1 / 1024))  # no unit: bytes
    except ValueError:
        return None


def parse_sacct_all(text: str, job_id: str) -> dict[str, str] | None:
    """``sacct -j ID -n -P -o JobID,State,ExitCode,Elapsed,NodeList,MaxRSS`` (its lines joined by
    ``;`` or newlines): the allocation's line as :func:`parse_sacct` reads it, with ``MaxRSS`` the
    largest of its steps' (``ID.batch``, ``ID.0``…: the allocation's own line leaves it empty)."""
    lines = [x for x in re.split(r"[;\n]", text) if x.strip()]
    base = next((parse_sacct(x, job_id) for x in lines if x.split("|")[0].strip() == job_id), None)
    if base is None:
        return None
    rss = [k for x in lines if x.split("|")[0].split(".")[0] == job_id and len(x.split("|")) > 5
           for k in [rss_kib(x.split("|")[5])] if k is not None]
    if rss:
        base["MaxRSS"], base["max_rss_kib"] = f"{max(rss)}K", str(max(rss))
    return base


def parse_exit(text: str) -> tuple[int | None, int]:
    """``ExitCode=1:0`` → (1, 0); ``0:15`` → (0, 15) (code, signal); bad text → (None, 0)."""
    code, _, sig = text.partition(":")
    if not code.strip().isdigit():
        return None, 0
    return int(code), int(sig) if sig.strip().isdigit() else 0


@dataclass
class SlurmJob:
    """One job as ``scontrol show job -o`` (and ``squeue``, for the queue position) described it."""

    job_id: str
    fields: dict[str, str] = field(default_factory=dict)
    known: bool = True
    #: 1-based position among the partition's pending jobs (None unless pending)
    position: int | None = None
    queued_total: int = 0
    error: str = ""
    #: sacct's word on a job that has ended, where the cluster keeps accounting (:func:`parse_sacct_all`)
    sacct: dict[str, str] = field(default_factory=dict)
    #: "" or :data:`NO_ACCOUNTING`
    accounting: str = ""

    @property
    def state(self) -> str:
        return self.fields.get("JobState", "")

    @property
    def reason(self) -> str:
        r = self.fields.get("Reason", "")
        return "" if r in ("None", "(null)") else r

    @property
    def nodes(self) -> str:
        n = self.fields.get("NodeList", "")
        return "" if n in ("(null)", "None") else n

    @property
    def exit(self) -> tuple[int | None, int]:
        return parse_exit(self.fields.get("ExitCode", ""))

    @property
    def exit_status(self) -> int | None:
        """A shell-style status: the code, or 128+signal when a signal ended it."""
        code, sig = self.exit
        if code is None:
            return None
        return 128 + sig if sig and code == 0 else code

    def evidence(self) -> dict[str, Any]:
        f = self.fields
        return {"job_id": self.job_id, "state": self.state, "reason": self.reason, "exit_code": f.get("ExitCode"),
                "nodes": self.nodes, "run_time": f.get("RunTime"), "time_limit": f.get("TimeLimit"),
                "partition": f.get("Partition"), "position": self.position, "source": f.get("source", "scontrol"),
                **({"max_rss": f["MaxRSS"]} if f.get("MaxRSS") else {}),
                **({"sacct": {"state": a.get("JobState"), "exit_code": a.get("ExitCode"), "elapsed": a.get("RunTime"),
                              **({"max_rss": a["MaxRSS"]} if a.get("MaxRSS") else {})}} if (a := self.sacct) else {}),
                **({"accounting": self.accounting} if self.accounting else {})}

    def describe(self) -> str:
        if not self.known:
            return f"Slurm job {self.job_id} is unknown to scontrol" + (f" ({self.error})" if self.error else "")
        s = f"Slurm job {self.job_id} {self.state}"
        if self.state in QUEUED:
            s += f" ({self.reason or 'no reason given'})"
            if self.position is not None:
                s += f", position {self.position} of {self.queued_total} pending in {self.fields.get('Partition', '?')}"
        else:
            if self.nodes:
                s += f" on {self.nodes}"
            if self.fields.get("RunTime"):
                s += f", run time {self.fields['RunTime']}"
            if self.state in TERMINAL:
                s += f", ExitCode={self.fields.get('ExitCode', '?')}"
        return s
