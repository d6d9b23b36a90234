"""A Slurm job as it is now: :class:`SlurmState` (a :class:`~..actions.jobstate.JobState` whose
life is the scheduler's), read by :class:`SlurmReader` with *one* command through the session:
``scontrol show job -o ID`` (state, reason, exit code, nodes, run time), ``squeue`` of the pending
jobs (the queue position), and the log's size and new bytes from the shared output file.

``scontrol`` answers for a job until ``MinJobAge`` after its end, which covers verify and the fate
follower.  Once it no longer knows the job, ``sacct`` is asked in the same command (its state, exit
code, elapsed time and nodes, ``source: sacct`` in the evidence) where the cluster keeps accounting;
where it does not (``Slurm accounting storage is disabled``), the job is ``vanished`` and the
evidence says accounting is off."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..actions.causebase import Cause, _when
from ..actions.jobrecord import JobRecord
from ..actions.jobstate import JobReader, JobState, LogScan, parse_state
from ..layers import Layer
from ..procstat import ProcStat
from .scontrol import (
    ENDED_BY,
    NO_ACCOUNTING,
    QUEUED,
    RUNNING,
    SACCT_FIELDS,
    TERMINAL,
    SlurmJob,
    accounting_off,
    blocked_reason,
    parse_job_line,
    parse_sacct_all,
)

__all__ = ["SlurmState", "SlurmReader", "slurm_cmd"]


def slurm_cmd(cfg: Any, name: str) -> str:
    """``sbatch`` … as the login node runs it: from ``[slurm] bin`` when set, else the PATH."""
    b = cfg.slurm.bin.rstrip("/")
    return shlex.quote(f"{b}/{name}" if b else name)


def _epoch(stamp: str, now_local: str, remote_now: float | None) -> float | None:
    """A Slurm time (login node's local time, ``2026-12-02T15:59:24``) as seconds since the epoch."""
    if remote_now is None:
        return None
    try:
        t, n = datetime.fromisoformat(stamp), datetime.fromisoformat(now_local)
    except ValueError:
        return None
    return remote_now - (n - t).total_seconds()


@dataclass
class SlurmState(JobState):
    slurm: SlurmJob | None = None

    @property
    def leader(self) -> ProcStat | None:
        return None  # its processes live on the compute nodes

    @property
    def spawned(self) -> bool:
        return self.slurm is not None

    @property
    def queued(self) -> bool:
        return self.slurm is not None and self.slurm.known and self.slurm.state in QUEUED

    @property
    def alive(self) -> bool:
        return self.slurm is not None and self.slurm.known and self.slurm.state in RUNNING

    @property
    def exited(self) -> bool:
        return self.slurm is not None and (not self.slurm.known or self.slurm.state in TERMINAL)

    @property
    def rebooted_since(self) -> bool:
        return False

    def describe(self) -> str:
        return self.slurm.describe() if self.slurm is not None else "no Slurm job"

    def identity(self, job: JobRecord) -> str:
        return f"Slurm job {job.sched_id}" + (f" ({self.slurm.state})" if self.slurm is not None and self.slurm.state else "")

    def scheduler_evidence(self) -> dict[str, Any]:
        if self.slurm is None:
            return {}
        d: dict[str, Any] = {"slurm": self.slurm.evidence()}
        blocked = blocked_reason(self.slurm.reason) if self.queued else None
        if blocked is not None:
            d["blocked"] = [blocked[0].value, blocked[1]]
        return d

    def scheduler_cause(self, job: JobRecord, scan: LogScan) -> Any:
        sj = self.slurm
        if sj is None:
            return None
        after, when = _when(job, self, scan)
        data = {"exit_code": self.exit_code, "first_error": scan.error(), "final_error": scan.final_error(),
                "last_progress": scan.last_progress, "after_s": after, **self.scheduler_evidence()}
        if not sj.known:
            return Cause(Layer.PROCESS, f"{sj.describe()}: it ended more than MinJobAge ago (and the cluster keeps no accounting for sacct)",
                         "sacct -j JOBID where the cluster has accounting", data, "vanished", after, when)
        ended = ENDED_BY.get(sj.state)
        if ended is None:
            return None  # FAILED, COMPLETED: the exit code and the log tell the rest, as for any job
        layer, what, advice = ended
        # cancelled (by cockpit's stop, or by someone's scancel) is a job stopped, not one that died of itself
        return Cause(layer, f"{what}: {sj.describe()}", advice, data, "stopped" if sj.state == "CANCELLED" else "died", after, when)


class SlurmReader(JobReader):
    """Reads a Slurm job again and again (see the module doc); the log scan is the same as any job's."""

    def command(self, offset: int) -> str:
        q, job, cfg = shlex.quote, self.job, self.ctx.cfg
        log = q(job.log_path)
        tail = (f"tail -c +{offset + 1} {log} 2>/dev/null | head -c {1 << 20}" if offset >= 0 else f"tail -c {-offset} {log} 2>/dev/null")
        return (
            f"_ck_j=$({slurm_cmd(cfg, 'scontrol')} show job -o {q(job.sched_id)} 2>&1 | head -n 1); echo \"job=$_ck_j\"; "
            f"{self._sacct_part()}"
            f"echo \"queue=$({slurm_cmd(cfg, 'squeue')} -h -t PENDING -o '%i,%P' --sort=-p,i 2>/dev/null | tr '\\n' ' ')\"; "
            f"if [ -e {log} ]; then echo \"size=$(wc -c < {log})\"; echo \"log_mtime=$(stat -c %Y {log})\"; else echo size=-1; fi; "
            "echo \"now=$(date +%s)\"; echo \"now_local=$(date +%Y-%m-%dT%H:%M:%S)\"; echo @@stat; "
            f"echo @@log; {tail}"
        )

    def _sacct_part(self) -> str:
        """Ended, or aged out of scontrol (MinJobAge): the accounting's record (state, exit code,
        elapsed, MaxRSS of its steps), where the cluster keeps one.  Once sacct has said there is no
        accounting, it is not asked again by this reader."""
        if getattr(self, "no_accounting", False):
            return ""
        q, cfg = shlex.quote, self.ctx.cfg
        return (f"case $_ck_j in *' JobState=PENDING '*|*' JobState=RUNNING '*|*' JobState=CONFIGURING '*) ;; "
                f"*) echo \"acct=$({slurm_cmd(cfg, 'sacct')} -j {q(self.job.sched_id)} -n -P -o {SACCT_FIELDS} 2>&1 "
                "| head -n 20 | tr '\\n' ';')\";; esac; ")

    def parse(self, out: bytes) -> JobState:
        base = parse_state(out, self.job)
        st = SlurmState(**{f.name: getattr(base, f.name) for f in dataclasses.fields(JobState)})
        if not st.parsed:
            return st
        head = out.partition(b"\n@@stat\n")[0].decode("utf-8", "replace")
        kv = dict(line.partition("=")[::2] for line in head.splitlines())
        line, jid = kv.get("job", "").strip(), self.job.sched_id
        acct = kv.get("acct", "").strip()
        from_acct = parse_sacct_all(acct, jid) if acct else None
        if acct and accounting_off(acct):
            self.no_accounting = True  # silently scontrol and squeue from now on; the evidence says it
        if "JobId=" in line:
            sj = SlurmJob(jid, parse_job_line(line), sacct=from_acct or {})
        elif from_acct is not None:
            sj = SlurmJob(jid, from_acct)
        else:
            why = line + ("; sacct: the cluster keeps no accounting" if getattr(self, "no_accounting", False)
                          else (f"; sacct: {acct.rstrip(';')}" if acct else ""))
            sj = SlurmJob(jid, known=False, error=why)
        if getattr(self, "no_accounting", False):
            sj.accounting = NO_ACCOUNTING
        if sj.known and sj.state in QUEUED:
            part = sj.fields.get("Partition", "")
            ids = [w.split(",")[0] for w in kv.get("queue", "").split() if w.split(",")[-1] == part or not part]
            if jid in ids:
                sj.position, sj.queued_total = ids.index(jid) + 1, len(ids)
        st.slurm = sj
        st.pid_text = jid
        if sj.known and sj.state in TERMINAL:
            st.exit_code = sj.exit_status
            st.exit_at = _epoch(sj.fields.get("EndTime", ""), kv.get("now_local", "").strip(), st.remote_now)
        return st
