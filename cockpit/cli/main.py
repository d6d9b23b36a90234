"""The ``cockpit`` command: the TUI by default, headless sub-commands for scripts and loops.

Exit codes (all sub-commands): 0 success, 1 verification failed (the verdict names the layer),
2 usage or config error (the message names the file, key and fix), 3 pending (``attempt``: the job
is queued by the scheduler, not yet verified: neither passed nor failed), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..core.config import Config, ConfigError
from ..core.render import render_verdict
from .args import add_globals, count, merge_globals, resolve, seconds
from .common import (
    EXIT_BUSY,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    Busy,
    confirm,
    emit,
    engine_session,
    journal_fault,
    journal_trouble,
    outcome_exit,
    quiet,
    run_loop,
    safe_text,
    with_engine,
)
from .targets import fan_out, members


def _common(p: argparse.ArgumentParser) -> None:
    """A sub-command's copy of the global options (:mod:`cockpit.cli.args`: the same meaning
    before or after the sub-command)."""
    add_globals(p)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cockpit",
        description="A terminal cockpit for debugging ML training jobs on remote GPU machines. "
        "Without a sub-command it opens the TUI.",
        epilog="The options above work before or after COMMAND (cockpit --config B.toml status = cockpit status --config B.toml). "
        "The config: --config, else $COCKPIT_CONFIG, else ./cockpit.toml, else ~/.config/cockpit/config.toml; "
        "with none, the TUI runs the built-in demo. "
        "Exit codes: 0 ok, 1 verification failed, 2 usage or config error, 3 pending (queued), 75 target busy, 130 interrupted.",
    )
    p.add_argument("--version", action="version", version=f"cockpit {__version__}")
    add_globals(p, top=True)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("status", help="check the target layer by layer (ssh, host, container, ...)")
    _common(s)
    s.add_argument("--quick", action="store_true", help="only the connectivity stages")
    s.add_argument("--group", metavar="NAME", default=None, help="every target of this [[groups]] entry, at once")
    s.add_argument("--all", action="store_true", help="every target of the config, at once")
    s.set_defaults(func=cmd_status)

    from ..core.action_table import BY_ID, SINGLE_ACTIONS

    for name in SINGLE_ACTIONS:
        s = sub.add_parser(name, help=BY_ID[name].help)
        _common(s)
        if name == "reboot":
            s.add_argument("--yes", action="store_true", help="confirm the reboot (required when stdin is not a terminal)")
        s.add_argument("--wait", action="store_true", help="wait for a running action to finish instead of refusing")
        if name == "verify":
            s.add_argument("--group", metavar="NAME", default=None, help="every target of this [[groups]] entry, at once")
        if name in ("stop", "relaunch"):
            s.add_argument("--stop-strays", action="store_true", help="also stop copies of the job that cockpit did not start (same command, same workdir)")
        s.set_defaults(func=cmd_action, action=name, acts=True)

    s = sub.add_parser("attempt", help=BY_ID["attempt"].help)
    _common(s)
    s.add_argument("--note", "-m", default="", help="the hypothesis this attempt tests")
    s.add_argument("--wait", action="store_true", help="wait for a running action to finish instead of refusing")
    s.add_argument("--stop-strays", action="store_true", help="stop copies of the job that cockpit did not start (same command, same workdir) before the launch")
    s.add_argument("--group", metavar="NAME", default=None, help="every target of this [[groups]] entry, at once: one verdict each and a combined one")
    s.set_defaults(func=cmd_attempt, acts=True)

    s = sub.add_parser("stacks", help="every thread's stack of the job (py-spy inside the target, else the kernel's view); saved with its attempt")
    _common(s)
    s.set_defaults(func=cmd_stacks, acts=True)

    from .actions import add_parser as add_run_action

    add_run_action(sub)

    s = sub.add_parser("history", help="list attempts from the journal")
    _common(s)
    s.add_argument("--markdown", "--md", action="store_true", help="a post-mortem timeline for an incident report")
    s.add_argument("--last", type=count, default=0, metavar="N", help="only the last N attempts")
    s.add_argument("--no-redact", action="store_true", help="show secrets an older journal may hold (by default every output "
                   "is redacted like the journal itself: [job.env] secrets, token shapes, [redact] patterns)")
    s.set_defaults(func=cmd_history)

    from .serve import add_parser as add_serve

    add_serve(sub, _common)
    from .compare import add_parser as add_compare

    add_compare(sub)

    from .watch import add_parser as add_watch

    add_watch(sub)

    from .discover import add_parser as add_init

    add_init(sub)
    from .connect import add_parser as add_connect

    add_connect(sub)

    s = sub.add_parser("demo", help="the built-in demo: apply or undo the shipped fix, show it, reset the demo project")
    s.add_argument("what", choices=("fix", "unfix", "diff", "reset", "where", "crash-later", "hang"), help="fix: apply the shipped fix; unfix: undo it; "
                   "diff: show it; reset: recreate the demo project; where: print the demo's directories; "
                   "crash-later: make the running demo job die in a few seconds (to see a passed attempt's fate change); "
                   "hang: make it deadlock instead (to see a stall and its stacks)")
    s.add_argument("--after", type=seconds, default=5.0, metavar="S", help="crash-later, hang: seconds from now (default 5)")
    s.set_defaults(func=cmd_demo, demo_command=True)

    s = sub.add_parser("check-config", help="validate the config file and print the resolved values")
    _common(s)
    s.set_defaults(func=cmd_check_config)
    return p


def resolve_config(args: argparse.Namespace) -> Config:
    """The config for a sub-command's (merged) arguments: :func:`cockpit.cli.args.resolve`."""
    return resolve(args).cfg


def cmd_status(args: argparse.Namespace, cfg: Config) -> int:
    from ..core.status import collect_status

    fan = members(args, cfg)
    if fan is not None:
        async def one(c: Config) -> dict[str, Any]:
            r = await collect_status(c, quick=getattr(args, "quick", False))
            return {**r, "layer": r["verdict"]["layer"], "summary": _status_summary(r)}

        return fan_out(args, cfg, fan[0], fan[1], one, render_status)
    report = run_loop(collect_status(cfg, quick=getattr(args, "quick", False)))
    if args.share:  # screen sharing: secrets hidden in the output too
        from ..core.redact import Redactor

        report = Redactor.from_config(cfg).data(report)
    emit(args, report, render_status)
    return EXIT_OK if report["ok"] else EXIT_FAILED


def _status_summary(r: dict[str, Any]) -> str:
    v = r["verdict"]
    bad = next((st for st in v["stages"] if st["status"] == "fail"), None)
    return f"{bad['name']}: {bad['detail']}" if bad else "reachable"


def render_status(r: dict[str, Any]) -> str:
    from ..core.fate_record import story

    out = [f"target {r['target']} ({r['transport']})", render_verdict(r["verdict"])]
    la = r.get("latest_attempt")
    if la:
        out.append(f"latest attempt #{la['attempt']}: {story(la['outcome'], la['layer'], la.get('fate'))}")
    for f in r.get("findings", []):
        out.append(f"  ! [{f['layer']}] {f['summary']}" + (f"  → {f['advice']}" if f.get("advice") else ""))
    return "\n".join(out)


def cmd_action(args: argparse.Namespace, cfg: Config) -> int:
    fan = members(args, cfg) if args.action == "verify" else None
    if fan is not None:
        async def one(c: Config) -> dict[str, Any]:
            v = await engine_session(quiet(args), c, lambda eng: eng.run_action("verify", wait=args.wait))
            return {**v.to_dict(), "summary": v.summary()}

        return fan_out(args, cfg, fan[0], fan[1], one, render_verdict)
    async def work(eng: Any) -> Any:
        if args.action == "reboot" and not args.yes:
            rt = eng.transport.runtime
            cmd = rt.restart_command()
            if not confirm(f"{rt.restart_word} container with `{cmd}` on {cfg.display_name}? every process in it dies"):
                return None
        return await eng.run_action(args.action, wait=args.wait)

    try:
        v = with_engine(args, cfg, work)
    except Busy:
        return EXIT_BUSY
    if v is None:
        print("cockpit: reboot not confirmed (pass --yes to confirm non-interactively)", file=sys.stderr)
        return EXIT_USAGE
    fault = journal_fault(args)
    emit(args, {**v.to_dict(), **({"journal_error": fault.to_dict()} if fault else {})}, render_verdict)
    if journal_trouble(args, fault):
        return EXIT_USAGE
    return EXIT_OK if v.ok else EXIT_FAILED


def cmd_attempt(args: argparse.Namespace, cfg: Config) -> int:
    fan = members(args, cfg)
    if fan is not None:
        async def one(c: Config) -> dict[str, Any]:
            res = await engine_session(quiet(args), c, lambda eng: eng.attempt(args.note, wait=args.wait, trigger="cli", follow=False))
            return {**res.to_dict(), "ok": res.outcome.value == "passed"}

        return fan_out(args, cfg, fan[0], fan[1], one, render_attempt)
    try:
        res = with_engine(args, cfg, lambda eng: eng.attempt(args.note, wait=args.wait, trigger="cli", follow=False))
    except Busy:
        return EXIT_BUSY
    fault = journal_fault(args)
    emit(args, {**res.to_dict(), **({"journal_error": fault.to_dict()} if fault else {})}, render_attempt)
    if journal_trouble(args, fault):
        return EXIT_USAGE
    return outcome_exit(res.outcome.value)


def render_attempt(r: dict[str, Any]) -> str:
    from ..core.journal import outcome_label

    head = f"attempt {r['attempt']}: {outcome_label(r['outcome'], r['layer'])}"
    out = [head, render_verdict(r["verdict"])]
    if r.get("first_error"):
        fe = r["first_error"]
        out.append(f"  first error: {fe.get('label') or fe.get('line') or fe}")
    return "\n".join(out)


def cmd_stacks(args: argparse.Namespace, cfg: Config) -> int:
    """``cockpit stacks``: where every thread of the recorded job is, now."""
    try:
        dump = with_engine(args, cfg, lambda eng: eng.stacks())
    except Busy:
        return EXIT_BUSY
    if dump is None:
        print(f"cockpit: no job recorded by cockpit for {cfg.display_name} (journal {cfg.journal_path}): nothing to dump", file=sys.stderr)
        return EXIT_FAILED
    emit(args, dump.to_dict(), lambda d: str(d["text"]))
    journal_trouble(args, journal_fault(args))
    return EXIT_OK if dump.threads else EXIT_FAILED


def cmd_history(args: argparse.Namespace, cfg: Config) -> int:
    from ..core.journal import Journal, Scope, render_markdown
    from ..core.redact import Redactor

    red = None if args.no_redact else Redactor.from_config(cfg)
    j = Journal(cfg.journal_path, scope=Scope(cfg.display_name, cfg.job_place))
    attempts = j.attempts(red)
    if args.last:
        attempts = attempts[-args.last :]
    from ..core.metrics import MetricsStore, summary

    store = MetricsStore(cfg.journal_path.parent, cfg)
    from ..core.journal import as_read

    for rec in attempts:  # each attempt's metrics (last, best, steps/s), kept beside the journal
        rec.metrics = summary(store.get(rec.attempt), cfg.metrics.total_steps)
        rec.outcome, rec.summary = as_read(rec)  # one whose cockpit died reads as status says, in every form
    if args.markdown:
        sys.stdout.write(safe_text(render_markdown(attempts, redactor=red)))
        return EXIT_OK
    from ..core.fate_record import story

    rows = [a.to_dict() for a in attempts]
    if red is not None:
        rows = red.data(rows)
    if args.json:
        json.dump(rows, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
        return EXIT_OK
    for a in rows:
        told = story(a.get("outcome"), a.get("layer"), a.get("fate"), short=True)
        print(safe_text(f"#{a['attempt']:<4} {told:<40} {(a.get('note') or '')[:40]:<40} {a.get('summary') or ''}"))
    if not rows:
        print(f"no attempts yet in {cfg.journal_path}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace, cfg: Config) -> int:
    from .. import demo

    if args.what == "fix":
        changed = demo.apply_fix()
        print("applied the demo fix to " + (", ".join(map(str, changed)) or "nothing (already applied)"))
        print("now run an attempt: cockpit attempt --demo --note \"serialise the first compile\"  (or press the attempt key in the TUI)")
    elif args.what == "unfix":
        changed = demo.unapply_fix()
        print("removed the demo fix from " + (", ".join(map(str, changed)) or "nothing (not applied)"))
    elif args.what == "diff":
        sys.stdout.write(demo.fix_diff())
    elif args.what in ("crash-later", "hang") and not demo.job_running():
        print(f"no demo job is running: start one first (cockpit attempt --demo, or the attempt key in `cockpit --demo`), "
              f"then run `cockpit demo {args.what}` again", file=sys.stderr)
        return EXIT_USAGE
    elif args.what == "crash-later":
        demo.crash_later(args.after)
        print(f"the running demo job will die in {args.after:g}s; then `cockpit status --demo` or `cockpit history --demo` "
              "shows the attempt as passed → died (app)")
    elif args.what == "hang":
        demo.crash_later(args.after, kind="hang")
        print(f"the running demo job deadlocks in {args.after:g}s; {5:g}s later it reads stalled: "
              "`cockpit status --demo`, then `cockpit stacks --demo` shows where its threads wait")
    elif args.what == "reset":
        demo.reset_demo()
        print(f"demo project recreated in {demo.demo_paths().src}")
    else:
        p = demo.demo_paths()
        print(f"source (edit me): {p.src}\nworkspace:        {p.workspace}\njournal:          {cfg.journal_path}")
    return EXIT_OK


def cmd_check_config(args: argparse.Namespace, cfg: Config) -> int:
    import dataclasses

    from ..core.notify import mask_url

    d = dataclasses.asdict(cfg)
    d["path"] = str(cfg.path) if cfg.path else None
    if cfg.notify.webhook:
        d["notify"]["webhook"] = mask_url(cfg.notify.webhook)  # it holds a token
    emit(args, d, lambda x: f"{x['path'] or '<built-in>'}: OK\n" + json.dumps(x, indent=2, default=str))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = merge_globals(parser.parse_args(argv), parser)
    if getattr(args, "demo_command", False):
        if args.config:
            parser.error("`cockpit demo` works on the built-in demo: drop --config")
        args.demo = True
    if args.read_only and _acts(args):
        parser.error(f"{'--share' if args.share else '--read-only'}: `cockpit {args.command}` acts on the target; "
                     "run it without that option (status, history, compare, check-config only read)")
    if args.share and getattr(args, "no_redact", False):
        parser.error("--share hides secrets: it cannot be combined with --no-redact")
    try:
        if args.command is None:
            from .tui import run_tui

            return run_tui(resolve(args, demo_if_none=True), read_only=args.read_only, share=args.share)
        if getattr(args, "no_config", False):  # init writes the config: it needs none
            return int(args.func(args, None))
        return int(args.func(args, resolve_config(args)))
    except ConfigError as e:
        if getattr(args, "json", False):
            json.dump({"ok": False, "error": e.to_dict()}, sys.stdout, indent=2)
            sys.stdout.write("\n")
        print(f"cockpit: config error: {e.message}", file=sys.stderr)
        return EXIT_USAGE
    except _interrupts():  # Ctrl-C; SIGHUP or SIGTERM (see _end_on_hangup)
        print("cockpit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `cockpit history | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def _interrupts() -> tuple[type[BaseException], ...]:
    """What ends a command as interrupted: Ctrl-C, and asyncio's CancelledError where a command ran
    an event loop (one can be raised only then: asyncio is imported by the commands that use it,
    not at start-up, where it would cost every command, ``--help`` too)."""
    aio = sys.modules.get("asyncio")
    return (KeyboardInterrupt,) if aio is None else (KeyboardInterrupt, aio.CancelledError)


def _acts(args: argparse.Namespace) -> bool:
    """Whether the sub-command acts on the target (refused in read-only and share modes): every
    action, attempt, stacks (it runs py-spy there and journals the dump), watch, and run-action
    with a name (without one it lists)."""
    if args.command == "watch" or (args.command in ("run-action", "action") and getattr(args, "name", None)):
        return True
    return bool(getattr(args, "acts", False))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
