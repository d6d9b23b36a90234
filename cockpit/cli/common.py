"""What every sub-command shares: the exit codes, printing a result (text or ``--json``), asking on
a terminal, and running work with an engine (made, notified, shown live and closed around it)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.config import Config

if TYPE_CHECKING:  # pragma: no cover
    import asyncio

T = TypeVar("T")
log = logging.getLogger(__name__)

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_PENDING", "EXIT_BUSY", "EXIT_INTERRUPTED", "emit", "safe_text",
           "confirm", "Busy", "with_engine", "run_loop", "engine_session", "quiet", "outcome_exit", "journal_fault", "journal_trouble"]

#: 0 success, 1 verification failed (the verdict names the layer), 2 usage or config error, 3 pending
#: (queued by the scheduler, not yet verified), 75 another cockpit acts on the target, 130 interrupted
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PENDING, EXIT_BUSY, EXIT_INTERRUPTED = 0, 1, 2, 3, 75, 130


def emit(args: argparse.Namespace, payload: dict[str, Any], text: Callable[[dict[str, Any]], str]) -> None:
    if getattr(args, "json", False):
        json.dump(payload, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(safe_text(text(payload)))
    sys.stdout.flush()


def safe_text(text: str) -> str:
    """Remote and journal text for a terminal: no escape sequences or control characters, line by line
    (:func:`cockpit.core.text.sanitize`, newlines kept)."""
    from ..core.text import sanitize

    return sanitize(text, newlines=True)


def confirm(prompt: str) -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{prompt} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


class Busy(Exception):
    """Another cockpit acts on the target (said on stderr already): exit 75."""


def with_engine(args: argparse.Namespace, cfg: Config, work: Callable[[Any], Any]) -> Any:
    """Run ``work(engine)`` in a fresh event loop (live stages on a terminal's stderr); Busy → exit 75."""

    from ..core.engine import Busy as EngineBusy

    try:
        return run_loop(engine_session(args, cfg, work, hangup=True))
    except EngineBusy as e:
        print(f"cockpit: {e}", file=sys.stderr)
        raise Busy() from None


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` for a command, ended with nothing left running: a background task that
    its engine left behind (a shell still starting when the connection closed) is cancelled and
    awaited once ``main`` is done, so what it ended with is this command's business, never an
    "unhandled exception during asyncio.run() shutdown" traceback on the user's terminal."""
    import asyncio

    async def alone() -> T:
        try:
            return await main
        finally:
            me = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
            for t in rest:
                t.cancel()
            for t, out in zip(rest, await asyncio.gather(*rest, return_exceptions=True), strict=True):
                if isinstance(out, Exception):
                    log.debug("left running at the end of the command, ended: %s: %r", t.get_name(), out)

    return asyncio.run(alone())


def quiet(args: argparse.Namespace) -> argparse.Namespace:
    """A copy of ``args`` for one target of a group: no live stages (they would interleave), its
    own journal-trouble slots."""
    return argparse.Namespace(**{**vars(args), "json": True})


async def engine_session(args: argparse.Namespace, cfg: Config, work: Callable[[Any], Any], *, hangup: bool = False) -> Any:
    """``work(engine)`` with the engine made, notified, shown live and closed around it (one
    target; a group runs one of these per target in the same event loop)."""
    import asyncio

    from ..core.engine import Engine
    from ..core.notify import Notifier
    from .progress import LiveStages, live_wanted

    if hangup:
        _end_on_hangup(asyncio.current_task())
    eng = Engine(cfg)
    if getattr(args, "stop_strays", False):
        eng.strays_policy = "stop"
    args.engine_journal = eng.journal  # journal_trouble() reads what could not be written
    # [notify] command and webhook on a verdict or a fate found here; the terminal shows the rest
    notifier = Notifier(cfg, terminal=False)
    notifier.attach(eng)
    try:
        if live_wanted(args):
            with LiveStages() as live:
                eng.subscribe(live.on_event)
                return await work(eng)
        return await work(eng)
    finally:
        args.engine_job = eng.job if eng.job is not None and eng.job.pid is not None else None
        await notifier.drain()
        await eng.close()


def _end_on_hangup(task: asyncio.Task[Any] | None) -> None:
    """SIGHUP (the terminal closed under cockpit) and SIGTERM end the running action as an
    interrupt does: the task is cancelled, so the journal closes the attempt ``interrupted`` and the
    connection is closed, instead of the process dying mid-write.  After SIGHUP, stdout and stderr
    point at /dev/null: the terminal is gone and writing to it would fail (EIO)."""
    import asyncio
    import signal

    def end(signum: int) -> None:
        if signum == signal.SIGHUP:
            devnull = os.open(os.devnull, os.O_WRONLY)
            for fd in (1, 2):
                os.dup2(devnull, fd)
            os.close(devnull)
        if task is not None:
            task.cancel()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGHUP, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, end, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # no signals here (not the main thread, not Unix)
            return


def outcome_exit(outcome: str) -> int:
    """An attempt's exit code: 0 passed, 3 pending (queued, not yet verified: neither passed nor
    failed), 1 any other outcome."""
    return EXIT_OK if outcome == "passed" else EXIT_PENDING if outcome == "pending" else EXIT_FAILED


def journal_fault(args: argparse.Namespace) -> Any:
    """The engine's journal problem left at the end (after one last try to write the queue), or None."""
    j = getattr(args, "engine_journal", None)
    if j is None or j.fault is None:
        return None
    j.flush()
    return j.fault


def journal_trouble(args: argparse.Namespace, fault: Any) -> bool:
    """Say on stderr that the journal could not be written (a ``config`` problem, with the fix);
    True when that matters for the exit code: a launched job is recorded nowhere."""
    if fault is None:
        return False
    j = args.engine_journal
    lost = j.unwritten()
    print(f"cockpit: config error: cannot write the journal {fault.path}: {fault.error}; "
          f"{len(lost)} record{'s' if len(lost) != 1 else ''} of this run not saved\n  fix: {fault.fix}", file=sys.stderr)
    job = getattr(args, "engine_job", None)
    if job is None or not any(ev.get("event") == "job" for ev in lost):
        return False
    print(f"cockpit: the job it launched is recorded nowhere (cockpit stop will not find it): pid {job.pid}, "
          f"process group {job.pgid}, start time {job.start_time}, log {job.log_path}; stop it inside the target with: "
          + (f"systemctl stop {job.unit}" if job.unit else f"kill -TERM -- -{job.pgid}"), file=sys.stderr)
    return True
