"""``cockpit run-action NAME`` (alias ``cockpit action``): one of the user's ``[[actions]]``, headless.

Prints the command's output (control characters removed, the first 1 MiB) on stdout and one line
with its exit code on stderr, so ``cockpit run-action df > df.txt`` keeps only the output;
``--json`` prints one object (``action``, ``where``, ``command``, ``exit_code``, ``timed_out``,
``output``, ``truncated``, ``omitted_bytes``, ``ok``, ``ran``, ``verdict``).  Without NAME it lists
every action of the target: the built-ins (their own sub-commands) and the user's.

Exit codes: 0 the command exited 0; 1 it exited non-zero or was killed at its timeout, or it could
not run (the verdict names the layer: ssh, host, container); 2 usage or config error, an unknown
name, or a destructive action not confirmed; 75 the target is busy (destructive actions wait their
turn like stop and reboot).  The command's own exit code is printed, never reused as cockpit's.

Registered in ``cockpit/cli/main.py`` with ``add_parser(sub)``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from typing import Any

from ..core.config import Config
from .args import add_globals

__all__ = ["add_parser", "cmd_run_action"]

HELP = "run one of your [[actions]] (a command of your own, in the target or on the host) and print its output and exit code"


def add_parser(sub: Any) -> None:
    s = sub.add_parser("run-action", aliases=["action"], help=HELP, description=HELP)
    add_globals(s)
    s.add_argument("name", nargs="?", metavar="NAME", help="the action's name ([[actions]] name); without it: list the actions")
    s.add_argument("--yes", action="store_true", help="confirm a destructive action (required when stdin is not a terminal)")
    s.add_argument("--wait", action="store_true", help="a destructive action: wait for a running action to finish instead of refusing")
    s.set_defaults(func=cmd_run_action)


def _listing(cfg: Config) -> list[dict[str, Any]]:
    from ..core.action_table import specs_for

    return [{"name": s.id, "user": s.user, "key": s.key or None, "where": s.where or None, "destructive": s.destructive,
             "help": s.help} for s in specs_for(cfg)]


def cmd_run_action(args: argparse.Namespace, cfg: Config) -> int:
    from ..core.render import render_verdict
    from ..core.user_actions import MAX_OUTPUT
    from .common import EXIT_BUSY, EXIT_FAILED, EXIT_OK, EXIT_USAGE, Busy, confirm, emit, safe_text, with_engine

    if not args.name:
        rows = _listing(cfg)
        if args.json:
            json.dump(rows, sys.stdout, indent=2, ensure_ascii=False)
            sys.stdout.write("\n")
        else:
            for r in rows:
                kind = f"[[actions]] {r['where']}" + (f", key {r['key']}" if r["key"] else "") if r["user"] else f"cockpit {r['name']}"
                print(safe_text(f"{r['name']:<16} {kind:<32} {r['help']}"))
        return EXIT_OK
    actions = {a.name: a for a in cfg.actions}
    action = actions.get(args.name)
    if action is None:
        from ..core.action_table import BY_ID

        if args.name in BY_ID:
            print(f"cockpit: {args.name!r} is a built-in action: run `cockpit {args.name}`", file=sys.stderr)
            return EXIT_USAGE
        close = difflib.get_close_matches(args.name, [*actions, *BY_ID], n=1)
        known = (f"its [[actions]]: {', '.join(actions)}" if actions else "it has no [[actions]] (see sample_config.toml)")
        print(f"cockpit: no action {args.name!r} in {cfg.path or 'this config'}" + (f"; did you mean {close[0]!r}?" if close else "")
              + f" ({known}; `cockpit run-action` lists every action, the built-ins too)", file=sys.stderr)
        return EXIT_USAGE

    async def work(eng: Any) -> Any:
        from ..core.user_template import MissingField

        confirmed = None
        if action.destructive and not args.yes:
            try:
                confirmed = eng.user_action_command(action.name)
            except MissingField:
                confirmed = None  # nothing can run: the run says why
            else:
                where = "on the host" if action.where == "host" else "in the target"
                if not confirm(f"run {action.name} {where} of {cfg.display_name}:\n  {confirmed}\n"):
                    return None
        return await eng.run_user_action(action.name, wait=args.wait, confirmed=confirmed)

    try:
        res = with_engine(args, cfg, work)
    except Busy:
        return EXIT_BUSY
    if res is None:
        print(f"cockpit: {action.name} not confirmed (pass --yes to confirm non-interactively)", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        emit(args, res.to_dict(), lambda d: "")
    else:
        if res.output:
            print(safe_text(res.output))
        if not res.ran:
            print(safe_text(render_verdict(res.verdict.to_dict())), file=sys.stderr)
        cut = f"; output cut at {MAX_OUTPUT >> 20} MiB, {res.omitted_bytes} more bytes not kept" if res.omitted_bytes else ""
        print(safe_text(f"{action.name}: {res.answer()} ({action.where}, {res.duration_s:.2f} s{cut})"), file=sys.stderr)
        sys.stdout.flush()
    return EXIT_OK if res.ok else EXIT_FAILED
