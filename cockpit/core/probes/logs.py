"""The pure part of the log follower: a probe command, its state machine, a bounded ring.

The follower reads the job's log by **byte offset** with one short command per poll
(:func:`log_probe_command`), through the persistent session; no long-lived ``tail -f`` channel.
The command prints one header line, the bytes, and a trailer::

    @@cockpit-log ok INODE SIZE START COUNT\\n<COUNT raw bytes>\\n@@cockpit-log end\\n
    @@cockpit-log missing | notfile | unreadable

``START`` is where the bytes begin.  When the follower already has data it asks for a few bytes
*before* its offset too (the overlap) and checks they are still the bytes it read: a log that was
truncated and rewritten past the old offset (``python train.py > log`` again, same inode) is caught
even though its size and inode look fine.  ``COUNT`` is computed from ``stat`` before reading, so a
file that grows meanwhile never makes the read longer than announced.

:class:`LogFollowerState` turns each probe's stdout into a :class:`LogUpdate`: events for the UI
(``appeared``, ``missing``, ``deleted``, ``truncated``, ``replaced``, ``rewritten``, ``skipped``,
``line-cut``, ``unreadable``, ``not-a-file``, ``probe-error``), the new complete lines (sanitised,
capped at ``max_line_bytes`` with a ``… [N bytes cut]`` marker while the offset still counts every
byte), and the classifier's matches for them.  A partial last line waits for its newline.
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..text import sanitize as _sanitize
from .signatures import Classifier, Match

__all__ = [
    "LogRing",
    "LogEvent",
    "LogUpdate",
    "LogFollowerState",
    "log_probe_command",
    "sanitize",
    "LOG_MARK",
]

LOG_MARK = "@@cockpit-log"
_MARK_B = LOG_MARK.encode()
_TRAILER = b"\n" + _MARK_B + b" end"


def log_probe_command(path: str, offset: int, max_bytes: int, overlap: int = 0) -> str:
    """One ``sh`` command: the file's inode and size, then up to ``max_bytes`` bytes from
    ``offset - overlap`` (see the module docstring for the framing)."""
    offset = max(0, int(offset))
    overlap = max(0, min(int(overlap), offset))
    max_bytes = max(0, int(max_bytes))
    start = offset - overlap
    want = max_bytes + overlap
    p = path if not path.startswith("-") else "./" + path
    q = shlex.quote(p)
    return (
        f"_cl_p={q}; "
        f"if [ ! -e \"$_cl_p\" ]; then echo '{LOG_MARK} missing'; "
        f"elif [ ! -f \"$_cl_p\" ]; then echo '{LOG_MARK} notfile'; "
        f"elif [ ! -r \"$_cl_p\" ]; then echo '{LOG_MARK} unreadable'; "
        "else _cl_s=$(stat -L -c '%i %s' \"$_cl_p\" 2>/dev/null) || _cl_s=\"- $(wc -c <\"$_cl_p\")\"; "
        "_cl_i=${_cl_s%% *}; _cl_z=${_cl_s##* }; "
        f"_cl_n=$((_cl_z - {start})); [ $_cl_n -gt {want} ] && _cl_n={want}; [ $_cl_n -lt 0 ] && _cl_n=0; "
        f"echo \"{LOG_MARK} ok $_cl_i $_cl_z {start} $_cl_n\"; "
        f"[ $_cl_n -gt 0 ] && tail -c +{start + 1} \"$_cl_p\" | head -c $_cl_n; "
        f"echo; echo '{LOG_MARK} end'; fi"
    )


# --------------------------------------------------------------------------------------------
# sanitising


def sanitize(line: str) -> str:
    """One log line made safe to show (:func:`cockpit.core.text.sanitize` as a terminal shows a
    line): a carriage return keeps what a terminal would show last (a progress bar's final
    state), ANSI escape sequences are removed, other control characters (NUL, lone ESC, C1
    controls, bidi controls, a newline) become visible symbols (``␀``, ``␛``, ``\\x9b``).  Tabs are kept.
    """
    return line if line.isprintable() else _sanitize(line, overprint=True)  # the hot path: most lines are clean


# --------------------------------------------------------------------------------------------
# ring


class LogRing:
    """The last ``maxlen`` lines; ``total`` counts every line ever appended."""

    def __init__(self, maxlen: int = 10000):
        self._d: deque[str] = deque(maxlen=max(1, maxlen))
        self.total = 0

    @property
    def maxlen(self) -> int:
        return self._d.maxlen or 0

    def append(self, line: str) -> None:
        self._d.append(line)
        self.total += 1

    def extend(self, lines: Iterable[str]) -> None:
        batch = lines if isinstance(lines, list) else list(lines)
        self._d.extend(batch)
        self.total += len(batch)

    def __len__(self) -> int:
        return len(self._d)

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __getitem__(self, i: int) -> str:
        return self._d[i]

    @property
    def first_line_no(self) -> int:
        """1-based number of the oldest line still held."""
        return self.total - len(self._d) + 1

    def tail(self, n: int) -> list[str]:
        if n <= 0:
            return []
        if n >= len(self._d):
            return list(self._d)
        return list(self._d)[-n:]

    def lines(self) -> list[str]:
        return list(self._d)

    def clear(self) -> None:
        self._d.clear()


# --------------------------------------------------------------------------------------------
# follower state


@dataclass(frozen=True)
class LogEvent:
    kind: str
    at: float
    detail: str = ""

    def to_dict(self) -> dict[str, str | float]:
        return {"kind": self.kind, "at": round(self.at, 3), "detail": self.detail}


@dataclass
class LogUpdate:
    """What one probe brought."""

    events: list[LogEvent] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)
    more: bool = False  # more bytes are waiting: probe again now
    bytes_read: int = 0


class LogFollowerState:
    """Follow one log file by byte offset; feed each complete line to a classifier.

    ``initial_tail_bytes``: a file first seen larger than this is read from its last
    ``initial_tail_bytes`` only (``None``: from the start).  After truncation or replacement the
    new file is always read from its start.
    """

    def __init__(
        self,
        path: str,
        *,
        ring: LogRing | None = None,
        classifier: Classifier | None = None,
        max_line_bytes: int = 16 * 1024,
        overlap: int = 64,
        initial_tail_bytes: int | None = 1 << 20,
        max_events: int = 200,
    ):
        self.path = path
        self.ring = ring if ring is not None else LogRing()
        self.classifier = classifier if classifier is not None else Classifier()
        self.max_line_bytes = max(64, int(max_line_bytes))
        self.overlap = max(0, int(overlap))
        self.initial_tail_bytes = initial_tail_bytes
        self.offset = 0
        self.inode: str | None = None
        self.size: int | None = None
        self.exists: bool | None = None
        self.first_seen_at: float | None = None
        self.missing_since: float | None = None
        self.last_growth_at: float | None = None
        self.last_probe_at: float | None = None
        self.events: deque[LogEvent] = deque(maxlen=max(1, max_events))
        self.lines_cut = 0
        self.restarts = 0
        self._tail = b""  # the last bytes before ``offset``, to verify the overlap
        self._partial = bytearray()
        self._partial_cut = 0
        self._drop_to_newline = False
        self._asked_start: int | None = None

    # -- the command --------------------------------------------------------------------

    def command(self, max_bytes: int = 1 << 20) -> str:
        """The probe to run now (depends on the current offset)."""
        ov = len(self._tail)
        self._asked_start = self.offset - ov
        return log_probe_command(self.path, self.offset, max_bytes, overlap=ov)

    # -- queries ------------------------------------------------------------------------

    def missing_for_s(self, now: float) -> float | None:
        """Seconds the file has been missing (None while it exists or before the first probe)."""
        if self.exists is False and self.missing_since is not None:
            return max(0.0, now - self.missing_since)
        return None

    def idle_for_s(self, now: float) -> float | None:
        """Seconds since the file last grew (None before it ever grew)."""
        if self.last_growth_at is None:
            return None
        return max(0.0, now - self.last_growth_at)

    @property
    def partial_line(self) -> str:
        return sanitize(bytes(self._partial).decode("utf-8", "replace"))

    # -- applying a probe's output ------------------------------------------------------

    def _event(self, upd: LogUpdate, kind: str, now: float, detail: str = "") -> None:
        ev = LogEvent(kind, now, detail)
        upd.events.append(ev)
        self.events.append(ev)

    def _restart(self, upd: LogUpdate, now: float) -> None:
        """Forget the old file: emit its unfinished last line, read the new one from byte 0."""
        self._flush_partial(upd)
        upd.matches.extend(self.classifier.flush())
        self.offset = 0
        self.inode = None
        self._tail = b""
        self._drop_to_newline = False
        self.restarts += 1

    def _flush_partial(self, upd: LogUpdate) -> None:
        if self._partial or self._partial_cut:
            if not self._drop_to_newline:
                self._emit_line(bytes(self._partial), self._partial_cut, upd)
            self._partial = bytearray()
            self._partial_cut = 0

    def flush_partial(self, now: float | None = None) -> LogUpdate:
        """Treat an unfinished last line as complete (the writer is gone)."""
        upd = LogUpdate()
        self._flush_partial(upd)
        upd.matches.extend(self.classifier.flush())
        return upd

    def _emit_line(self, raw: bytes, cut: int, upd: LogUpdate) -> None:
        if len(raw) > self.max_line_bytes:
            cut += len(raw) - self.max_line_bytes
            raw = raw[: self.max_line_bytes]
        text = raw.decode("utf-8", "replace")
        if cut:
            # the mark is cleaned with the text: a carriage return just before the cut is then not
            # the line's end (dropped) but what the cut bytes overprinted (a progress bar's last state)
            text = sanitize(text.rstrip("\ufffd") + f" … [{cut} bytes cut]")
            self.lines_cut += 1
        else:
            text = sanitize(text)
        self.ring.append(text)
        upd.lines.append(text)
        r = self.classifier.feed(text)
        if r:
            upd.matches.extend(r)

    def _emit_block(self, block: bytes, upd: LogUpdate) -> None:
        """Complete lines (``block``: without its last newline), decoded, sanitised and classified
        as a batch; a block with an overlong line goes line by line (the cut needs bytes)."""
        raws = block.split(b"\n")
        if max(map(len, raws)) > self.max_line_bytes:
            for raw in raws:
                self._emit_line(raw, 0, upd)
            return
        # UTF-8 resynchronises at every ASCII byte: decoding the block is decoding each line
        lines = [sanitize(t) for t in block.decode("utf-8", "replace").split("\n")]
        self.ring.extend(lines)
        upd.lines.extend(lines)
        r = self.classifier.feed_many(lines)
        if r:
            upd.matches.extend(r)

    def _take_tail(self, chunk: bytes) -> None:
        """The unfinished last line waits for its newline (up to ``max_line_bytes`` of it)."""
        if self._drop_to_newline:
            return
        room = self.max_line_bytes - len(self._partial)
        if room > 0:
            self._partial += chunk[:room]
            self._partial_cut += max(0, len(chunk) - room)
        else:
            self._partial_cut += len(chunk)

    def _consume(self, data: bytes, upd: LogUpdate, now: float) -> None:
        if not data:
            return
        cut_before = self.lines_cut
        pos = 0
        if self._drop_to_newline or self._partial or self._partial_cut:  # the first line was begun before
            nl = data.find(b"\n")
            if nl < 0:
                self._take_tail(data)
                pos = len(data)
            else:
                chunk = data[:nl]
                pos = nl + 1
                if self._drop_to_newline:
                    self._drop_to_newline = False
                else:
                    room = self.max_line_bytes - len(self._partial)
                    if room > 0:
                        self._partial += chunk[:room]
                        cut = self._partial_cut + max(0, len(chunk) - room)
                    else:
                        cut = self._partial_cut + len(chunk)
                    raw = bytes(self._partial)
                    self._partial = bytearray()
                    self._partial_cut = 0
                    self._emit_line(raw, cut, upd)
        last = data.rfind(b"\n", pos)
        if last >= pos:
            self._emit_block(data[pos:last], upd)
            pos = last + 1
        if pos < len(data):
            self._take_tail(data[pos:])
        if self.lines_cut > cut_before:
            k = self.lines_cut - cut_before
            self._event(upd, "line-cut", now, f"{k} line(s) longer than {self.max_line_bytes} bytes were cut")

    def apply(self, stdout: bytes | str | None, now: float) -> LogUpdate:
        """Apply one probe's stdout (raw bytes).  Never raises."""
        upd = LogUpdate()
        try:
            self._apply(stdout, now, upd)
        except Exception as exc:  # noqa: BLE001  # pragma: no cover - a poll must not die on bad output; reported as a probe-error event
            self._event(upd, "probe-error", now, f"could not read the log probe's output: {exc!r}")
        self.last_probe_at = now
        return upd

    def _apply(self, stdout: bytes | str | None, now: float, upd: LogUpdate) -> None:
        if stdout is None:
            stdout = b""
        if isinstance(stdout, str):
            stdout = stdout.encode("utf-8", "surrogateescape")
        stdout = bytes(stdout)
        nl = stdout.find(b"\n")
        header = stdout if nl < 0 else stdout[:nl]
        rest = b"" if nl < 0 else stdout[nl + 1 :]
        # tolerate noise before the header (a shell's motd, a warning)
        if not header.startswith(_MARK_B):
            at = stdout.find(_MARK_B + b" ")
            if at < 0:
                self._event(upd, "probe-error", now, f"no log header in probe output: {stdout[:120]!r}")
                return
            stdout = stdout[at:]
            nl = stdout.find(b"\n")
            header = stdout if nl < 0 else stdout[:nl]
            rest = b"" if nl < 0 else stdout[nl + 1 :]
        parts = header.decode("ascii", "replace").split()
        status = parts[1] if len(parts) > 1 else ""

        if status == "missing":
            if self.exists is True:
                self._event(upd, "deleted", now, f"{self.path} was deleted")
                self._restart(upd, now)
            elif self.exists is None:
                self._event(upd, "missing", now, f"{self.path} does not exist")
            if self.exists is not False or self.missing_since is None:
                self.missing_since = now
            self.exists = False
            self.inode = None
            self.size = None
            self.offset = 0
            self._tail = b""
            return
        if status in ("notfile", "unreadable"):
            kind = "not-a-file" if status == "notfile" else "unreadable"
            if not self.events or self.events[-1].kind != kind:
                self._event(upd, kind, now, f"{self.path} is {'not a regular file' if kind == 'not-a-file' else 'not readable'}")
            return
        if status != "ok" or len(parts) < 6:
            self._event(upd, "probe-error", now, f"bad log header: {header[:120]!r}")
            return
        inode = parts[2]
        try:
            size, start, count = int(parts[3]), int(parts[4]), int(parts[5])
        except ValueError:
            self._event(upd, "probe-error", now, f"bad log header: {header[:120]!r}")
            return
        if size < 0 or start < 0 or count < 0:
            self._event(upd, "probe-error", now, f"bad log header: {header[:120]!r}")
            return

        # the bytes, then the trailer
        data = rest[:count]
        if rest[count : count + len(_TRAILER)] != _TRAILER:
            t = rest.rfind(_TRAILER)
            if t < 0:
                self._event(upd, "probe-error", now, "log probe output was cut (no trailer); retrying")
                return
            data = rest[:t]  # fewer bytes than announced: the file shrank while being read

        if self.exists is not True:
            if self.exists is False and self.missing_since is not None:
                self._event(upd, "appeared", now, f"{self.path} appeared after {now - self.missing_since:.1f}s")
            else:
                self._event(upd, "appeared", now, f"{self.path} exists ({size} bytes)")
            self.exists = True
            self.missing_since = None
            if self.first_seen_at is None:
                self.first_seen_at = now

        replaced = self.inode is not None and inode != "-" and inode != self.inode
        if replaced:
            self._event(upd, "replaced", now, f"{self.path} is a new file (inode {self.inode} → {inode})")
            self._restart(upd, now)
            self.inode = inode
            self.size = size
            upd.more = True
            return
        if size < self.offset:
            self._event(upd, "truncated", now, f"{self.path} shrank from {self.offset} to {size} bytes")
            self._restart(upd, now)
            self.inode = inode if inode != "-" else None
            self.size = size
            upd.more = size > 0
            return
        expected_start = self.offset - len(self._tail)
        if start != expected_start:
            # output of a command built for another offset: ignore it, ask again
            self.size = size
            upd.more = True
            return
        if self._tail:
            if data[: len(self._tail)] != self._tail:
                if len(data) < len(self._tail) and size >= self.offset:
                    upd.more = True  # short read; ask again
                    return
                self._event(upd, "rewritten", now, f"{self.path} was rewritten in place; reading it again from the start")
                self._restart(upd, now)
                self.inode = inode if inode != "-" else None
                self.size = size
                upd.more = True
                return
            data = data[len(self._tail) :]
        self.inode = inode if inode != "-" else None
        self.size = size

        if (
            self.offset == 0
            and self.restarts == 0
            and self.ring.total == 0
            and self.initial_tail_bytes is not None
            and size > self.initial_tail_bytes
            and not self._partial
        ):
            jump = size - self.initial_tail_bytes
            self._event(upd, "skipped", now, f"skipped the first {jump} bytes of a {size}-byte log")
            self.offset = jump
            self._tail = b""
            self._drop_to_newline = True
            upd.more = True
            return

        if data:
            self.last_growth_at = now
        self.offset += len(data)
        upd.bytes_read = len(data)
        if self.overlap:
            self._tail = (self._tail + data)[-self.overlap :] if len(data) < self.overlap else data[-self.overlap :]
        self._consume(data, upd, now)
        upd.more = size > self.offset
