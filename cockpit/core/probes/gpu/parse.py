"""Reading the GPU probe's framed output into a :class:`~.model.GPUSnapshot`; never raises.

The output is cut into its frames (``query-gpu``, ``compute-apps``, each closed by ``rc N
[flag]``), each frame's csv rows become :class:`~.model.GPU` / :class:`~.model.GPUProcess` objects
(values read with :func:`~.values.parse_value`), and each failed query becomes a finding
(:func:`~.findings.diagnose`).  A bare ``--query-gpu`` output without frames is read too.

A frame's first line names its columns (``@@cockpit-gpu query-gpu index,name,…``); a field that
was not asked for (an older driver does not know it) is an NA with reason :data:`NOT_QUERIED`.
A frame without the list has every column of :data:`~.command.GPU_FIELDS` / ``APP_FIELDS``.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from ...layers import Finding, Layer, Severity
from ..text import to_text
from .command import FIELD_TABLES, MARK, GpuField
from .findings import diagnose, value_findings
from .model import GPU, GPUProcess, GPUSnapshot
from .procmap import parse_fdscan, parse_proc_sections
from .values import NaType, is_na, parse_value

__all__ = ["parse_gpu_output", "NOT_QUERIED"]

#: the NA reason of a field the probe did not ask for (the driver does not know it)
NOT_QUERIED = "[Not Queried: unknown to this driver]"

log = logging.getLogger(__name__)


def _split_row(line: str, spec: tuple[GpuField, ...]) -> list[str] | None:
    parts = [p.strip() for p in line.split(",")]
    n = len(spec)
    if len(parts) < n:
        return None
    if len(parts) > n:  # the free-text field contained commas
        free = next((i for i, f in enumerate(spec) if f.free_text), None)
        if free is None:
            return None
        extra = len(parts) - n
        parts = parts[:free] + [", ".join(parts[free : free + extra + 1])] + parts[free + extra + 1 :]
    return parts


def _row(line: str, spec: tuple[GpuField, ...], table: tuple[GpuField, ...]) -> dict[str, Any] | None:
    """One csv row's values by attribute name (every attribute of ``table``: those not in
    ``spec`` are NA, reason :data:`NOT_QUERIED`), or None when the line is not a data row."""
    parts = _split_row(line, spec)
    if parts is None:
        return None
    values = {f.attr: parse_value(v, f.kind) for f, v in zip(spec, parts, strict=True)}
    first = values[spec[0].attr]
    # a data row starts with a number (index / pid); anything else is a message line
    if isinstance(first, NaType) and first.reason.startswith("unparseable"):
        return None
    for f in table:
        values.setdefault(f.attr, NaType(NOT_QUERIED))
    return values


def _spec(what: str, names: str | None) -> tuple[GpuField, ...]:
    """The columns a frame header names (all of the query's table when it names none or one
    cockpit does not know)."""
    table = FIELD_TABLES[what]
    if not names:
        return table
    by_query = {f.query: f for f in table}
    spec = tuple(by_query.get(n) for n in names.split(","))
    if not spec or any(f is None for f in spec):
        return table
    return spec  # type: ignore[return-value]


_FRAME = re.compile(
    rf"^{MARK} (?:(?P<what>query-gpu|compute-apps)(?: (?P<fields>[\w.,]+))?|rc (?P<rc>-?\d+)(?: (?P<flag>\w+))?)\s*$"
)


@dataclass
class _Frames:
    """The probe's output cut into frames."""

    sections: dict[str, list[str]] = field(default_factory=dict)  # query -> its output lines
    results: dict[str, tuple[int, str | None]] = field(default_factory=dict)  # query -> (rc, flag)
    specs: dict[str, tuple[GpuField, ...]] = field(default_factory=dict)  # query -> the columns asked for
    framed: bool = False


def _frames(out: str, err: str, exit_code: int | None) -> _Frames:
    fr = _Frames()
    current: str | None = None
    loose: list[str] = []
    prefixed = False  # v2: data lines are "| LINE"; anything else is not nvidia-smi's output
    for line in out.splitlines():
        m = _FRAME.match(line) if line.startswith(MARK) else None
        if m:
            fr.framed = True
            if m.group("rc") is not None:
                if current is not None:
                    fr.results[current] = (int(m.group("rc")), m.group("flag"))
                current = None
            else:
                current = m.group("what")
                fr.sections.setdefault(current, [])
                fr.specs[current] = _spec(current, m.group("fields"))
            continue
        if line.startswith(MARK):
            if line.rstrip() == f"{MARK} v2":
                prefixed = True
                continue
            if line.startswith((f"{MARK} procs", f"{MARK} fdscan")):
                break  # the /proc descriptions or the fd scan (.procmap) follow: no more frames
            if prefixed:
                continue  # another probe's line (v2 marks every data line)
        elif prefixed:
            if not line.startswith("|"):
                continue
            line = line[2:] if line.startswith("| ") else line[1:]
        if current is not None:
            fr.sections[current].append(line)
        else:
            loose.append(line)
    if not fr.framed:
        # a bare query: stdout holds the rows, exit_code is nvidia-smi's
        fr.sections["query-gpu"] = loose + err.splitlines()
        fr.results["query-gpu"] = (exit_code if exit_code is not None else 0, None)
    else:
        for what in ("query-gpu", "compute-apps"):
            if what in fr.sections and what not in fr.results:
                # frame opened but never closed: the shell died or the output was cut
                fr.results[what] = (exit_code if exit_code not in (None, 0) else 255, "cut")
    return fr


def parse_gpu_output(
    stdout: str | bytes | None,
    stderr: str | bytes | None = "",
    exit_code: int | None = 0,
    *,
    collected_at: float | None = None,
    timeout_s: float | None = None,
) -> GPUSnapshot:
    """Parse :func:`~.command.gpu_query_command`'s output (or a bare ``--query-gpu`` output); never raises."""
    snap = GPUSnapshot(collected_at=time.time() if collected_at is None else collected_at)
    try:
        _parse_into(snap, to_text(stdout), to_text(stderr), exit_code, timeout_s)
    except Exception as exc:  # a parser bug must not end polling: it is logged and becomes a finding
        log.debug("parse_gpu_output failed", exc_info=True)
        snap.findings.append(
            Finding(Layer.GPU, "parse-error", f"could not read nvidia-smi output: {exc!r}", severity=Severity.WARNING)
        )
    errors = [f for f in snap.findings if f.severity is Severity.ERROR]
    snap.error = errors[0].summary if errors else None
    return snap


def _read_rows(snap: GPUSnapshot, fr: _Frames) -> None:
    gpu_table, app_table = FIELD_TABLES["query-gpu"], FIELD_TABLES["compute-apps"]
    gpu_spec, app_spec = fr.specs.get("query-gpu", gpu_table), fr.specs.get("compute-apps", app_table)
    for line in fr.sections.get("query-gpu", []):
        if not line.strip():
            continue
        values = _row(line, gpu_spec, gpu_table)
        if values is None:
            snap.unparsed.append(line[:500])
        else:
            snap.gpus.append(GPU(**values))
    by_uuid = {g.uuid: g.index for g in snap.gpus if not is_na(g.uuid)}
    for line in fr.sections.get("compute-apps", []):
        if not line.strip():
            continue
        values = _row(line, app_spec, app_table)
        if values is None:
            snap.unparsed.append(line[:500])
        else:
            p = GPUProcess(**values)
            p.gpu_index = by_uuid.get(p.gpu_uuid, NaType("[N/A]"))
            snap.processes.append(p)


def _query_findings(
    snap: GPUSnapshot, fr: _Frames, err: str, exit_code: int | None, timeout_s: float | None
) -> None:
    for what in ("query-gpu", "compute-apps"):
        if what not in fr.results:
            continue
        rc, flag = fr.results[what]
        snap.exit_codes[what] = rc
        if rc == 0 and not flag:
            continue
        text = "\n".join(fr.sections.get(what, []))
        if what == "query-gpu" and not fr.framed:
            text = "\n".join(ln for ln in text.splitlines() if ln in snap.unparsed)
        elif snap.gpus or snap.processes:
            text = "\n".join(ln for ln in text.splitlines() if ln[:500] in snap.unparsed)
        if flag == "cut":
            snap.findings.append(
                Finding(
                    Layer.GPU,
                    "probe-cut",
                    f"the GPU probe's output ended inside the {what} query (exit {exit_code})",
                    advice="The shell running the probe died or was cut off; see the transport's error.",
                    severity=Severity.WARNING,
                    subject={"query": what, "exit_code": exit_code, "stderr": err[-2000:]},
                )
            )
        else:
            snap.findings.append(diagnose(rc, flag, text or err, what, timeout_s))


def _parse_into(snap: GPUSnapshot, out: str, err: str, exit_code: int | None, timeout_s: float | None) -> None:
    fr = _frames(out, err, exit_code)
    _read_rows(snap, fr)
    _query_findings(snap, fr, err, exit_code, timeout_s)
    if not fr.results and not snap.gpus:
        snap.findings.append(
            Finding(
                Layer.GPU,
                "probe-failed",
                "the GPU probe printed nothing readable" + (f" (exit {exit_code})" if exit_code else ""),
                advice="See the transport's error and the probe's stderr.",
                severity=Severity.ERROR,
                subject={"exit_code": exit_code, "stdout": out[-2000:], "stderr": err[-2000:]},
            )
        )
    if snap.unparsed and "query-gpu" in fr.results and fr.results["query-gpu"][0] == 0:
        snap.findings.append(
            Finding(
                Layer.GPU,
                "unparsed-output",
                f"{len(snap.unparsed)} line(s) of nvidia-smi output were not data: {snap.unparsed[0][:160]}",
                severity=Severity.WARNING,
                subject={"lines": snap.unparsed[:20]},
            )
        )
    snap.findings.extend(value_findings(snap.gpus))
    snap.pid_table = parse_proc_sections(out)
    snap.fd_holders = parse_fdscan(out)
