"""The engine as the front ends see it: :class:`EngineFace`, exactly what the TUI and the CLI use.

A :class:`typing.Protocol`, so a front end is typed against this face and never against the
engine's insides (its locks, its fate follower, its action table dispatch).  :class:`~.engine.Engine`
satisfies it; the type checker proves so below (``_engine_is_a_face``), and a test does at run time.

What a front end may read: the config, the transport (its description, its runtime), the journal,
the observer and the metrics store, the job cockpit launched and its attempt, the action running
now, the attempts recovered at start-up and the user's own actions (``user_actions``).  What it
may set: ``read_only`` (a viewer), ``ask`` (who answers the engine's questions) and
``strays_policy`` (``--stop-strays``).  What it may call: ``subscribe`` to the typed events,
``run_action``, ``attempt``, ``run_user_action`` and the command one would run, ``stacks``,
``context`` (a preview in the target, e.g. the cache paths), ``resume_following`` a job's fate,
and ``close``.  Nothing more: a test checks both ways against what ``cockpit/ui`` and
``cockpit/cli`` call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover - annotations only: importing the face stays cheap
    from .actions.base import ActionContext
    from .actions.job import JobRecord
    from .actions.stacks import StackDump
    from .attempt import AttemptResult
    from .compile_follow import CompileWatch
    from .config import Config
    from .config.actions import ActionConfig
    from .engine import Engine
    from .events import Subscriber
    from .fate import FateFollower
    from .journal import AttemptRecord, Journal
    from .layers import Verdict
    from .metrics import MetricsStore
    from .observe import Observer
    from .remote.base import Transport
    from .user_actions import UserActionResult

__all__ = ["EngineFace", "Ask"]

#: the engine's question to the person at the keyboard (title, detail) → yes?
Ask = Callable[[str, str], Awaitable[bool]]


class EngineFace(Protocol):
    """One target's engine, as a front end uses it (see the module doc)."""

    #: a viewer (``--read-only``, ``--share``, ``cockpit serve``) never writes the journal
    read_only: bool
    #: who answers the engine's questions (the TUI's confirm dialog); None: nobody to ask
    ask: Ask | None
    #: ``[job] strays`` unless a front end overrides it (``--stop-strays``)
    strays_policy: str

    # -- what it holds ---------------------------------------------------------------------
    @property
    def cfg(self) -> Config: ...
    @property
    def transport(self) -> Transport: ...
    @property
    def journal(self) -> Journal: ...
    @property
    def compile(self) -> CompileWatch: ...
    @property
    def observer(self) -> Observer: ...
    @property
    def metrics(self) -> MetricsStore: ...
    @property
    def job(self) -> JobRecord | None: ...
    @property
    def job_attempt(self) -> int | None: ...
    @property
    def current_action(self) -> str | None: ...
    @property
    def recovered(self) -> Sequence[AttemptRecord]: ...
    @property
    def user_actions(self) -> dict[str, ActionConfig]: ...

    # -- what it does ----------------------------------------------------------------------
    def subscribe(self, fn: Subscriber) -> Callable[[], None]: ...
    def context(self) -> ActionContext: ...
    async def run_action(self, name: str, *, wait: bool = False) -> Verdict: ...
    async def attempt(self, note: str, *, wait: bool = False, trigger: str = "manual", follow: bool = True) -> AttemptResult: ...
    async def adopt(self, pid: int, *, wait: bool = False, follow: bool = True, now: bool = False) -> Verdict: ...
    def user_action_command(self, name: str) -> str: ...
    async def run_user_action(self, name: str, *, wait: bool = False, confirmed: str | None = None) -> UserActionResult: ...
    async def stacks(self) -> StackDump | None: ...
    def resume_following(self) -> FateFollower | None: ...
    async def close(self) -> None: ...


if TYPE_CHECKING:  # pragma: no cover - the static proof that the engine has this face

    def _engine_is_a_face(engine: Engine) -> EngineFace:
        return engine
