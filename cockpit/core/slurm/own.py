"""cockpit's own Slurm jobs of a target, and the fate Slurm gives each of them.

A stop must not act on "the last job" alone: a failed attempt's job can run on (the seed's race:
the drafter threads die, the loop goes on), an attempt can end ``pending`` with its job queued,
and a cockpit can be interrupted after ``sbatch`` answered.  Each of those jobs holds or waits for
the nodes, and the next attempt's job would queue behind them.  So the ids come from the journal
(every id ``sbatch`` gave an attempt of this target, recorded with the launch's ``submit`` stage)
plus the job in hand, and Slurm says which of them are still queued or running
(``squeue -h -j ID,ID… -o %i|%T``): those, and only those, are cancelled, by id.  A job name is
never used to find one: anybody can submit a job called ``cockpit-…``.

The fate of a job that has ended is Slurm's word (:func:`slurm_fate`, from ``scontrol show job``,
else ``sacct``): CANCELLED is ``stopped`` (by cockpit or by someone else: the job did not die of
itself), COMPLETED with exit 0 ``finished``, FAILED / TIMEOUT / NODE_FAIL / OUT_OF_MEMORY / … ``died``
with the Slurm state in the cause, and an id neither scontrol nor sacct knows any more
``vanished``.  The stop records it for every recorded attempt whose story was still open (the
latest :data:`SETTLE_MAX`), so ``history`` never says ``running`` for a job Slurm ended long ago.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..actions.base import ActionContext, StageFailed
from ..actions.jobrecord import JobRecord
from ..fate_record import Fate
from ..journal.records import FINAL_FATES, scheduler_jobs
from ..layers import Layer
from .scontrol import ENDED_BY, QUEUED, RUNNING, SACCT_FIELDS, TERMINAL, SlurmJob, parse_job_line, parse_sacct_all
from .state import slurm_cmd

__all__ = ["OwnJob", "own_jobs", "still_queued", "read_jobs", "slurm_fate", "settle_ended", "record_fate", "describe_ids"]

#: squeue's and scontrol's answer for ids Slurm no longer knows (not a failure: they ended long ago)
_UNKNOWN = re.compile(r"invalid job id", re.I)
#: at most this many ended jobs get their fate read per stop
SETTLE_MAX = 32


@dataclass(frozen=True)
class OwnJob:
    """One job cockpit submitted for this target: its id, its attempt (None: a bare launch)."""

    job_id: str
    attempt: int | None = None
    launched_at: float = 0.0
    #: the attempt's story already has its end (finished, died, stopped, vanished)
    fate_final: bool = False

    @property
    def name(self) -> str:
        return f"{self.job_id} (attempt {self.attempt})" if self.attempt is not None else self.job_id


def own_jobs(ctx: ActionContext, job: JobRecord | None) -> list[OwnJob]:
    """Every Slurm job id cockpit recorded for this target (the journal's, oldest first, then ``job``'s)."""
    out: dict[str, OwnJob] = {}
    journal = ctx.journal
    if journal is not None:
        recs = journal.attempts()
        by_id = {r.attempt: r for r in recs}
        for attempt, sid in scheduler_jobs(recs, "slurm", ctx.cfg.display_name):
            r = by_id[attempt]
            launched = (r.job or {}).get("launched_at")
            out[sid] = OwnJob(sid, attempt, float(launched) if isinstance(launched, (int, float)) else 0.0,
                              bool(r.fate and r.fate.get("state") in FINAL_FATES))
    if job is not None and job.scheduler == "slurm" and job.sched_id and job.sched_id not in out:
        out[job.sched_id] = OwnJob(job.sched_id, job.attempt or None, job.launched_at)
    return list(out.values())


async def still_queued(ctx: ActionContext, ids: list[str]) -> tuple[dict[str, str], Any]:
    """Of ``ids``, those Slurm still has queued or running: ``{id: state}`` in the order of ``ids``
    (one ``squeue`` for all), and the command's evidence.  Raises :class:`StageFailed` (host) when
    squeue cannot answer: then nobody knows whether an old job still holds the nodes."""
    if not ids:
        return {}, None
    res = await ctx.run(f"{slurm_cmd(ctx.cfg, 'squeue')} -h -j {shlex.quote(','.join(ids))} -o '%i|%T' 2>&1", timeout=15)
    text = res.text.strip()
    if res.exit_code != 0:
        if _UNKNOWN.search(text):
            return {}, res.evidence()  # Slurm knows none of them any more: all ended long ago
        raise StageFailed(Layer.HOST, f"squeue could not list cockpit's Slurm jobs {', '.join(ids)}: {text[-300:] or f'exit {res.exit_code}'}",
                          evidence=res.evidence(), advice="is slurmctld reachable from the login node? (scontrol ping)")
    seen: dict[str, str] = {}
    for line in text.splitlines():
        jid, _, state = line.strip().partition("|")
        if jid in ids and state and state not in TERMINAL:
            seen[jid] = state
    return {i: seen[i] for i in ids if i in seen}, res.evidence()


async def read_jobs(ctx: ActionContext, ids: list[str]) -> dict[str, SlurmJob]:
    """Each job as ``scontrol show job -o`` says (``sacct`` for one scontrol no longer knows), in
    one command; a job neither knows is ``known=False`` with their words."""
    if not ids:
        return {}
    q, cfg = shlex.quote, ctx.cfg
    parts = []
    for jid in ids:
        parts.append(
            f"echo @@job {q(jid)}; _ck_j=$({slurm_cmd(cfg, 'scontrol')} show job -o {q(jid)} 2>&1 | head -n 1); echo \"$_ck_j\"; "
            f"case $_ck_j in *JobId=*) ;; *) echo \"acct=$({slurm_cmd(cfg, 'sacct')} -j {q(jid)} -n -P -o {SACCT_FIELDS} 2>&1 "
            "| head -n 20 | tr '\\n' ';')\";; esac")
    res = await ctx.run("; ".join(parts), timeout=10 + 2 * len(ids))
    out: dict[str, SlurmJob] = {}
    for chunk in res.text.split("@@job ")[1:]:
        jid, _, body = chunk.partition("\n")
        jid = jid.strip()
        lines = body.splitlines()
        line = lines[0].strip() if lines else ""
        acct = next((x[5:] for x in lines[1:] if x.startswith("acct=")), "")
        if "JobId=" in line:
            out[jid] = SlurmJob(jid, parse_job_line(line))
        elif (fields := parse_sacct_all(acct, jid)) is not None:
            out[jid] = SlurmJob(jid, fields)
        else:
            out[jid] = SlurmJob(jid, known=False, error=(line + (f"; sacct: {acct.rstrip(';')}" if acct else "")).strip())
    return out


def _secs(run_time: str) -> float | None:
    """Slurm's ``RunTime`` / ``Elapsed`` (``[D-]HH:MM:SS``) in seconds."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d+):(\d+)", run_time.strip())
    if m is None:
        return None
    d, h, mi, s = (int(x) if x else 0 for x in m.groups())
    return float(((d * 24 + h) * 60 + mi) * 60 + s)


def slurm_fate(sj: SlurmJob, *, now: float | None = None) -> Any:
    """The :class:`~cockpit.core.fate.Fate` Slurm's state of the job gives: ``vanished`` when
    neither scontrol nor sacct knows the id any more, None when they could not be asked."""
    now = time.time() if now is None else now
    if not sj.known and _UNKNOWN.search(sj.error):
        # purged after MinJobAge, and no accounting record (sacct was asked): it ended, nobody can say how
        return Fate("vanished", Layer.PROCESS.value, f"{sj.describe()}: it ended more than MinJobAge ago and sacct keeps no record of it",
                    now, None)
    if not sj.known or not sj.state:
        return None
    after = _secs(sj.fields.get("RunTime", ""))
    state, said = sj.state, sj.describe()
    if state in QUEUED:
        return Fate("pending", None, said, now, None)
    if state in RUNNING:
        return Fate("running", None, said, now, after)
    if state == "CANCELLED":
        return Fate("stopped", None, f"cancelled in Slurm (scancel, by cockpit or by someone else): {said}", now, after)
    code = sj.exit_status
    if state == "COMPLETED" and not code:
        return Fate("finished", None, f"{said}: the batch script exited with code 0", now, after)
    layer, what = Layer.PROCESS, f"Slurm says {state}"
    if state in ENDED_BY:
        layer, what, _ = ENDED_BY[state]
    elif code:
        what += f" (the batch script {'exited with code ' + str(code) if code < 128 else 'was killed by signal ' + str(code - 128)})"
    return Fate("died", layer.value, f"{what}: {said}", now, after)


RecordFate = Callable[[int, Any], None]


def record_fate(ctx: ActionContext) -> RecordFate | None:
    """The engine's fate recorder (journal + subscribers), when this context has one."""
    fn = ctx.record_fate
    return fn if callable(fn) else None


async def settle_ended(ctx: ActionContext, own: list[OwnJob], live: dict[str, str]) -> list[tuple[OwnJob, Any]]:
    """Record Slurm's fate for each recorded attempt whose story is still open and whose job is no
    longer queued or running; returns what was recorded."""
    rec = record_fate(ctx)
    # the latest ones: a journal of hundreds of attempts costs no more than this per stop (each
    # settled job is never asked again: its fate is final)
    ended = [o for o in own if o.attempt is not None and not o.fate_final and o.job_id not in live][-SETTLE_MAX:]
    if rec is None or not ended:
        return []
    jobs = await read_jobs(ctx, [o.job_id for o in ended])
    done = []
    for o in ended:
        sj = jobs.get(o.job_id)
        fate = slurm_fate(sj) if sj is not None else None
        if fate is not None and fate.final and o.attempt is not None:
            rec(o.attempt, fate)
            done.append((o, fate))
    return done


def describe_ids(own: list[OwnJob], states: dict[str, str]) -> str:
    """``12 RUNNING (attempt 3), 14 PENDING (attempt 4)``."""
    by_id = {o.job_id: o for o in own}
    return ", ".join(f"{i} {s}" + (f" (attempt {by_id[i].attempt})" if i in by_id and by_id[i].attempt is not None else "")
                     for i, s in states.items())
