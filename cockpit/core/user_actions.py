"""User actions: the ``[[actions]]`` of the config, run through the engine.

A user action is the user's own shell code (``nvidia-smi -q``, ``df -h {workdir}``) with the
target's fields filled in, each value shell-quoted (:mod:`.user_template`).

How it runs: ``where = "target"`` on its own channel inside the target (``pct exec CTID -- sh``,
so a long dump never holds up the probes' session), ``where = "host"`` on the SSH host outside
any container.  The remote script proves the shell started (a marker on stderr), kills the
command after ``timeout`` (remote ``timeout``), merges stderr into stdout as a terminal would, and
keeps only the first :data:`MAX_OUTPUT` bytes (the rest is counted on the remote side and never
sent).

What the verdict says: whether cockpit could run the command, and where it could not (``ssh``,
``host``: the container is stopped or missing, ``container``: no shell inside).  The command's own
exit code is *its answer*, reported as is in :attr:`UserActionResult.exit_code` and never turned
into a layer: ``grep`` exiting 1 is not a failure of your container, nor of your code.
"""

from __future__ import annotations

import math
import re
import shlex
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .layers import Evidence, Layer, Stage, Status, Verdict
from .probes.logs import sanitize
from .remote.base import RemoteError
from .remote.session import classify_start_failure
from .user_template import FIELDS, JOB_FIELDS, MissingField, check_template, field_values, render, template_fields

if TYPE_CHECKING:  # pragma: no cover
    from .actions.base import ActionContext
    from .actions.job import JobRecord
    from .config import Config
    from .config.actions import ActionConfig
    from .runtimes.base import Runtime

__all__ = ["FIELDS", "JOB_FIELDS", "MAX_OUTPUT", "MissingField", "UserActionResult", "template_fields", "check_template",
           "render", "field_values", "command_for", "run_user_action"]

#: output kept per run (stdout and stderr together); the rest is counted remotely and never sent
MAX_OUTPUT = 1 << 20
#: seconds the client waits beyond the remote ``timeout`` (pct exec's start-up, the kill grace)
CLIENT_GRACE_S = 15.0

_MARK = "@@cockpit-ua"
_MARKS = re.compile(rb"^@@cockpit-ua (ran|rc|more)(?:[ \t]+(-?\d+))?[ \t]*\n?", re.M)


def command_for(action: ActionConfig, cfg: Config, job: JobRecord | None = None, attempt: int | None = None) -> str:
    """The exact shell command ``action`` runs now; :class:`MissingField` when a field has no value."""
    return render(action.command, field_values(cfg, job, attempt), name=action.name)


def _seconds(timeout: float) -> int:
    """The remote timeout in whole seconds: every timeout(1) reads those."""
    return max(1, math.ceil(timeout))


def remote_script(command: str, timeout: float, cap: int = MAX_OUTPUT) -> str:
    """The shell script that runs ``command``: marker, remote timeout, stderr merged, output capped."""
    q = shlex.quote(command)
    t = _seconds(timeout)
    run = (f"if command -v timeout >/dev/null 2>&1; then timeout -k 5 {t} /bin/sh -c {q}; else /bin/sh -c {q}; fi")
    return (f"printf '%s\\n' '{_MARK} ran' >&2; "
            f"{{ {run} 2>&1; printf '{_MARK} rc %s\\n' \"$?\" >&2; }} </dev/null"
            f" | {{ head -c {int(cap)}; printf '{_MARK} more %s\\n' \"$(wc -c)\" >&2; }}")


@dataclass
class UserActionResult:
    """One run of a user action: the verdict (could it run, and where not), and its own answer."""

    name: str
    where: str
    command: str
    verdict: Verdict
    exit_code: int | None = None
    timed_out: bool = False
    output: str = ""
    #: bytes the command printed beyond :data:`MAX_OUTPUT` (counted remotely, never sent)
    omitted_bytes: int = 0
    duration_s: float = 0.0
    timeout: float = 0.0

    @property
    def ran(self) -> bool:
        """The command ran to an answer (an exit code or a timeout), whatever that answer was."""
        return self.verdict.ok

    @property
    def ok(self) -> bool:
        return self.ran and self.exit_code == 0 and not self.timed_out

    @property
    def last_line(self) -> str:
        lines = [ln for ln in self.output.splitlines() if ln.strip()]
        return lines[-1][:200] if lines else ""

    def answer(self) -> str:
        """``exit 0``, ``exit 3``, ``killed after 60 s (timeout)``, or why it could not run."""
        if not self.ran:
            st = self.verdict.failed_stage
            return f"could not run ({st.layer.value}): {st.detail}" if st is not None else "could not run"
        if self.timed_out:
            return f"killed after {self.timeout:g} s (timeout)"
        return f"exit {self.exit_code}"

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.name, "where": self.where, "command": self.command, "ok": self.ok, "ran": self.ran,
                "exit_code": self.exit_code, "timed_out": self.timed_out, "output": self.output,
                "truncated": self.omitted_bytes > 0, "omitted_bytes": self.omitted_bytes,
                "duration_s": round(self.duration_s, 4), "verdict": self.verdict.to_dict()}


def _stage_layer(action: ActionConfig, runtime: Runtime) -> Layer:
    """Where a failure of the action's command lies: the runtime's command layer inside the target, the host's outside."""
    return runtime.command_layer if action.where == "target" else Layer.HOST


def _decode(out: bytes) -> str:
    return "\n".join(sanitize(line) for line in out.decode("utf-8", "replace").split("\n")).rstrip("\n")


async def run_user_action(ctx: ActionContext, action: ActionConfig, job: JobRecord | None = None, attempt: int | None = None,
                          *, confirmed: str | None = None, cap: int = MAX_OUTPUT) -> UserActionResult:
    """Run ``action`` once; never raises for a remote failure (it becomes the failing stage)."""
    name, layer = action.name, _stage_layer(action, ctx.transport.runtime)
    stage_name = f"run ({action.where})"
    v = Verdict(name)
    res = UserActionResult(name, action.where, action.command, v, timeout=action.timeout)

    def decide(stage: Stage) -> UserActionResult:
        v.add(stage)
        if ctx.on_stage is not None:
            ctx.on_stage(name, stage)
        v.finish()
        return res

    t0 = time.monotonic()
    try:
        res.command = command_for(action, ctx.cfg, job, attempt)
    except MissingField as e:
        return decide(Stage(stage_name, Status.FAIL, Layer.PROCESS, str(e), advice="run an attempt (or launch) first"))
    if confirmed is not None and confirmed != res.command:
        return decide(Stage(stage_name, Status.FAIL, Layer.PROCESS,
                            "nothing ran: the command changed since it was confirmed (the recorded job changed)",
                            evidence=Evidence(command=res.command), advice=f"confirm it again; it was: {confirmed}"))
    if ctx.on_stage is not None:
        ctx.on_stage(name, Stage(stage_name, Status.RUNNING, layer, res.command))
    script = remote_script(res.command, action.timeout, cap)
    try:
        if action.where == "host":
            out = await ctx.transport.run_host(script, timeout=action.timeout + CLIENT_GRACE_S)
        else:
            out = await ctx.transport.run_channel(script, timeout=action.timeout + CLIENT_GRACE_S)
    except RemoteError as e:
        res.duration_s = time.monotonic() - t0
        return decide(Stage(stage_name, Status.FAIL, e.layer, e.message, evidence=e.evidence(), advice=e.hint,
                            duration_s=res.duration_s))
    res.duration_s = out.duration_s
    marks = {m.group(1).decode(): m.group(2) for m in _MARKS.finditer(out.stderr)}
    extra = _MARKS.sub(b"", out.stderr).strip()
    if "ran" not in marks:
        lay, msg, hint = classify_start_failure(out.exit_code, out.err_text, runtime=ctx.cfg.target.runtime)
        if action.where == "host":
            lay, msg = Layer.HOST, f"the host's shell did not start (exit {out.exit_code}): {out.err_text.strip()[:300]}"
        return decide(Stage(stage_name, Status.FAIL, lay, msg, evidence=out.evidence(), advice=hint, duration_s=res.duration_s))
    rc = marks.get("rc")
    res.exit_code = int(rc) if rc is not None else out.exit_code
    res.timed_out = out.timed_out or (res.exit_code in (124, 137) and out.duration_s >= _seconds(action.timeout) - 0.5)
    if res.timed_out:
        res.exit_code = None
    more = marks.get("more")
    res.omitted_bytes = int(more) if more is not None else 0
    res.output = _decode(out.stdout + (b"\n" + extra if extra else b""))
    detail = res.answer()
    if rc is None and not res.timed_out:
        detail = f"ended without reporting its exit status (channel exit {out.exit_code})"
    lines = res.output.count("\n") + 1 if res.output else 0
    detail += f" · {lines} lines" + (f" (+{res.omitted_bytes} bytes not kept)" if res.omitted_bytes else "")
    ev = Evidence(command=res.command, exit_code=res.exit_code, output=res.output[-2000:])
    return decide(Stage(stage_name, Status.OK, layer, detail, evidence=ev, duration_s=res.duration_s,
                        data={"exit_code": res.exit_code, "timed_out": res.timed_out}))
