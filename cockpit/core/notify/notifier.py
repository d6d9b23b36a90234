"""The one notifier: subscribed to the engine, it turns verdicts and fate changes into notifications.

Every front end attaches one (``Notifier(cfg, …).attach(engine)``): the TUI, ``cockpit watch`` and
the headless commands, so a notification goes out however the attempt was started.  For each
event (:func:`~cockpit.core.notify.payload.event_kind`) it decides the channels:

* **terminal** (bell, tmux; ``[loop] notify``, ``bell``, ``tmux``; only where ``terminal=True``):
  every verdict, and a passed attempt's job that died, vanished or stalled, as before;
* **hooks** (``[notify] command`` and ``webhook``): the events ``[notify] on`` names.

Then, before anything is sent: an identical event (same kind, attempt, outcome and layer, and for
a verdict the same error) within :data:`COLLAPSE_S` is dropped (a job that stalls, resumes and
stalls again is told once), and past ``[notify] max_per_minute`` events are
counted, not sent (the next one sent carries ``suppressed``).  Every string in the payload goes
through ``redact`` (default: the values of secret-named ``[job.env]`` keys hidden) and the
webhook URL is never in it.  Deliveries run as tasks, one after the other, never blocking the
event loop; a failing channel is reported once (``report``, and the log) until it works again.
In read-only (share) mode nothing is attached at all.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..events import ActionFinished, Event, FateChanged
from ..redact import Redactor
from .hooks import post_webhook, run_command, scrub_url
from .payload import build_payload, event_kind, mask_url, redact_payload, slack_body, wanted
from .terminal import _isatty, terminal_notify

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Config

__all__ = ["Notifier", "COLLAPSE_S"]

log = logging.getLogger(__name__)

#: an identical event within this many seconds is not sent again
COLLAPSE_S = 600.0
_WINDOW_S = 60.0


class Notifier:
    """See the module doc.  ``sent`` keeps the last payloads sent, ``errors`` the failures reported."""

    def __init__(self, cfg: Config, *, read_only: bool = False, terminal: bool = True, bell: Callable[[], None] | None = None,
                 report: Callable[[str], None] | None = None, redact: Callable[[str], str] | None = None,
                 env: Mapping[str, str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.read_only = read_only
        self.terminal = terminal
        self.bell = bell if bell is not None else _stderr_bell
        self.report = report if report is not None else _stderr_report
        self.redact = redact if redact is not None else Redactor.from_config(cfg).text
        self.env = env
        self.clock = clock
        self.journal: Any = None
        self.sent: deque[dict[str, Any]] = deque(maxlen=50)
        self.errors: list[str] = []
        self.suppressed = 0
        self.collapsed = 0
        self._window: deque[float] = deque()
        self._seen: dict[tuple[Any, ...], float] = {}
        self._failing: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._lock: asyncio.Lock | None = None

    # -- wiring -----------------------------------------------------------------------------------
    def attach(self, engine: Any) -> Callable[[], None]:
        """Subscribe to ``engine`` (its journal gives each attempt's note); returns the unsubscribe
        function.  In read-only mode nothing is subscribed."""
        if self.read_only:
            return lambda: None
        self.journal = getattr(engine, "journal", None)
        unsubscribe: Callable[[], None] = engine.subscribe(self)
        return unsubscribe

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the deliveries in flight (at most ``timeout`` s, default ``[notify] timeout`` + 1);
        what is left is cancelled (a command is killed)."""
        if not self._tasks:
            return
        limit = timeout if timeout is not None else self.cfg.notify.timeout + 1
        _, pending = await asyncio.wait(set(self._tasks), timeout=limit)
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
            log.warning("%d notification(s) still in flight after %.3gs: cancelled", len(pending), limit)

    # -- the subscriber ---------------------------------------------------------------------------
    def __call__(self, ev: Event) -> None:
        try:
            self._handle(ev)
        except Exception:  # broad: a notification must never break the engine's publish (logged with its traceback)
            log.exception("notifying %s failed", type(ev).__name__)

    def _handle(self, ev: Event) -> None:
        if self.read_only:
            return
        kind = event_kind(ev)
        if kind is None:
            return
        loop_cfg, n = self.cfg.loop, self.cfg.notify
        outcome = ev.result.outcome.value if isinstance(ev, ActionFinished) and ev.result is not None else getattr(ev, "outcome", None)
        news = kind == "verdict" or (isinstance(ev, FateChanged) and ev.news)
        term = self.terminal and loop_cfg.notify and news and (loop_cfg.bell or loop_cfg.tmux)
        hooks = bool(n.command or n.webhook) and wanted(kind, outcome, n.on)
        if not (term or hooks):
            return
        payload = build_payload(ev, target=self.cfg.display_name, note=self._note_of(ev))
        if payload is None:
            return
        payload = redact_payload(payload, self._redact)
        now = self.clock()
        if not self._admit(payload, now):
            return
        self.sent.append(payload)
        if term and loop_cfg.bell:
            try:
                self.bell()
            except Exception as e:  # noqa: BLE001 - any bell may be passed; reported once like every channel
                self._failed("bell", str(e))
        self._spawn(self._deliver(payload, tmux=bool(term and loop_cfg.tmux), hooks=hooks))

    def _note_of(self, ev: Event) -> str:
        attempt = ev.attempt if isinstance(ev, (ActionFinished, FateChanged)) else None
        rec = None
        if self.journal is not None and attempt is not None:
            try:
                rec = self.journal.get(attempt)
            except OSError as e:  # the notification goes out without its note
                log.info("cannot read the journal for attempt %s's note: %s", attempt, e)
        return str(getattr(rec, "note", "") or "")

    def _redact(self, s: str) -> str:
        out = self.redact(s)
        url = self.cfg.notify.webhook
        return scrub_url(out, url) if url else out

    def _admit(self, p: dict[str, Any], now: float) -> bool:
        """Collapse identical events, then the rate limit; True: send ``p`` (``suppressed`` set)."""
        # a fate's cause carries times ("no progress for 3m12s"): the same state of the same attempt is the same news
        key = (p["event"], p["attempt"], p["outcome"], p["layer"], None if p["fate"] else p["error"])
        for k, t in list(self._seen.items()):
            if now - t > COLLAPSE_S:
                del self._seen[k]
        if key in self._seen:
            self.collapsed += 1
            log.info("notification not sent: the same %s of attempt %s was sent %.0fs ago", p["event"], p["attempt"], now - self._seen[key])
            return False
        limit = self.cfg.notify.max_per_minute
        while self._window and now - self._window[0] >= _WINDOW_S:
            self._window.popleft()
        if limit and len(self._window) >= limit:
            self.suppressed += 1
            log.info("notification not sent (rate limit %d a minute): %s", limit, p["text"])
            return False
        self._seen[key] = now
        self._window.append(now)
        if self.suppressed:
            p["suppressed"] = self.suppressed
            p["text"] += f" (+{self.suppressed} more not sent: rate limit)"
            self.suppressed = 0
        return True

    # -- delivery ---------------------------------------------------------------------------------
    def _spawn(self, coro: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside the event loop (a script): deliver here, bounded by the timeouts
            asyncio.run(coro)
            return
        task = loop.create_task(coro, name="notify")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, p: dict[str, Any], *, tmux: bool, hooks: bool) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one after the other: a verdict's notification before its job's death
            n = self.cfg.notify
            jobs: dict[str, Any] = {}
            if tmux:
                env = dict(os.environ if self.env is None else self.env)
                jobs["tmux"] = asyncio.to_thread(_tmux, p["text"], env)
            if hooks and n.command:
                jobs["command"] = run_command(n.command, p, timeout=n.timeout, cwd=self.cfg.base_dir)
            if hooks and n.webhook:
                jobs[f"webhook {mask_url(n.webhook)}"] = post_webhook(n.webhook, slack_body(p), timeout=n.timeout)
            results = await asyncio.gather(*jobs.values(), return_exceptions=True)
            for channel, r in zip(jobs, results, strict=True):
                if isinstance(r, asyncio.CancelledError):
                    raise r
                if isinstance(r, BaseException):
                    log.debug("notify %s crashed", channel, exc_info=r)
                    r = f"{type(r).__name__}: {r}"
                if r is None:
                    if channel in self._failing:
                        log.info("notify %s works again", channel)
                    self._failing.discard(channel)
                else:
                    self._failed(channel, str(r))

    def _failed(self, channel: str, why: str) -> None:
        url = self.cfg.notify.webhook
        msg = f"notify {channel} failed: {why}"
        msg = scrub_url(msg, url) if url else msg
        if channel in self._failing:
            log.debug("%s (again)", msg)
            return
        self._failing.add(channel)
        self.errors.append(msg)
        log.warning("%s", msg)
        try:
            self.report(msg + " (said once until it works again)")
        except Exception:  # broad: a failing reporter must not turn a failed notification into a crash; logged
            log.exception("reporting a failed notification failed")


def _tmux(text: str, env: dict[str, str]) -> str | None:
    done = terminal_notify(text, bell=False, tmux=True, env=env)
    return "; ".join(done["errors"]) or None


def _stderr_bell() -> None:
    if _isatty(sys.stderr):
        sys.stderr.write("\a")
        sys.stderr.flush()


def _stderr_report(msg: str) -> None:
    print(f"cockpit: {msg}", file=sys.stderr, flush=True)
