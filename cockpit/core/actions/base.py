"""What every action shares: the context it runs in and a helper that builds its verdict live.

An action is an ``async`` function ``(ctx, …) -> Verdict``.  It never raises for a remote failure:
a :class:`~cockpit.core.remote.base.RemoteError` becomes a failing stage in the error's layer, and
the stages it could not reach are added as ``not reached``.  Listeners (the TUI's verdict strip,
the journal) see each stage as soon as it is decided, through ``ctx.on_stage``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..layers import Evidence, Layer, Stage, Status, Verdict
from ..remote.base import CommandResult, RemoteError, Transport

if TYPE_CHECKING:  # pragma: no cover - types only: these modules stand on this one
    from ..fate_record import Fate
    from ..journal.store import Journal
    from ..metrics.store import MetricsStore
    from .jobrecord import JobRecord
    from .jobstate import JobReader
    from .logscan import LogScan

__all__ = ["ActionContext", "VerdictBuilder", "StageFailed", "RIDER_MAX_AGE_S"]

#: how old a rider's answer may be when its stage asks (older: the command runs again)
RIDER_MAX_AGE_S = 1.0

StageListener = Callable[[str, Stage], None]


@dataclass
class ActionContext:
    cfg: Config
    transport: Transport
    on_stage: StageListener | None = None
    #: asks the person at the keyboard a yes/no question (the TUI's confirm dialog); None: nobody to ask
    ask: Callable[[str, str], Awaitable[bool]] | None = None
    # -- what the engine hands in ---------------------------------------------------------------
    #: the engine's metrics store: a job reader that reads the log from its start records them
    metrics: MetricsStore | None = None
    #: the job cockpit recorded before this action began
    current_job: JobRecord | None = None
    #: the journal (Slurm's stop finds cockpit's own jobs in it)
    journal: Journal | None = None
    #: journals a fate change of an attempt (Slurm's stop records the jobs it cancelled)
    record_fate: Callable[[int, Fate], None] | None = None
    # -- what one action's stages hand on to the next (an attempt: deploy → … → verify) -----------
    #: the job a launch started (None again after a reboot: nothing of it is left)
    job: JobRecord | None = None
    #: what deploy checksummed: relpath → sha256
    manifest: dict[str, str] | None = None
    #: the caches clear-cache removed, as the journal records them
    caches: list[dict[str, Any]] | None = None
    #: verify's reading of the log, and the reader that made it (the fate follower goes on with it)
    log_scan: LogScan | None = None
    job_reader: JobReader | None = None
    #: what changed since the previous attempt's deploy (:func:`cockpit.core.changes.record_attempt_changes`)
    changes: dict[str, Any] | None = None

    #: commands a later stage will run that may ride in an earlier stage's batch (:meth:`run_many`)
    riders: list[str] = field(default_factory=list)
    #: what such a rider answered, by its exact text, and when (monotonic): :meth:`run` hands it out once
    answered: dict[str, tuple[float, CommandResult]] = field(default_factory=dict)
    #: a rider whose answer may be older than :data:`RIDER_MAX_AGE_S` when its stage asks (seconds)
    rider_ages: dict[str, float] = field(default_factory=dict)

    async def run(self, command: str, *, timeout: float = 10.0) -> CommandResult:
        """``command`` through the target's session; a rider of an earlier batch answered it a
        moment ago (at most :data:`RIDER_MAX_AGE_S`): that answer, once."""
        early = self.answered.pop(command, None)
        max_age = self.rider_ages.pop(command, RIDER_MAX_AGE_S)
        if early is not None and time.monotonic() - early[0] <= max_age:
            return early[1]
        return await self.transport.run(command, timeout=timeout)

    async def run_cheap(self, command: str, *, timeout: float = 10.0) -> CommandResult:
        """A command that cannot block (built-ins, ``kill``, reads of ``/proc/PID/stat``) in a cheap
        frame: no watchdog forked (:meth:`.session.FramedSession.run`).  A context whose :meth:`run`
        is its own (one that watches or rewrites each command) gets it through that."""
        if not self._plain():
            return await self.run(command, timeout=timeout)
        return await self.transport.run(command, timeout=timeout, cheap=True)

    def ride(self, command: str, *, max_age_s: float = RIDER_MAX_AGE_S) -> None:
        """``command`` (exactly what a later stage will :meth:`run`) goes with the next batch;
        its answer serves that stage while at most ``max_age_s`` old (a reading meant to be taken
        before a stage in between, such as the running job's environment before stop, may be older)."""
        if command not in self.riders:
            self.riders.append(command)
        if max_age_s != RIDER_MAX_AGE_S:
            self.rider_ages[command] = max_age_s

    async def run_many(self, commands: list[str], *, timeout: float = 10.0, cheap: bool = False) -> list[CommandResult]:
        """``commands`` in one round trip (:meth:`~cockpit.core.remote.base.Transport.run_many`;
        ``cheap``: theirs are cheap frames), the riders after them in watched frames; the riders'
        answers are kept for :meth:`run`.  Each command is judged by its own stage.  ``commands``
        must be safe to run twice: when a batch with riders fails below the commands (the shell
        died), they run again alone, so a rider's trouble never becomes theirs (its own stage runs
        it again and meets it)."""
        riders, self.riders = [r for r in self.riders if r not in commands], []
        flags = [cheap] * len(commands) + [False] * len(riders)
        try:
            res = await self._many([*commands, *riders], timeout, flags)
        except RemoteError:
            if not riders:
                raise
            return await self._many(commands, timeout, flags[:len(commands)])
        now = time.monotonic()
        for cmd, r in zip(riders, res[len(commands):], strict=False):
            self.answered[cmd] = (now, r)
        return res[:len(commands)]

    async def _many(self, commands: list[str], timeout: float, cheap: list[bool]) -> list[CommandResult]:
        if self._plain():
            return await self.transport.run_many(commands, timeout=timeout, cheap=cheap)
        # a context or transport that watches or rewrites each command: one at a time, through it
        return [await self.run(c, timeout=timeout) for c in commands]

    def _plain(self) -> bool:
        """Neither this context's :meth:`run` nor the transport's ``run`` is wrapped (by a subclass,
        a stand-in transport or an instance attribute): batches and cheap frames may bypass it."""
        return (isinstance(self.transport, Transport) and type(self).run is ActionContext.run
                and "run" not in vars(self.transport))

    async def run_host(self, command: str, *, timeout: float = 10.0) -> CommandResult:
        return await self.transport.run_host(command, timeout=timeout)


class StageFailed(Exception):
    """Raised inside a stage block to fail it with a layer, detail, evidence and advice."""

    def __init__(self, layer: Layer, detail: str, *, evidence: Evidence | None = None, advice: str = "", data: dict[str, Any] | None = None):
        super().__init__(detail)
        self.layer, self.detail, self.evidence, self.advice, self.data = layer, detail, evidence, advice, data or {}


class _StageHandle:
    def __init__(self, name: str, layer: Layer) -> None:
        self.name, self.layer = name, layer
        self.detail = ""
        self.evidence: Evidence | None = None
        self.status = Status.OK
        self.advice = ""
        self.data: dict[str, Any] = {}

    def ok(self, detail: str, evidence: Evidence | None = None, **data: Any) -> None:
        self.status, self.detail, self.evidence = Status.OK, detail, evidence
        self.data.update(data)

    def skip(self, detail: str) -> None:
        self.status, self.detail = Status.SKIPPED, detail

    def pending(self, detail: str, *, since: float | None = None, deadline_s: float | None = None) -> None:
        """Not decided yet; ``since`` (epoch) and ``deadline_s``: how long it may still wait (a
        display draws the elapsed share as a bar: a model still loading within startup_timeout)."""
        self.status, self.detail = Status.PENDING, detail
        if since is not None and deadline_s:
            self.data["wait"] = {"since": since, "deadline_s": deadline_s}


class VerdictBuilder:
    """Builds one action's verdict stage by stage::

        vb = VerdictBuilder(ctx, "deploy", [("source readable", Layer.CONFIG), ("upload", Layer.CONTAINER)])
        async with vb.stage("source readable") as st:
            ...
            st.ok("12 files, 40 KiB")
        if vb.failed: return vb.finish()
    """

    def __init__(self, ctx: ActionContext, action: str, plan: list[tuple[str, Layer]], verdict: Verdict | None = None) -> None:
        self.ctx = ctx
        self.action = action
        self.plan = list(plan)
        self.verdict = verdict or Verdict(action)
        self._done: set[str] = set()

    @property
    def failed(self) -> bool:
        return self.verdict.failed_stage is not None

    def _layer_of(self, name: str) -> Layer:
        for n, layer in self.plan:
            if n == name:
                return layer
        return Layer.PROCESS

    def add(self, stage: Stage) -> Stage:
        self.verdict.add(stage)
        self._done.add(stage.name)
        if self.ctx.on_stage is not None:
            self.ctx.on_stage(self.action, stage)
        return stage

    def running(self, name: str, detail: str = "", layer: Layer | None = None, *, since: float | None = None,
                deadline_s: float | None = None, done: float | None = None, total: float | None = None, unit: str = "") -> None:
        """Announce a stage that has started, or what it waits for now (for live displays; not
        recorded in the verdict); ``layer``: where the wait is (a lost connection: ``ssh``).
        ``since`` + ``deadline_s`` (a wait against a deadline) or ``done`` of ``total`` ``unit``
        (work that can be counted: files deployed) let a display draw a progress bar."""
        if self.ctx.on_stage is not None:
            data: dict[str, Any] = {}
            if since is not None and deadline_s:
                data["wait"] = {"since": since, "deadline_s": deadline_s}
            if done is not None and total:
                data["progress"] = {"done": done, "total": total, "unit": unit}
            self.ctx.on_stage(self.action, Stage(name, Status.RUNNING, layer or self._layer_of(name), detail, data=data))

    @asynccontextmanager
    async def stage(self, name: str, layer: Layer | None = None) -> AsyncIterator[_StageHandle]:
        h = _StageHandle(name, layer or self._layer_of(name))
        t0 = time.monotonic()
        started = time.time()
        self.running(name)
        try:
            yield h
        except StageFailed as f:
            self.add(Stage(name, Status.FAIL, f.layer, f.detail, evidence=f.evidence, started_at=started,
                           duration_s=time.monotonic() - t0, advice=f.advice, data=f.data))
            return
        except RemoteError as e:
            self.add(Stage(name, Status.FAIL, e.layer, e.message, evidence=e.evidence(), started_at=started,
                           duration_s=time.monotonic() - t0, advice=e.hint))
            return
        self.add(Stage(name, h.status, h.layer, h.detail, evidence=h.evidence, started_at=started,
                       duration_s=time.monotonic() - t0, advice=h.advice, data=h.data))

    def finish(self) -> Verdict:
        if self.failed:
            self.verdict.not_reached([(name, layer) for name, layer in self.plan if name not in self._done])
        return self.verdict.finish()


def check(res: CommandResult, layer: Layer, detail: str, *, advice: str = "") -> CommandResult:
    """Fail the current stage unless ``res`` succeeded."""
    if res.timed_out:
        raise StageFailed(layer, f"{detail}: timed out after {res.duration_s:.1f}s", evidence=res.evidence(), advice=advice)
    if res.exit_code in (126, 127) and layer is not Layer.HOST:
        raise StageFailed(Layer.CONTAINER, f"{detail}: command not found inside the target (exit {res.exit_code}): {res.err_text.strip()[:200]}",
                          evidence=res.evidence(), advice="install the tool in the container, or use an absolute path")
    if not res.ok:
        raise StageFailed(layer, f"{detail} (exit {res.exit_code}): {res.err_text.strip()[:300]}", evidence=res.evidence(), advice=advice)
    return res
