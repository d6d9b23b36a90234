"""``cockpit compare A B``: two attempts side by side, headless.

Prints each attempt's hypothesis, outcome and fate, code version, first error and metrics (last,
best, steps per second), what the deployed code changed from A to B, and the loss (or each
``--metric``) at steps both reached, with B − A.  ``--json`` prints the data
(:func:`cockpit.core.metrics.compare.compare`).  Every output is redacted like ``history``.

Exit codes: 0 shown; 2 an attempt the journal does not hold, or a config error.
Registered in ``cockpit/cli/main.py`` with ``add_parser(sub)``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.config import Config
from .args import add_globals, count

__all__ = ["add_parser", "cmd_compare", "render_compare"]

HELP = "two attempts side by side: outcome and fate, what the code changed, metrics at matching steps"
WIDTH = 38


def add_parser(sub: Any) -> None:
    s = sub.add_parser("compare", help=HELP, description=HELP)
    add_globals(s)
    s.add_argument("a", type=int, metavar="A", help="an attempt number (as in cockpit history)")
    s.add_argument("b", type=int, metavar="B", help="the attempt to compare with A")
    s.add_argument("--metric", action="append", metavar="NAME", help="the metric to compare at matching steps (repeatable; default: the loss)")
    s.add_argument("--steps", type=count, default=5, metavar="N", help="how many matching steps (default 5)")
    s.add_argument("--no-redact", action="store_true", help="show secrets an older journal may hold")
    s.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace, cfg: Config) -> int:
    from ..core.journal import Journal, Scope
    from ..core.metrics import MetricsStore
    from ..core.metrics.compare import NoSuchAttempt, compare
    from ..core.redact import Redactor
    from .common import EXIT_OK, EXIT_USAGE, safe_text

    red = None if args.no_redact else Redactor.from_config(cfg)
    journal = Journal(cfg.journal_path, scope=Scope(cfg.display_name, cfg.job_place))
    store = MetricsStore(cfg.journal_path.parent, cfg)
    try:
        data = compare(journal, store, args.a, args.b, metrics=args.metric, steps=max(1, args.steps), redactor=red)
    except NoSuchAttempt as e:
        print(f"cockpit: {e}", file=sys.stderr)
        return EXIT_USAGE
    if red is not None:
        data = red.data(data)
    if args.json:
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        print(safe_text(render_compare(data)))
    return EXIT_OK


def _cut(text: Any, width: int = WIDTH) -> str:
    s = " ".join(str(text if text is not None else "—").split()) or "—"
    return s if len(s) <= width else s[: width - 1] + "…"


def render_compare(d: dict[str, Any]) -> str:
    from ..core.metrics.report import fmt_rate, fmt_value

    a, b = d["a"], d["b"]
    ma, mb = a.get("metrics") or {}, b.get("metrics") or {}
    rows: list[tuple[str, Any, Any]] = [
        ("hypothesis", a["note"], b["note"]),
        ("outcome", a["story"], b["story"]),
        ("code", a["code"], b["code"]),
        ("first error", _error(a), _error(b)),
        ("compile", a.get("compile_cell"), b.get("compile_cell")),
        ("last step", _step(ma), _step(mb)),
        ("steps/s", fmt_rate(ma.get("steps_per_s")), fmt_rate(mb.get("steps_per_s"))),
    ]
    names = list(dict.fromkeys(list(ma.get("values") or {}) + list(mb.get("values") or {})))
    for name in names[:8]:
        rows.append((name, _value(ma, name), _value(mb, name)))
    out = [f"{'':<14}{'#' + str(a['attempt']):<{WIDTH + 2}}#{b['attempt']}"]
    out += [f"{label[:13]:<14}{_cut(x):<{WIDTH + 2}}{_cut(y)}" for label, x, y in rows]
    ch = d.get("changes")
    out += ["", f"code #{a['attempt']} → #{b['attempt']}: " + (ch["summary"] if ch else "no stored snapshot of one of them: nothing to diff")]
    for name, table in (d.get("matching") or {}).items():
        out.append("")
        if not table:
            out.append(f"{name}: no steps both attempts reached" if name in d.get("common_metrics", []) else
                       f"{name}: not logged by both attempts" + (f" (both have: {', '.join(d['common_metrics'])})" if d.get("common_metrics") else ""))
            continue
        out.append(f"{name} at matching steps" + ("" if all(r["exact"] for r in table) else " (≈: between logged steps)"))
        out.append(f"{'step':>10}  {'#' + str(a['attempt']):>12}  {'#' + str(b['attempt']):>12}  {'Δ':>10}")
        for r in table:
            mark = "" if r["exact"] else "≈"
            delta = r["delta"]
            out.append(f"{mark + fmt_value(r['step']):>10}  {fmt_value(r['a']):>12}  {fmt_value(r['b']):>12}  "
                       f"{('+' if delta is not None and delta > 0 else '') + fmt_value(delta):>10}")
    if not d.get("matching"):
        out += ["", "no metric logged by both attempts"]
    return "\n".join(out)


def _step(m: dict[str, Any]) -> str:
    from ..core.metrics.report import fmt_value

    if m.get("last_step") is None:
        return "—"
    return fmt_value(m["last_step"]) + (f"/{m['total']}" if m.get("total") else "")


def _value(m: dict[str, Any], name: str) -> str:
    from ..core.metrics.report import fmt_value

    v = (m.get("values") or {}).get(name)
    if not v:
        return "—"
    text = fmt_value(v.get("last"))
    if v.get("best") is not None and v.get("best") != v.get("last"):
        text += f" (best {fmt_value(v['best'])} @ {fmt_value(v.get('best_at'))})"
    return text


def _error(side: dict[str, Any]) -> str | None:
    """The verdict's first error, else what ended the job after the verdict (said as such)."""
    if side.get("first_error"):
        return str(side["first_error"])
    after = side.get("fate_error")
    return f"after the verdict: {after}" if after else None
