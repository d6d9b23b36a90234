"""The launch's preparation in one round trip: the trace directory's command rides with it.

:func:`~.compiletrace.prepare_trace` runs its command through :meth:`.base.ActionContext.run`; given
the exact same text as a rider of the launch's ``prepare`` batch (:meth:`.base.ActionContext.ride`),
it gets that batch's answer instead of a round trip of its own.  :func:`trace_command` is that text
(tests/test_launch_prepare_lab.py checks it is what ``prepare_trace`` runs: were they to differ,
``prepare_trace`` would simply run its own again).  The command is safe to run twice (an empty
directory made again, a listing), as a rider must be.
"""

from __future__ import annotations

import shlex

from .compiletrace import TracePlan

__all__ = ["trace_command"]


def trace_command(plan: TracePlan) -> str | None:
    """What :func:`~.compiletrace.prepare_trace` runs for ``plan`` (None: it runs nothing)."""
    if not plan.managed or not plan.directory:
        return None
    q = shlex.quote
    glob = q(plan.template.split("{attempt}", 1)[0]) + "*"
    d = q(plan.directory)
    return (f"{{ [ ! -e {d} ] || rm -rf {d}; }}; mkdir -p {d} || exit 3; set --; "
            f"for d in {glob}; do [ -d \"$d\" ] && set -- \"$@\" \"$d\"; done; "
            "[ $# -eq 0 ] || du -sk -- \"$@\" 2>/dev/null; true")
