"""Reading the kernel-message probe's output into a :class:`KmsgReport`; never raises.

The probe's own ``@@cockpit-kmsg`` lines give the host's boot time and the source that answered;
every other line becomes a :class:`~.lines.KmsgLine`, and :func:`~.findings.add_findings` reads
them.  Plain ``dmesg`` or ``journalctl -k`` text without those lines is read too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ...layers import Finding
from ..text import to_text
from .command import MARK
from .findings import add_findings
from .lines import KmsgLine, split_line

__all__ = ["KmsgReport", "parse_kmsg"]

log = logging.getLogger(__name__)


@dataclass
class KmsgReport:
    """What one read of the host's kernel messages found."""

    source: str = "unknown"  # dmesg-iso | dmesg-raw | journal | unavailable | unknown
    boot_time: float | None = None
    findings: list[Finding] = field(default_factory=list)
    lines: list[KmsgLine] = field(default_factory=list)  # only with keep_lines=True
    line_count: int = 0
    error: str | None = None  # why no messages could be read

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "boot_time": self.boot_time,
            "findings": [f.to_dict() for f in self.findings],
            "line_count": self.line_count,
            "error": self.error,
        }


def parse_kmsg(text: str | bytes | None, *, boot_time: float | None = None, keep_lines: bool = False) -> KmsgReport:
    """Parse :func:`~.command.kmsg_command`'s output (or plain ``dmesg``/``journalctl -k`` text); never raises."""
    rep = KmsgReport(boot_time=boot_time)
    try:
        _parse(rep, text, keep_lines)
    except Exception as exc:  # a parser bug must not end polling: it is logged and shown as the report's error
        log.debug("parse_kmsg failed", exc_info=True)
        rep.error = f"could not read kernel messages: {exc!r}"
    return rep


def _parse(rep: KmsgReport, text: str | bytes | None, keep_lines: bool) -> None:
    body: list[str] = []
    unavailable: list[str] = []
    for raw in to_text(text).splitlines():
        if raw.startswith(MARK):
            bits = raw.split()
            if len(bits) >= 2 and bits[1] == "btime":
                if len(bits) >= 3:
                    try:
                        rep.boot_time = float(bits[2])
                    except ValueError:
                        pass  # an empty or odd btime: the boot time stays unknown
            elif len(bits) >= 2:
                rep.source = bits[1]
            continue
        if rep.source == "unavailable":
            unavailable.append(raw)
        else:
            body.append(raw)
    if rep.source == "unavailable":
        rep.error = "no kernel messages readable on the host" + (f": {unavailable[-1].strip()}" if unavailable else "")
        return

    lines: list[KmsgLine] = []
    for i, raw in enumerate(body, 1):
        if not raw.strip():
            continue
        ts, up, msg = split_line(raw, rep.boot_time)
        lines.append(KmsgLine(ts, up, msg, i))
    rep.line_count = len(lines)
    if keep_lines:
        rep.lines = lines
    add_findings(lines, rep.findings)
