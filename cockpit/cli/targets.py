"""Several targets from the command line: ``--target NAME``, ``--group NAME``, ``status --all``.

``--target`` picks one target of the config for any command (resolved in :func:`cockpit.cli.
resolve_config`).  ``--group`` (``attempt``, ``verify``, ``status``) and ``status --all`` run the
command on every member **at once**, in one event loop, so targets on the same host share one SSH
connection (:mod:`cockpit.core.remote.link`).  The answer is one verdict per target and a
combined one: ``ok`` when every target is; otherwise the failure at the **lowest layer** (an
``ssh`` failure before a ``host`` one before an ``app`` one: the one to fix first), naming its
target.  With ``--json`` it is one document::

    {"ok": false, "group": "both", "combined": {"ok": false, "layer": "host", "target": "eval",
     "summary": "…"}, "targets": {"train": {…as the single-target command…}, "eval": {…}}}
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..core.config import Config
from ..core.layers import Layer

__all__ = ["add_target_args", "fan_out", "combine", "members"]

EXIT_OK, EXIT_FAILED, EXIT_BUSY = 0, 1, 75


def add_target_args(p: argparse.ArgumentParser, *, group: bool = False, all_: bool = False) -> None:
    # SUPPRESS: a sub-command's default must not hide `cockpit --target X sub-command`
    p.add_argument("--target", metavar="NAME", default=argparse.SUPPRESS,
                   help="which target of the config ([[targets]] name; default: the first)")
    if group:
        p.add_argument("--group", "-g", metavar="NAME", default=None, help="every target of this [[groups]] entry, at once")
    if all_:
        p.add_argument("--all", action="store_true", help="every target of the config, at once")


def members(args: argparse.Namespace, cfg: Config) -> tuple[str, list[str]] | None:
    """(label, target names) when the command fans out, else None."""
    if getattr(args, "all", False):
        return "all", cfg.target_names
    group = getattr(args, "group", None)
    if group:
        return group, cfg.group_members(group)
    return None


def combine(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The group's verdict from each target's (``ok``, ``layer``, ``summary``)."""
    failed = [(name, r) for name, r in results.items() if not r.get("ok")]
    if not failed:
        return {"ok": True, "layer": None, "target": None, "summary": f"all {len(results)} targets ok"}

    def rank(item: tuple[str, dict[str, Any]]) -> int:
        layer = item[1].get("layer")
        order = [x.value for x in Layer]
        return order.index(layer) if layer in order else len(order)

    name, r = min(failed, key=rank)  # min keeps the config's order among equal layers
    others = [n for n, _ in failed if n != name]
    return {"ok": False, "layer": r.get("layer"), "target": name,
            "summary": f"{name}: {r.get('summary') or 'failed'}" + (f" (also failed: {', '.join(others)})" if others else "")}


def fan_out(args: argparse.Namespace, cfg: Config, label: str, names: list[str],
            one: Callable[[Config], Awaitable[dict[str, Any]]], render: Callable[[dict[str, Any]], str]) -> int:
    """Run ``one(target_config)`` for every name at once; print and return the exit code."""
    import asyncio

    from .common import emit

    configs = {n: cfg.for_target(n) for n in names}

    async def go() -> list[Any]:
        return list(await asyncio.gather(*(one(c) for c in configs.values()), return_exceptions=True))

    from .common import run_loop

    outs = run_loop(go())
    results: dict[str, dict[str, Any]] = {}
    busy = False
    for name, out in zip(configs, outs, strict=True):
        if isinstance(out, BaseException):
            from ..core.engine import Busy

            if not isinstance(out, Exception):
                raise out
            busy = busy or isinstance(out, Busy)
            results[name] = {"ok": False, "layer": None, "summary": f"{type(out).__name__}: {out}", "error": str(out)}
        else:
            results[name] = out
    doc = {"ok": all(r.get("ok") for r in results.values()), "group": label, "combined": combine(results), "targets": results}

    def text(d: dict[str, Any]) -> str:
        parts = [f"── {n} ──\n" + (render(r) if "error" not in r else f"error: {r['error']}") for n, r in d["targets"].items()]
        c = d["combined"]
        parts.append(f"{label}: " + ("OK" if c["ok"] else f"FAILED at layer {c['layer']} on {c['target']}: {c['summary']}"))
        return "\n".join(parts)

    emit(args, doc, text)
    if busy:
        print("cockpit: another action was running on a target (pass --wait to wait for it)", file=sys.stderr)
        return EXIT_BUSY
    return EXIT_OK if doc["ok"] else EXIT_FAILED
