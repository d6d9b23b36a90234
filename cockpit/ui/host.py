"""What the app's controllers rely on of the app: :class:`CockpitHost`.

The controllers (``keys.py``, ``views.py``, ``target_keys.py``, ``settings.py``, ``user_keys.py``,
``polling.py``), the key routes (``routes.py``) and the command palette (``commands.py``) are each
given the app.  They are typed by what they use of it, declared here, so no controller imports the
app that builds them: :class:`~cockpit.ui.app.CockpitApp` subclasses :class:`CockpitHost` and
imports the controllers, and this module imports none of them.

:class:`CockpitHost` is a Textual :class:`~textual.app.App`, so a controller keeps Textual's own
API typed (``push_screen``, ``notify``, ``run_worker``, ``query_one``, ``screen``, ``exit`` …);
on top it declares the cockpit's state and the two methods the app defines.  A controller that
uses another one (the history reload after a stack dump, the user's actions in the help screen)
sees it through a small protocol below of what it uses, not through its class.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from textual.app import App

if TYPE_CHECKING:
    from textual.worker import Worker

    from ..core.config import Config
    from ..core.face import EngineFace
    from ..core.keymap import UIAction
    from ..core.layers import Verdict
    from .driver import Driver
    from .loop_runner import LoopRunner
    from .panes.status import StatusState
    from .themes import ThemeSet

__all__ = ["CockpitHost", "EngineKeys", "HistoryLoader", "TargetSwitch", "UserActionSet"]


class EngineKeys(Protocol):
    """``app.actions`` (:class:`~.keys.TargetActions`) as the key routes use it."""

    def act(self, name: str) -> None: ...


class HistoryLoader(Protocol):
    """``app.polling`` (:class:`~.polling.Polling`) as the other controllers use it."""

    def load_history(self) -> None: ...


class TargetSwitch(Protocol):
    """``app.targets`` (:class:`~.target_keys.Targets`) as the command palette uses it."""

    def choices(self) -> list[str]: ...
    def switch(self, name: str) -> None: ...


class UserActionSet(Protocol):
    """``app.user`` (:class:`~.user_keys.UserActions`) as the palette and the help screen use it."""

    @property
    def actions(self) -> dict[str, UIAction]: ...


class CockpitHost(App[int]):
    """The app as its controllers see it; :class:`~cockpit.ui.app.CockpitApp` is the one.

    Each attribute is set by the app's constructor (``switch_to`` and ``mouse_reporting`` are class
    attributes there, with their defaults).  The two methods are the app's: abstract for the type
    checker only, as Textual's metaclass is not :class:`abc.ABCMeta`."""

    #: the config of the target shown, and its engine
    cfg: Config
    engine: EngineFace
    #: the engine calls that make the panes' messages
    driver: Driver
    #: the edit → attempt loop (None without a [deploy] source that exists)
    loop_runner: LoopRunner | None
    #: what the status line shows
    status_state: StatusState
    themes: ThemeSet
    #: the ``[keymap]`` in effect (action id → keys)
    keymap: dict[str, str]
    read_only: bool
    demo: bool
    clock: Callable[[], float]
    #: the last action's verdict (action, verdict), for the verdict key
    last_verdict: tuple[str, Verdict] | None
    #: the target to start next when this app ends (a target switch)
    switch_to: str | None
    #: whether the terminal reports the mouse to cockpit
    mouse_reporting: bool

    #: the controllers that others use, each by the face they use of it
    actions: EngineKeys
    polling: HistoryLoader
    targets: TargetSwitch
    user: UserActionSet

    @abstractmethod
    def action_allowed(self, spec: UIAction) -> bool:
        """Whether ``spec`` may run now (``--read-only``, the demo's own keys)."""

    @abstractmethod
    def refresh_now(self) -> Worker[None]:
        """One refresh of everything."""
