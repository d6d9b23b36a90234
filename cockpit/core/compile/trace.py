"""An incremental parser of torch's structured trace (``TORCH_TRACE=DIR``).

Each process of a job writes ``DIR/dedicated_log_torch_trace_[rank_N_]XXXXXXXX.log``: one glog
line per event, ``V1203 16:40:00.123456 1234 torch/_dynamo/utils.py:2022] {json envelope}``,
followed for some events by tab-indented payload lines.  The number after the time is the process
id in current torch (the thread id in torch 2.2 to 2.4).  The envelope's first key names the event
(``dynamo_start``, ``compilation_metrics``, ``artifact``, ``str`` …); ``frame_id``,
``frame_compile_id`` and ``attempt`` place it in a compile.

:class:`TraceParser` takes bytes as they arrive (cut anywhere, even mid-line or mid-character),
from several files at once (one ``source`` each), and returns :class:`TraceEvent` s.  A payload is
attached to the envelope before it and capped; a line that is not a trace line is counted in
``malformed`` and skipped.  Nothing here raises on bad input.

The target-side filter (:mod:`cockpit.core.compile.filter`) writes the same glog lines, compacted,
with the payload inside the envelope under ``"cockpit"``; this parser reads both forms.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: the glog prefix torch writes (an optional ``[rankN]:`` of the non-trace logs is accepted too)
GLOG = re.compile(
    r"^(?:\[rank\d+\]:)?(?P<level>[VIWEC])(?P<month>\d\d)(?P<day>\d\d) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)\.(?P<us>\d{6}) "
    r"(?P<ident>\d+) (?P<where>[^\]\s]+:\d+)\](?: \[[^\]]*\])* (?P<json>\{.*)$"
)
RANK_IN_NAME = re.compile(r"dedicated_log_torch_trace_rank_(\d+)_")
#: envelope keys that place an event rather than name it
META_KEYS = frozenset({"frame_id", "frame_compile_id", "attempt", "has_payload", "rank", "compiled_autograd_id", "cockpit"})
PAYLOAD_CAP = 8192
LINE_CAP = 1 << 20


def rank_of(source: str) -> int | None:
    """The rank a trace file's name carries (``…_rank_3_xxxx.log`` → 3), or None."""
    m = RANK_IN_NAME.search(source)
    return int(m.group(1)) if m else None


@dataclass
class TraceEvent:
    """One envelope of the trace, with its payload (possibly cut to the parser's cap)."""

    source: str
    level: str
    clock: str  # the glog time as written: "1203 16:40:00.123456"
    t: float  # that time in seconds (days of the year folded in; no year in the trace)
    ident: int  # the number after the time: the process id (thread id in torch 2.2-2.4)
    where: str  # torch's source file and line that logged it
    kind: str  # the envelope's event name: "compilation_metrics", "artifact", …
    envelope: dict[str, Any]
    payload: str = ""
    payload_cut: bool = False
    rank: int | None = None

    @property
    def data(self) -> dict[str, Any]:
        """The envelope's value under its kind (``{}`` when it is not an object)."""
        value = self.envelope.get(self.kind)
        return value if isinstance(value, dict) else {}

    @property
    def name(self) -> str:
        """An artifact's name (``recompile_reasons``, ``fx_graph_cache_hit`` …), else the kind."""
        if self.kind == "artifact":
            return str(self.data.get("name", ""))
        return self.kind

    @property
    def frame_id(self) -> int | None:
        value = self.envelope.get("frame_id")
        return value if isinstance(value, int) else None

    @property
    def compile_id(self) -> str | None:
        """``"frame/compile"`` as torch writes it (``0/1``: frame 0, its second compile)."""
        f, c = self.envelope.get("frame_id"), self.envelope.get("frame_compile_id")
        if isinstance(f, int) and isinstance(c, int):
            return f"{f}/{c}"
        return None

    @property
    def attempt(self) -> int:
        value = self.envelope.get("attempt")
        return value if isinstance(value, int) else 0


def glog_seconds(month: int, day: int, h: int, m: int, s: int, us: int) -> float:
    """Seconds for a glog time; months counted as 31 days, which keeps the order within a year."""
    return (((month * 31 + day) * 24 + h) * 60 + m) * 60 + s + us / 1e6


@dataclass
class _Source:
    buf: bytearray = field(default_factory=bytearray)
    skipping: bool = False  # inside an over-long line: drop until its newline
    pending: TraceEvent | None = None
    parts: list[str] = field(default_factory=list)
    size: int = 0
    strings: dict[int, str] = field(default_factory=dict)


class TraceParser:
    """Feed trace text as it arrives; get events back.  ``malformed`` counts skipped lines."""

    def __init__(self, payload_cap: int = PAYLOAD_CAP, line_cap: int = LINE_CAP) -> None:
        self.payload_cap = payload_cap
        self.line_cap = line_cap
        self.lines = 0
        self.malformed = 0
        self.bytes = 0
        self._sources: dict[str, _Source] = {}

    def feed(self, data: bytes | str, source: str = "") -> list[TraceEvent]:
        """Parse what ``data`` completes of ``source``'s text; the rest waits for the next feed."""
        st = self._sources.setdefault(source, _Source())
        raw = data.encode() if isinstance(data, str) else bytes(data)
        self.bytes += len(raw)
        out: list[TraceEvent] = []
        st.buf += raw
        while True:
            nl = st.buf.find(b"\n")
            if nl < 0:
                if len(st.buf) > self.line_cap:
                    self._overlong(st, source, out)
                break
            line = bytes(st.buf[:nl])
            del st.buf[: nl + 1]
            if st.skipping:
                st.skipping = False
                continue
            self._line(st, source, line.decode("utf-8", "replace").rstrip("\r"), out)
        return out

    def close(self, source: str | None = None) -> list[TraceEvent]:
        """End of input for ``source`` (all sources when None): its last line and pending event."""
        out: list[TraceEvent] = []
        for name in [source] if source is not None else list(self._sources):
            st = self._sources.get(name)
            if st is None:
                continue
            if st.buf and not st.skipping:
                self._line(st, name, bytes(st.buf).decode("utf-8", "replace").rstrip("\r"), out)
            st.buf.clear()
            st.skipping = False
            self._finish(st, out)
        return out

    def _overlong(self, st: _Source, source: str, out: list[TraceEvent]) -> None:
        """A line longer than ``line_cap`` with no end yet: keep what a payload may, drop the rest."""
        head = bytes(st.buf[: self.line_cap]).decode("utf-8", "replace")
        st.buf.clear()
        if not st.skipping:
            if head.startswith("\t") and st.pending is not None:
                self._payload(st, head[1:])
            else:
                self.lines += 1
                self.malformed += 1
        st.skipping = True

    def _line(self, st: _Source, source: str, line: str, out: list[TraceEvent]) -> None:
        if line.startswith("\t"):
            if st.pending is not None:
                self._payload(st, line[1:])
            else:
                self.lines += 1
                self.malformed += 1  # a payload line with no envelope before it
            return
        self._finish(st, out)
        if not line.strip():
            return
        self.lines += 1
        event = self._envelope(st, source, line)
        if event is None:
            self.malformed += 1
        elif event.kind == "str":
            self._intern(st, event)
        elif "has_payload" in event.envelope and "cockpit" not in event.envelope:
            st.pending, st.parts, st.size = event, [], 0
        else:
            out.append(event)

    def _envelope(self, st: _Source, source: str, line: str) -> TraceEvent | None:
        m = GLOG.match(line)
        if m is None:
            return None
        try:
            envelope = json.loads(m.group("json"))
        except ValueError:
            return None
        if not isinstance(envelope, dict):
            return None
        kinds = [k for k in envelope if k not in META_KEYS]
        kind = kinds[0] if kinds else ""
        if not kind:
            return None
        g = m.groupdict()
        t = glog_seconds(int(g["month"]), int(g["day"]), int(g["h"]), int(g["m"]), int(g["s"]), int(g["us"]))
        extra = envelope.get("cockpit")
        src = str(extra.get("src", source)) if isinstance(extra, dict) else source
        event = TraceEvent(source=src, level=g["level"], clock=f"{g['month']}{g['day']} {g['h']}:{g['m']}:{g['s']}.{g['us']}",
                           t=t, ident=int(g["ident"]), where=g["where"], kind=kind, envelope=envelope, rank=rank_of(src))
        if isinstance(envelope.get("rank"), int):
            event.rank = envelope["rank"]
        if isinstance(extra, dict):
            event.payload = str(extra.get("payload", ""))[: self.payload_cap]
            event.payload_cut = bool(extra.get("cut", False)) or len(str(extra.get("payload", ""))) > self.payload_cap
        self._resolve_stack(st, event)
        return event

    def _payload(self, st: _Source, text: str) -> None:
        if st.pending is None or st.pending.payload_cut:
            return
        room = self.payload_cap - st.size
        piece = text if len(text) + 1 <= room else text[: max(0, room - 1)]
        st.parts.append(piece)
        st.size += len(piece) + 1
        if piece != text:
            st.pending.payload_cut = True

    def _finish(self, st: _Source, out: list[TraceEvent]) -> None:
        if st.pending is not None:
            st.pending.payload = "\n".join(st.parts)
            out.append(st.pending)
        st.pending, st.parts, st.size = None, [], 0

    @staticmethod
    def _intern(st: _Source, event: TraceEvent) -> None:
        """``{"str": ["/path/file.py", 3]}``: torch's string table for the stacks' file names."""
        value = event.envelope.get("str")
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int):
            st.strings[value[1]] = value[0]

    @staticmethod
    def _resolve_stack(st: _Source, event: TraceEvent) -> None:
        """Replace interned file numbers in a ``dynamo_start`` stack with the file names."""
        stack = event.data.get("stack") if event.kind == "dynamo_start" else None
        if not isinstance(stack, list):
            return
        for frame in stack:
            if isinstance(frame, dict) and isinstance(frame.get("filename"), int) and frame["filename"] in st.strings:
                frame["filename"] = st.strings[frame["filename"]]


def parse_text(text: str | bytes, source: str = "") -> tuple[list[TraceEvent], TraceParser]:
    """Parse a whole trace at once: its events and the parser (for ``lines`` and ``malformed``)."""
    parser = TraceParser()
    events = parser.feed(text, source)
    events += parser.close(source)
    return events, parser
