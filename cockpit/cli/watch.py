"""``cockpit watch``: the attempt-on-save loop without the TUI.

Each time a save in ``[deploy] source`` settles (``[loop] debounce``, default 1 s), run one
attempt and print its verdict as ONE line on stdout (``--json``: one JSON object per line).
Progress (what changed, which attempt starts, a busy target) goes to stderr.  The note of each
attempt is ``--note`` the first time, then ``"<note> (#n)"`` (``[loop] note_template``); without
``--note`` the last hypothesis in the journal is reused.  A save during an attempt queues one more
attempt, never more.  With ``--once`` it waits for one change, runs one attempt and exits with
its result (0 passed, 1 not passed, 3 pending in a scheduler's queue, 75 the target stayed busy, 124 no change within
``--timeout``).  Ctrl-C exits with 130 (an attempt in flight is journalled ``interrupted``).

Registered in ``cockpit/cli/main.py`` with ``add_parser(sub)``; also runs alone:
``cockpit watch --config cockpit.toml [--once] [--json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from .args import add_globals, positive_seconds, seconds

__all__ = ["add_parser", "cmd_watch", "verdict_payload"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PENDING, EXIT_BUSY, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 75, 124, 130

HELP = "run an attempt each time the deploy source is saved (headless attempt-on-save)"


def _add_arguments(s: argparse.ArgumentParser) -> None:
    add_globals(s, json="one JSON object per verdict line instead of text")
    s.add_argument("--note", "-m", default=None, help="the hypothesis under test (default: the last note in the journal)")
    s.add_argument("--once", action="store_true", help="wait for one change, run one attempt, exit with its result")
    s.add_argument("--timeout", type=seconds, default=None, metavar="S", help="with --once: give up after S seconds without a change (exit 124)")
    s.add_argument("--debounce", type=positive_seconds, default=None, metavar="S", help="seconds a burst of saves must be quiet (default: [loop] debounce, 1.0)")
    s.add_argument("--no-notify", action="store_true", help="no notifications: no bell, no tmux message, no [notify] command or webhook")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr, only the verdict lines")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``watch`` to the sub-command parsers (``sub`` from ``add_subparsers``)."""
    s: argparse.ArgumentParser = sub.add_parser("watch", help=HELP, description=__doc__.split("\n\n")[1].replace("``", "`") if __doc__ else HELP)
    _add_arguments(s)
    s.set_defaults(func=cmd_watch)
    return s


def _progress(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(f"cockpit watch: {text}", file=sys.stderr, flush=True)


def verdict_payload(res: Any, *, note: str = "", changed: Sequence[str] = (), diff: dict[str, Any] | None = None,
                    latency: float | None = None) -> dict[str, Any]:
    """The JSON line printed for one verdict."""
    from ..core.notify import error_text

    d = res.to_dict() if hasattr(res, "to_dict") else dict(res)
    fe = d.get("first_error") if isinstance(d.get("first_error"), dict) else None
    return {
        "attempt": d.get("attempt"),
        "outcome": d.get("outcome"),
        "layer": d.get("layer"),
        "summary": d.get("summary"),
        "first_error": (fe.get("label") or fe.get("summary")) if fe else None,
        "error": error_text(d) or None,
        "note": note,
        "changed": list(changed),
        "diff": {k: diff.get(k) for k in ("files", "added", "removed", "diff_path")} if diff else None,
        "timings": d.get("timings") or {},
        "save_to_start_s": round(latency, 3) if latency is not None else None,
    }


def _text_line(p: dict[str, Any]) -> str:
    from ..core.changes import summarise
    from ..core.notify import verdict_line

    line = verdict_line({**p, "first_error": {"line": p["error"]} if p.get("error") else None}, prefix="", limit=160)
    if p.get("diff"):
        line += f" | {summarise(p['diff'])}"
    elif p.get("changed"):
        ch = p["changed"]
        line += " | " + ", ".join(ch[:4]) + (f", … {len(ch) - 4} more" if len(ch) > 4 else "")
    total = (p.get("timings") or {}).get("total")
    if isinstance(total, (int, float)):
        line += f" | {total:.1f}s"
    return line


def cmd_watch(args: argparse.Namespace, cfg: Any) -> int:
    import asyncio

    from ..core.config import ConfigError

    src = cfg.deploy_source
    if src is None:
        raise ConfigError(cfg.path, "deploy.source", "is not set: cockpit watch has nothing to watch",
                          "set [deploy] source to the directory you edit, and dest to where it goes")
    if not src.exists():
        raise ConfigError(cfg.path, "deploy.source", f"{src} does not exist", "fix [deploy] source (relative to the config file)")
    try:
        return asyncio.run(_watch(args, cfg))
    except KeyboardInterrupt:
        _progress(args, "stopped")
        return EXIT_INTERRUPTED


def _on_fate(args: argparse.Namespace, ev: Any) -> None:
    """A job's fate changed after its verdict: one line (or one JSON object) saying so."""
    from ..core.events import FateChanged
    from ..core.fate_record import story

    if not isinstance(ev, FateChanged) or ev.fate.state == "running":
        return
    if args.json:
        sys.stdout.write(json.dumps({"event": "fate", "attempt": ev.attempt, "outcome": ev.outcome, "fate": ev.fate.to_dict()},
                                    ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        print(f"attempt {ev.attempt}: {story(ev.outcome, None, ev.fate)}", flush=True)


async def _watch(args: argparse.Namespace, cfg: Any) -> int:
    import asyncio

    from ..core.engine import Busy, Engine
    from ..core.loop import AttemptLoop, NoteCounter, loop_config, watcher_for
    from ..core.notify import Notifier

    lc = loop_config(cfg)
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    caught: dict[str, int] = {}

    def on_signal(signum: int) -> None:
        caught.setdefault("sig", signum)
        if main is not None:
            main.cancel()

    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError, ValueError):
            continue  # no handler here (not the main thread): Ctrl-C arrives as KeyboardInterrupt, see cmd_watch
        installed.append(sig)

    engine = Engine(cfg)
    engine.subscribe(lambda ev: _on_fate(args, ev))
    notifier = Notifier(cfg, report=lambda text: print(f"cockpit watch: {text}", file=sys.stderr, flush=True))
    if not args.no_notify:  # verdicts and fate news: bell, tmux ([loop]), [notify] command and webhook
        notifier.attach(engine)
    engine.resume_following()  # a job still running from an earlier attempt: its fate is told too
    watcher = watcher_for(cfg, debounce=args.debounce or lc.debounce)
    notes = NoteCounter(args.note, template=lc.note_template, journal=engine.journal)
    state: dict[str, Any] = {"files": [], "note": "", "busy_said": False, "gave_up": False, "started": asyncio.Event()}
    rc = EXIT_OK

    def on_change(cs: Any) -> None:
        if cs.pending:
            _progress(args, f"{cs.describe()}" + ("" if loop_.state == "idle" else " (queued after the running attempt)"))
        else:
            _progress(args, "edits undone: nothing differs from the last deploy")

    def on_start(note: str, files: dict[str, str]) -> None:
        state.update(files=sorted(files), note=note, busy_said=False)
        state["started"].set()
        _progress(args, f"attempt {engine.journal.next_id()} starts: {note!r}")

    def on_busy(e: BaseException, waited: float) -> None:
        if not state["busy_said"]:
            _progress(args, f"{e}; retrying every {lc.busy_retry:g}s for up to {lc.busy_timeout:g}s")
            state["busy_said"] = True

    def on_error(e: BaseException) -> None:
        if isinstance(e, Busy):
            state["gave_up"] = True
            _progress(args, f"gave up: {e}")
        else:
            _progress(args, f"attempt could not run: {type(e).__name__}: {e}")

    async def on_verdict(res: Any) -> None:
        nonlocal rc
        diff = None
        try:
            rec = engine.journal.get(res.attempt)
            diff = rec.diff if rec is not None else None
        except OSError as e:  # the verdict line goes out without its diff summary
            _progress(args, f"cannot read the journal for the diff of attempt {res.attempt}: {e}")
        lat = loop_.latencies[-1]["from_last_change"] if loop_.latencies else None
        p = verdict_payload(res, note=state["note"], changed=state["files"], diff=diff, latency=lat)
        if args.json:
            sys.stdout.write(json.dumps(p, ensure_ascii=False, default=str) + "\n")
        else:
            sys.stdout.write(_text_line(p) + "\n")
        sys.stdout.flush()
        rc = EXIT_OK if p["outcome"] == "passed" else EXIT_PENDING if p["outcome"] == "pending" else EXIT_FAILED

    loop_ = AttemptLoop(engine, watcher, notes=notes, busy_retry=lc.busy_retry, busy_timeout=lc.busy_timeout,
                        on_change=on_change, on_attempt_start=on_start, on_verdict=on_verdict, on_busy=on_busy, on_error=on_error)
    try:
        t0 = time.monotonic()
        await watcher.start()
        n = len(watcher.baseline)
        extra = ", .gitignore applies" if watcher.git_dir else ""
        _progress(args, f"watching {watcher.source} ({n} file{'s' if n != 1 else ''}, debounce {watcher.debounce:g}s{extra}; "
                        f"ready in {time.monotonic() - t0:.2f}s); Ctrl-C to stop")
        if not args.once:
            await loop_.run()
            return rc
        run = asyncio.create_task(loop_.run(max_attempts=1))
        started = asyncio.create_task(state["started"].wait())
        try:
            await asyncio.wait({run, started}, timeout=args.timeout, return_when=asyncio.FIRST_COMPLETED)
            if not run.done() and not started.done():
                run.cancel()
                await asyncio.gather(run, return_exceptions=True)
                _progress(args, f"no change within {args.timeout:g}s")
                return EXIT_TIMEOUT
            results = await run
        finally:
            started.cancel()
            await asyncio.gather(started, return_exceptions=True)
        if not results:
            return EXIT_BUSY if state["gave_up"] else EXIT_FAILED
        return rc
    except (OSError, RuntimeError) as e:  # the watcher could not start or died (permissions, inotify limits)
        hint = " (too many directories for inotify? set WATCHFILES_FORCE_POLLING=1 to poll instead)" if isinstance(e, OSError) else ""
        print(f"cockpit watch: {type(e).__name__}: {e}{hint}", file=sys.stderr)
        return EXIT_FAILED
    except asyncio.CancelledError:
        if "sig" in caught:
            _progress(args, "stopped" + (" (the attempt in flight is journalled interrupted)" if loop_.state == "running" else ""))
            return EXIT_INTERRUPTED if caught["sig"] == signal.SIGINT else 128 + caught["sig"]
        raise
    finally:
        await watcher.close()
        await notifier.drain()
        await engine.close()
        for sig in installed:
            with contextlib.suppress(RuntimeError, ValueError):  # the loop is closing: nothing left to undo
                loop.remove_signal_handler(sig)
