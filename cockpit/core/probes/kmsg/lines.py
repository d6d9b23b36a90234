"""One kernel message: :class:`KmsgLine`, and reading its timestamp in any of the probe's formats.

``dmesg --time-format iso`` and ``journalctl -k -o short-iso`` give ISO times (the journal adds the
host name and ``kernel:``), plain ``dmesg`` gives ``[seconds since boot]`` (converted with the boot
time), and ``dmesg -T`` text pasted by hand gives ``[Tue Jun  4 14:03:07 2024]``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime

__all__ = ["KmsgLine", "split_line"]


@dataclass(frozen=True)
class KmsgLine:
    """One kernel message, its timestamp split off."""

    ts: float | None  # epoch seconds, when known
    uptime: float | None  # seconds since boot, when given
    text: str  # the message without its timestamp
    line_no: int = 0


_ISO = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[,.]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+(?P<msg>.*)$"
)
_RAW = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?(?P<msg>.*)$")
_CTIME = re.compile(r"^\[(?P<ct>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?(?P<msg>.*)$")
_JOURNAL_HOST = re.compile(r"^\S+ kernel: ")


def _parse_iso(ts: str) -> float | None:
    t = ts.replace(",", ".")
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    m = re.search(r"([+-])(\d\d)(\d\d)$", t)
    if m and t[m.start() - 1 : m.start()] != ":":
        t = t[: m.start()] + f"{m.group(1)}{m.group(2)}:{m.group(3)}"
    # Python 3.10's fromisoformat wants 3 or 6 fraction digits
    m = re.search(r"\.(\d+)", t)
    if m:
        frac = (m.group(1) + "000000")[:6]
        t = t[: m.start()] + "." + frac + t[m.end() :]
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        return None
    if dt.tzinfo is None:
        return time.mktime(dt.timetuple()) + dt.microsecond / 1e6
    return dt.timestamp()


def split_line(line: str, boot: float | None) -> tuple[float | None, float | None, str]:
    """``(epoch seconds or None, seconds since boot or None, message)`` for one line of output."""
    m = _ISO.match(line)
    if m:
        msg = _JOURNAL_HOST.sub("", m.group("msg"), count=1)
        return _parse_iso(m.group("ts")), None, msg
    m = _RAW.match(line)
    if m:
        up = float(m.group("up"))
        return (boot + up if boot is not None else None), up, m.group("msg")
    m = _CTIME.match(line)
    if m:
        try:
            ts = time.mktime(time.strptime(m.group("ct"), "%a %b %d %H:%M:%S %Y"))
        except (ValueError, OverflowError):
            ts = None
        return ts, None, m.group("msg")
    return None, None, line
