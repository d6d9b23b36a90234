"""The template of a user action (``[[actions]] command``): its fields, checks and rendering.

The template is the user's own shell code and is trusted; the **values** are not: each
``{field}`` becomes ``shlex.quote(value)``, so a workdir named ``$(touch x)`` stays a name.  Other
braces are left alone (``${HOME}``, ``awk '{print $1}'``); ``{{`` and ``}}`` write a literal brace
where one would otherwise read as a field (``${{name}}``).  A field inside quotes is refused at
load: the quotes cockpit adds would become part of the value.  Plain data, no I/O.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from .actions.jobrecord import JobRecord
    from .config.sections import DeployConfig, GPUConfig, JobConfig, TargetConfig

__all__ = ["FIELDS", "JOB_FIELDS", "MissingField", "template_fields", "check_template", "render", "field_values", "FieldSource"]

#: every ``{field}`` a template may use, and where its value comes from
FIELDS: dict[str, str] = {
    "workdir": "[job] workdir",
    "container": "[target] container (runtime = \"pct\")",
    "host": "[target] host (\"localhost\" for the local transport)",
    "target": "the target's name ([target] name, else the host)",
    "pct": "[target] pct, the pct command on the host",
    "nvidia_smi": "[gpu] nvidia_smi",
    "deploy_dest": "[deploy] dest",
    "log": "the log file of the job cockpit launched last",
    "job_pid": "the pid cockpit recorded for its job (the job's supervisor shell)",
    "job_pgid": "the job's process group",
    "attempt": "the attempt number of that job",
}
#: fields that need a job recorded by cockpit (an attempt or a launch)
JOB_FIELDS = frozenset({"log", "job_pid", "job_pgid", "attempt"})


_TOKEN = re.compile(r"\{\{|\}\}|\{([a-z_][a-z0-9_]*)\}")


class MissingField(Exception):
    """A template field has no value now (no job recorded yet)."""

    def __init__(self, name: str, field: str) -> None:
        self.name, self.field = name, field
        super().__init__(f"{name}: {{{field}}} has no value: no job recorded by cockpit")


def template_fields(template: str) -> list[str]:
    """The ``{field}`` names a template uses, in order (duplicates kept)."""
    return [m.group(1) for m in _TOKEN.finditer(template) if m.group(1)]


def _quoted_at(template: str, pos: int) -> str | None:
    """The quote character open at ``pos`` in shell text (``'`` or ``"``), or None."""
    quote: str | None = None
    i = 0
    while i < pos:
        c = template[i]
        if quote == "'":
            quote = None if c == "'" else quote
        elif c == "\\":
            i += 1
        elif quote == '"':
            quote = None if c == '"' else quote
        elif c in "'\"":
            quote = c
        i += 1
    return quote


def check_template(template: str) -> tuple[str, str] | None:
    """(problem, fix) for a template cockpit cannot fill in safely, else None."""
    for m in _TOKEN.finditer(template):
        name = m.group(1)
        if not name:
            continue
        if name not in FIELDS:
            close = difflib.get_close_matches(name, list(FIELDS), n=1)
            hint = f"did you mean {{{close[0]}}}? " if close else ""
            return (f"uses an unknown field {{{name}}}",
                    hint + "known fields: " + ", ".join(f"{{{f}}}" for f in FIELDS)
                    + f"; a literal brace is written {{{{ (e.g. ${{{{{name}}}}} for a shell variable)")
        q = _quoted_at(template, m.start())
        if q is not None:
            return (f"has {{{name}}} inside {q}quotes{q}: cockpit quotes every value itself, so the quotes would become part of it",
                    f"remove the quotes around {{{name}}} (write {{{name}}}/sub, not {q}{{{name}}}/sub{q})")
    return None


def render(template: str, values: Mapping[str, str | None], *, name: str = "action") -> str:
    """The template with each ``{field}`` replaced by its shell-quoted value."""

    def sub(m: re.Match[str]) -> str:
        field = m.group(1)
        if not field:
            return m.group(0)[0]
        value = values.get(field)
        if value is None:
            raise MissingField(name, field)
        return shlex.quote(value)

    return _TOKEN.sub(sub, template)


class FieldSource(Protocol):
    """What :func:`field_values` reads of the config.  The config's ``[[actions]]`` checks stand on
    this module, so it names only the sections the fields come from."""

    @property
    def target(self) -> TargetConfig: ...
    @property
    def job(self) -> JobConfig: ...
    @property
    def gpu(self) -> GPUConfig: ...
    @property
    def deploy(self) -> DeployConfig: ...
    @property
    def display_name(self) -> str: ...


def field_values(cfg: FieldSource, job: JobRecord | None = None, attempt: int | None = None) -> dict[str, str | None]:
    """Every field's value now: from the config, and from the job cockpit launched last."""
    t = cfg.target
    values: dict[str, str | None] = {
        "workdir": cfg.job.workdir,
        "container": str(t.container) if t.container is not None else None,
        "host": t.host or "localhost",
        "target": cfg.display_name,
        "pct": t.pct,
        "nvidia_smi": cfg.gpu.nvidia_smi,
        "deploy_dest": cfg.deploy.dest,
    }
    values.update(dict.fromkeys(JOB_FIELDS))
    if job is not None and job.pid is not None:
        values.update(log=job.log_path or None, job_pid=str(job.pid), job_pgid=str(job.pgid or job.pid),
                      attempt=str(attempt if attempt is not None else job.attempt))
    return values
