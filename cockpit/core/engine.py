"""One target's state and the only door into the core for the TUI and the headless CLI.

The engine owns the transport, the journal, the job record and the job's **fate** after its verdict
(one :class:`~cockpit.core.fate.FateFollower` at a time), runs actions one at a time, and turns
every action into a :class:`~cockpit.core.layers.Verdict`.  Front ends subscribe to its typed
events (:mod:`cockpit.core.events`); the journal gets every stage, verdict, job record and fate as it
happens, flushed and fsynced, so a crash of cockpit itself loses nothing.

One action at a time per target: inside one process an ``asyncio.Lock``; across processes and
machines (a TUI and a ``cockpit attempt`` in another terminal, another checkout, another laptop)
the target's lock on its host (:mod:`.target_lock`).  A second request is refused with a message
naming who holds the target, never interleaved.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from .action_table import SINGLE_ACTIONS, ActionSpec, specs_for
from .actions.adopt import job_reader as reader_for  # adopted jobs too (no pid or exit file of cockpit's)
from .actions.base import ActionContext
from .actions.cache import clear_cache
from .actions.deploy import deploy
from .actions.gpufault import read_by_verdict
from .actions.job import JobRecord, stop
from .actions.jobstate import JobReader
from .actions.reboot import reboot
from .actions.stacks import StackDump, dump_stacks
from .actions.strays import strays_stage
from .actions.verify import verify
from .adoption import ADOPT_NOTE, ADOPT_TRIGGER, run_adoption
from .attempt import AttemptResult, run_attempt
from .compile_follow import CompileWatch
from .config import Config
from .config.actions import ActionConfig
from .connectivity import check_connectivity
from .events import ActionFinished, ActionStarted, Event, FateChanged, StageProgress, Subscriber
from .fate import FATE_EVENT, FRESH_S, Fate, FateFollower, gpu_as_read, latest_fate, no_gpu_check, read_fate, stopped_fate
from .fate_record import same_fate
from .journal import Journal, Scope
from .layers import Finding, Layer, Stage, Status, Verdict
from .metrics import MetricsStore
from .observe import Observer
from .redact import Redactor
from .relaunch import LAUNCH_NOTES, run_launch
from .remote import make_transport
from .remote.base import RemoteError, Transport
from .runtimes import runtime_for
from .superseded import reconcile_superseded, superseded_jobs
from .target_lock import Busy, TargetLock
from .user_actions import UserActionResult, command_for, run_user_action

__all__ = ["Engine", "Busy", "AttemptResult", "STACKS_EVENT", "NO_JOB_STAGE"]

#: the stage of a ``verify`` that found no job recorded: nothing was launched, nothing failed (a
#: front end reads it as untested, not as a failure of the process)
NO_JOB_STAGE = "job recorded"

log = logging.getLogger(__name__)

#: the journal event that keeps a stack dump with its attempt
STACKS_EVENT = "stacks"

StageListener = Callable[[str, Stage], None]


class Engine:
    def __init__(self, cfg: Config, transport: Transport | None = None, journal: Journal | None = None, *, recover: bool = True,
                 read_only: bool = False) -> None:
        self.cfg = cfg
        #: a viewer (``--read-only``, ``--share``, ``cockpit serve``): it follows and shows fates but
        #: never writes the journal nor runs anything in the target for it (the acting cockpit does)
        self.read_only = read_only
        #: the fate last shown per attempt when read-only (the journal holds it otherwise)
        self._viewed_fates: dict[int, Fate] = {}
        self.transport = transport or make_transport(cfg, runtime_for(cfg))
        #: where the job runs (:mod:`.runtimes`), chosen once: the transport carries it to every action
        self.runtime = self.transport.runtime
        self.journal = journal or Journal(cfg.journal_path, Redactor.from_config(cfg), Scope(cfg.display_name, cfg.job_place))
        self.observer = Observer(cfg, self.transport)
        #: each attempt's metrics from its log, beside the journal (every job reader from the log's start feeds it)
        self.metrics = MetricsStore(self.journal.path.parent, cfg, self.journal.redactor)
        self._recover = recover and not read_only
        self._subscribers: list[Subscriber] = []
        self.current_action: str | None = None
        self.job: JobRecord | None = None
        #: the attempt whose job ``job`` is (None for a bare ``cockpit launch``)
        self.job_attempt: int | None = None
        self.follower: FateFollower | None = None
        #: background work the engine started (a stalled job's stack dump); cancelled on close
        self._tasks: set[asyncio.Task[None]] = set()
        #: ``[job] strays`` unless a front end overrides it (``--stop-strays``)
        self.strays_policy = cfg.job.strays
        #: asks the person at the keyboard (the TUI's confirm dialog); None: nobody to ask
        self.ask: Callable[[str, str], Awaitable[bool]] | None = None
        self._lock = asyncio.Lock()
        self._target_lock = TargetLock(cfg, self.transport)
        self.recovered: list[Any] = []
        #: torch.compile's trace of each attempt's job, followed while it runs (docs/compile.md)
        self.compile = CompileWatch(self.transport, self.publish, self.journal, read_only=read_only)
        #: while an attempt stops the old job and launches the new one: the old job's last trace reads, held
        self.held_trace_reads: list[int] | None = None
        self._load_job()

    # -- state -----------------------------------------------------------------------------
    def _load_job(self) -> None:
        """Recover interrupted attempts and find the last job cockpit launched (to stop or re-attach)."""
        try:
            self.recovered = self.journal.recover() if self._recover else []
        except OSError:
            self.recovered = []
        for rec in reversed(self.journal.attempts()):
            if rec.job and (rec.job.get("pid") or rec.job.get("sched_id")):
                self.set_job(JobRecord.from_dict({**rec.job, "attempt": rec.attempt}), rec.attempt)  # the event carries the attempt
                break

    def set_job(self, job: JobRecord | None, attempt: int | None = None) -> None:
        """The job cockpit launched last: what stop acts on and what the observer follows."""
        self.job = job
        self.job_attempt = attempt if job is not None else None
        if job is not None:
            rec = self.journal.get(attempt) if attempt is not None else None
            fate = latest_fate(rec) if rec is not None else None
            self.observer.set_job(job.pid, job.pgid, job.log_path, self.runtime.sched_id(job), ended=fate is not None and fate.final)
            self.compile.follow(job, attempt)

    # -- events ----------------------------------------------------------------------------
    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Receive every :mod:`~cockpit.core.events` event; returns the unsubscribe function."""
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn) if fn in self._subscribers else None

    def publish(self, ev: Event) -> None:
        for fn in list(self._subscribers):
            fn(ev)

    def context(self, extra: StageListener | None = None) -> ActionContext:
        def on_stage(action: str, stage: Stage) -> None:
            if extra is not None:
                extra(action, stage)
            self.publish(StageProgress(action, stage))

        return ActionContext(self.cfg, self.transport, on_stage=on_stage, ask=self.ask, metrics=self.metrics,
                             current_job=self.job, journal=self.journal, record_fate=self.record_fate)

    @contextlib.asynccontextmanager
    async def exclusive(self, what: str, *, wait: bool = False) -> AsyncIterator[None]:
        """Hold the target for ``what`` (this process, then every cockpit: :class:`.target_lock.TargetLock`);
        :class:`Busy` naming the holder, or with ``wait`` wait for it to finish."""
        if self._lock.locked() and not wait and self.current_action is not None:
            raise Busy(f"{self.cfg.display_name} is busy: {self.current_action} is running in this cockpit")
        async with self._lock:  # an action that has finished and is giving the target's lock back is waited for
            self.current_action = what  # named from the start: taking the target's lock is part of the action
            try:
                await self._target_lock.acquire(what, wait=wait)
                try:
                    yield
                finally:
                    self.current_action = None  # finished: what is left is giving the lock back
                    await self._target_lock.release()
            finally:
                self.current_action = None

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.follower is not None:
            await self.follower.cancel()
            self.follower = None
        await self.compile.close()
        await self.observer.close()
        await self._target_lock.release()  # before its channel goes with the transport: released, not "lost"
        await self.transport.close()

    # -- fate ------------------------------------------------------------------------------
    def _outcome_of(self, attempt: int) -> str | None:
        rec = self.journal.get(attempt)
        return rec.outcome.value if rec is not None else None

    def gpu_util(self) -> list[float] | None:
        """Every GPU's utilisation in the last observation (None when there is none or it is stale)."""
        snap = self.observer.gpu.snapshot
        if snap is None or not snap.gpus:
            return None
        vals = [g.utilization_pct for g in snap.gpus]
        return [float(v) for v in vals if isinstance(v, (int, float))] or None

    def xid_since(self, t: float) -> str | None:
        """An Xid the host kernel log reported at or after ``t`` (the observer's last reading)."""
        for f in self.observer.kmsg.findings:
            ts = f.subject.get("last_ts") or f.subject.get("ts")
            if f.kind == "xid" and isinstance(ts, (int, float)) and ts >= t:
                return f.summary
        return None

    def record_fate(self, attempt: int, fate: Fate) -> None:
        """Journal a fate change of ``attempt`` (never its outcome) and tell the subscribers."""
        rec = self.journal.get(attempt)
        last = self._viewed_fates.get(attempt) or (latest_fate(rec) if rec is not None else None)
        if same_fate(last, fate):
            return
        if last is not None and last.final:
            return  # the end of a story is written once
        if fate.final and attempt == self.job_attempt:
            self.observer.job_ended = True  # its pids gone from the table are that end, no finding
        if self.read_only:  # shown, never journalled, no stack dump in the target
            self._viewed_fates[attempt] = fate
            self.publish(FateChanged(attempt, fate, self._outcome_of(attempt)))
            return
        # inside an attempt's stop: the new job's record, fsynced when the spawn answers, syncs it too
        self.journal.record(attempt, FATE_EVENT, durable=self.held_trace_reads is None, **fate.to_dict())
        if fate.final and self.held_trace_reads is not None:
            self.held_trace_reads.append(attempt)  # read once the new job is spawned (not in the launch's way)
        elif fate.final:
            self.compile.job_ended(attempt)
        self.publish(FateChanged(attempt, fate, self._outcome_of(attempt)))
        if fate.state == "stalled" and attempt == self.job_attempt:
            # where it is stuck, saved with the attempt while the job still hangs
            task = asyncio.get_running_loop().create_task(self._dump_quietly(), name=f"stacks-{attempt}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def follow(self, attempt: int, job: JobRecord, reader: JobReader | None = None, gpu_seen: list[Finding] | None = None) -> FateFollower | None:
        """Follow ``job`` (of ``attempt``) to its end from now on; needs a running event loop."""
        rec = self.journal.get(attempt)
        last = latest_fate(rec) if rec is not None else None
        if last is not None and last.final:
            return None
        old = self.follower
        if old is not None and old.task is not None:
            old.task.cancel()
        self.follower = FateFollower(self.context(), attempt, job, reader, self.record_fate,
                                     interval=self.cfg.verify.fate_interval, last=last, gpu_util=self.gpu_util,
                                     xid_since=self.xid_since, gpu_seen=gpu_seen)
        self.follower.start()
        return self.follower

    def resume_following(self) -> FateFollower | None:
        """At start-up (TUI, watch): follow the latest attempt's job if its story is not over (and
        read once the earlier attempts' jobs nothing follows: :mod:`.superseded`)."""
        if jobs := superseded_jobs(self.journal, self.job_attempt):
            task = asyncio.get_running_loop().create_task(reconcile_superseded(self.context(), jobs, self.record_fate), name="superseded")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if self.job is None or self.job_attempt is None:
            return None
        fol = self.follow(self.job_attempt, self.job)
        if fol is not None:  # its story goes on: so does its torch.compile trace
            self.compile.follow(self.job, self.job_attempt)
        return fol

    async def reconcile(self) -> Fate | None:
        """Headless: read the latest attempt's job once and journal its fate if it changed (and
        those of earlier attempts whose open story nothing follows: :mod:`.superseded`)."""
        await reconcile_superseded(self.context(), superseded_jobs(self.journal, self.job_attempt), self.record_fate)
        if self.job is None or self.job_attempt is None:
            return None
        rec = self.journal.get(self.job_attempt)
        last = latest_fate(rec) if rec is not None else None
        if last is not None and last.final:
            return last
        fate = await read_fate(self.context(), self.job)
        self.record_fate(self.job_attempt, fate)
        return fate

    async def _dump_quietly(self) -> None:
        try:
            await self.stacks()
        except RemoteError as e:
            log.warning("could not dump the stalled job's stacks: %s", e.message)

    async def stacks(self) -> StackDump | None:
        """Every thread's stack of the recorded job, saved with its attempt (``stacks`` event)."""
        if self.job is None:
            return None
        dump = await dump_stacks(self.context(), self.job)
        if self.job_attempt is not None:
            self.journal.record(self.job_attempt, STACKS_EVENT, **dump.to_dict())
        return dump

    async def _stop_step(self, ctx: ActionContext, v: Verdict) -> None:
        """Stop the recorded job (its fate: died before, or stopped now), then handle strays.

        A stalled job's stacks are saved first (``[job] dump_before_stop``): the fix-attempt loop
        must not destroy the one piece of evidence a hang leaves."""
        job, attempt = self.job, self.job_attempt
        follower, self.follower = self.follower, None
        if follower is not None:
            await follower.cancel()
        rec = self.journal.get(attempt) if job is not None and attempt is not None else None
        told = latest_fate(rec) if rec is not None else None
        unread = job is not None and attempt is not None and (told is None or not told.final)  # a told end needs no reading
        told_now: list[Fate] = []  # a reading before the stop (its last progress line goes into the stopped fate)

        async def read_before() -> Fate | None:
            assert job is not None and attempt is not None
            try:
                # the follower has read this job's log up to now: go on from there; else a quick look at the tail
                reader = follower.reader if follower is not None and follower.job is job else reader_for(ctx, job, tail_bytes=256 << 10)
                before = await read_fate(ctx, job, reader, gpu_util=self.gpu_util, gpu_check=no_gpu_check)  # its end only
            except RemoteError:
                return None
            if before.final:
                self.record_fate(attempt, before)
            told_now.append(before)
            return before

        if (unread and job is not None and follower is not None and follower.running_now(job, FRESH_S)
                and self.transport.runtime.scheduler is None):
            seen: list[bool] = []  # read running a moment ago: read again only if its leader is gone (fate.FRESH_S)

            async def identified(alive: bool) -> None:
                seen.append(alive)
                if not alive:
                    await read_before()

            await stop(ctx, job, v, identified=identified)
            if not seen:  # stop signalled nothing: read as before
                await read_before()
        else:
            if unread:
                before = await read_before()
                stalled = before is not None and before.state == "stalled" or (follower is not None and follower.last is not None
                                                                               and follower.last.state == "stalled")
                if stalled and self.cfg.job.dump_before_stop:
                    try:
                        await self.stacks()
                    except RemoteError as e:
                        log.warning("could not dump the stalled job's stacks before stopping it: %s", e.message)
            await stop(ctx, job, v)
        term = next((s for s in reversed(v.stages) if s.name.endswith("terminate")), None)
        if job is not None and attempt is not None and term is not None and term.status is Status.OK:
            scan = follower.reader.scan if follower is not None and follower.job is job else None
            last = next((f.last_progress for f in (*told_now, told) if f is not None and f.last_progress), None)
            self.record_fate(attempt, stopped_fate(job, f"by cockpit ({term.detail})", (scan.last_progress if scan else None) or last))
        if v.failed_stage is None:
            await strays_stage(ctx, job, v, self.strays_policy)

    async def _hang_evidence(self, res: AttemptResult) -> None:
        """An attempt that failed because the job hung (no progress by startup_timeout, or a stall in
        the settle window) gets the threads' stacks saved with it, while the job is still there."""
        fs = res.verdict.failed_stage
        if fs is None or fs.name not in ("verify: progress", "verify: settled"):
            return
        if "no progress" not in fs.detail and "stalled" not in fs.detail:
            return
        try:
            await self.stacks()
        except RemoteError as e:
            log.warning("could not dump the hung job's stacks: %s", e.message)

    async def _after_verdict(self, res: AttemptResult, follow: bool = True) -> None:
        """Right after the verdict: the job's state as its first fate (``passed → running``), then,
        with ``follow``, the job followed to its end; both take the GPUs as the verdict read them a
        moment ago, where it did (one reading, not three)."""
        assert res.job is not None
        seen = read_by_verdict(res.verdict)
        with contextlib.suppress(RemoteError):
            self.record_fate(res.attempt, await read_fate(self.context(), res.job, res.reader, gpu_check=gpu_as_read(seen)))
        if follow:
            self.follow(res.attempt, res.job, res.reader, seen)

    # -- single actions --------------------------------------------------------------------
    async def run_action(self, name: str, *, wait: bool = False) -> Verdict:
        """Run one headless action by name; its verdict starts with the connectivity stages."""
        if name == "attempt":
            raise ValueError("use Engine.attempt(note)")
        if name in self.user_actions:
            return (await self.run_user_action(name, wait=wait)).verdict
        if name not in SINGLE_ACTIONS:
            raise ValueError(f"unknown action {name!r}")
        async with self.exclusive(name, wait=wait):
            t0 = time.monotonic()
            self.publish(ActionStarted(name))
            ctx = self.context()
            v = Verdict(name)
            await check_connectivity(self.transport, self.cfg, v, on_stage=ctx.on_stage, host=self.observer.host)
            if v.failed_stage is None and name in LAUNCH_NOTES:
                await self._launched(await run_launch(self, name, v, self.context, self._stop_step))
            elif v.failed_stage is None:
                await self._action(name, ctx, v)
            v.finish()
            self.publish(ActionFinished(name, v, duration_s=time.monotonic() - t0))
            return v

    async def _launched(self, res: AttemptResult | None) -> None:
        """A launch or relaunch journalled as an attempt (:mod:`.relaunch`): its job is the target's
        job from now on, followed to its end as an attempt's is."""
        if res is None:
            return
        self.compile.verdict_recorded(res.attempt)
        if res.job is not None and res.job.started:
            self.set_job(res.job, res.attempt)
            await self._after_verdict(res)

    async def _action(self, name: str, ctx: ActionContext, v: Verdict) -> None:
        run: dict[str, Callable[[ActionContext, Verdict], Awaitable[Any]]] = {
            "deploy": deploy,
            "clear-cache": clear_cache,
            "stop": self._stop_step,
            "verify": self._verify_now,
            "reboot": self._reboot,
        }
        await run[name](ctx, v)

    async def _reboot(self, ctx: ActionContext, v: Verdict) -> None:
        job, attempt = self.job, self.job_attempt
        if self.follower is not None:
            await self.follower.cancel()
            self.follower = None
        await reboot(ctx, v)
        if v.failed_stage is None:
            if job is not None and attempt is not None:
                self.record_fate(attempt, stopped_fate(job, "the container was rebooted by cockpit"))
            self.job = None

    async def _verify_now(self, ctx: ActionContext, v: Verdict) -> None:
        """``verify``: the job as it is now; a death found here is also its attempt's fate."""
        if self.job is None:
            v.add(Stage(NO_JOB_STAGE, Status.FAIL, Layer.PROCESS, "nothing launched: no job recorded by cockpit to verify",
                        advice="run an attempt (or launch) first"))
            return
        reader = reader_for(ctx, self.job)
        await verify(ctx, self.job, v, wait=False, reader=reader)
        if self.job_attempt is not None and not any(s.status is Status.PENDING for s in v.stages):
            try:
                fate = await read_fate(ctx, self.job, reader)
            except RemoteError:
                return
            self.record_fate(self.job_attempt, fate)

    # -- the user's own actions ([[actions]]) ---------------------------------------------------
    @property
    def specs(self) -> tuple[ActionSpec, ...]:
        """Every action of this target: the built-ins and the user's ``[[actions]]``."""
        return specs_for(self.cfg)

    @property
    def user_actions(self) -> dict[str, ActionConfig]:
        return {a.name: a for a in self.cfg.actions}

    def user_action_command(self, name: str) -> str:
        """The exact command user action ``name`` would run now (MissingField: a field has no value yet)."""
        return command_for(self.user_actions[name], self.cfg, self.job, self.job_attempt)

    async def run_user_action(self, name: str, *, wait: bool = False, confirmed: str | None = None) -> UserActionResult:
        """Run one of the user's ``[[actions]]``; ``confirmed``: the command the user saw (nothing runs if it changed).

        A look (``destructive = false``) runs beside whatever else runs and tells no subscriber;
        a destructive one waits its turn like stop and reboot, and its stages and verdict are events.
        Neither is journalled: the journal keeps attempts, and a user action belongs to none."""
        action = self.user_actions.get(name)
        if action is None:
            raise ValueError(f"unknown action {name!r}")
        if not action.destructive:
            ctx = ActionContext(self.cfg, self.transport)
            return await run_user_action(ctx, action, self.job, self.job_attempt, confirmed=confirmed)
        async with self.exclusive(name, wait=wait):
            t0 = time.monotonic()
            self.publish(ActionStarted(name))
            res = await run_user_action(self.context(), action, self.job, self.job_attempt, confirmed=confirmed)
            self.publish(ActionFinished(name, res.verdict, duration_s=time.monotonic() - t0))
            return res

    # -- the attempt -------------------------------------------------------------------------
    async def attempt(self, note: str, *, wait: bool = False, trigger: str = "manual", follow: bool = True) -> AttemptResult:
        """note → deploy → stop → clear caches → launch → verify; then the job is followed (fate)."""
        async with self.exclusive("attempt", wait=wait):
            t0 = time.monotonic()
            self.publish(ActionStarted("attempt", note, trigger))
            res = await run_attempt(self, note, self.context, self._stop_step)
            self.compile.verdict_recorded(res.attempt)
            if res.job is not None and res.job.started:
                self.set_job(res.job, res.attempt)
                await self._hang_evidence(res)
                await self._after_verdict(res, follow)
            self.publish(ActionFinished("attempt", res.verdict, res, time.monotonic() - t0, trigger))
            return res

    async def adopt(self, pid: int, *, wait: bool = False, follow: bool = True, now: bool = False) -> Verdict:
        """Make ``pid``, a job cockpit did not start, the target's job (:mod:`.adoption`): an attempt
        noted ``adopted``, verified as a launched job is (``now``: as it is now, as ``cockpit verify``
        judges, without waiting for progress or the settle window), then followed to its end (fate)."""
        async with self.exclusive("adopt", wait=wait):
            t0 = time.monotonic()
            self.publish(ActionStarted("adopt", ADOPT_NOTE, ADOPT_TRIGGER))
            res = await run_adoption(self, pid, self.context, wait=not now)
            if res.job is not None:
                self.set_job(res.job, res.attempt)
                await self._after_verdict(res, follow)
            self.publish(ActionFinished("adopt", res.verdict, res if res.job is not None else None, time.monotonic() - t0, ADOPT_TRIGGER))
            return res.verdict

