"""Remote and job text is data: the one :func:`sanitize` for text that enters cockpit's data.

Text from the target (log lines, command output, process command lines, GPU and process names,
error messages), from the job (exception messages, stack dumps) and from the journal can hold
escape sequences that retitle or repaint a terminal, bidi controls that reorder what a person
reads, and lines of megabytes.  It is cleaned once, where it enters: the log follower, verify's
log reader, every :class:`~cockpit.core.layers.Stage`, :class:`~cockpit.core.layers.Evidence` and
:class:`~cockpit.core.layers.Finding`, the ps and nvidia-smi parsers, the journal (read and
write), and the CLI's text output.  Front ends still show such text as data (never as markup).

Nothing here imports textual or rich.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["LINE_CAP", "sanitize", "sanitize_data", "visible_char"]

#: the longest line kept at a boundary (characters); the rest is cut with a marker
LINE_CAP = 16 << 10

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks (an unterminated one eats nothing: its ESC shows)
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS / SOS / PM / APC
    r"|\x1b[()*+\-./#%][ -~]"  # charset designation, ESC # 8, ESC % G
    r"|\x1b[0-9:;<=>?@A-Z\\^_`a-z{|}~]"  # two-character escapes (ESC 7, ESC c, ESC M, ...)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
#: made visible: C0 controls but tab, DEL, C1 controls, bidi controls (LRM, RLM, ALM, embeddings,
#: overrides, isolates), the line and paragraph separators, and lone surrogates (JSON can carry them)
_CTRL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def visible_char(c: str) -> str:
    """The visible stand-in for one control character: ``␛`` for ESC, ``␀`` … ``␟`` for C0,
    ``␡`` for DEL, ``\\x9b`` for C1, ``\\u202e`` for the rest."""
    o = ord(c)
    if o < 0x20:
        return chr(0x2400 + o)  # ␀ ␁ … ␛ …
    if o == 0x7F:
        return "\u2421"  # ␡
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def _visible(m: re.Match[str]) -> str:
    return visible_char(m.group(0))


_CUT = re.compile(r" … \[\d+ characters cut\]\Z")


def _cap(line: str, cap: int | None) -> str:
    if cap is None or len(line) <= cap:
        return line
    m = _CUT.search(line, cap)
    if m is not None and m.start() == cap:
        return line  # cut already (sanitising twice changes nothing)
    return f"{line[:cap]} … [{len(line) - cap} characters cut]"


def _line(line: str, cap: int | None, overprint: bool, strip: bool) -> str:
    if line.isprintable():
        return _cap(line, cap)
    if "\r" in line:
        line = line.rstrip("\r")  # a CRLF line end is not content
        if overprint and "\r" in line:
            segs = [s for s in line.split("\r") if s]
            line = segs[-1] if segs else ""
    if strip and ("\x1b" in line or "\x9b" in line):
        line = _ANSI.sub("", line)
    return _cap(_CTRL.sub(_visible, line), cap)


def sanitize(text: str, cap: int | None = None, *, newlines: bool = False, overprint: bool = False,
             strip_escapes: bool = True) -> str:
    """``text`` safe to keep and to show on a terminal: no raw ESC or other control character.

    ANSI escape sequences (colours, cursor moves, OSC titles and hyperlinks) are removed; other
    control characters (NUL, a lone ESC, C1 controls, bidi controls, lone surrogates) become visible
    stand-ins (``␀``, ``␛``, ``\\x9b``, ``\\u202e``, see :func:`visible_char`).  Tabs, wide and
    zero-width characters are kept.  A line longer than ``cap`` characters is cut with
    ``… [N characters cut]``.

    ``newlines``: keep ``\\n`` as line breaks (each line is cleaned and capped alone); otherwise a
    newline is shown as ``␊`` and the result is one line.  ``overprint``: a carriage return keeps
    what a terminal would show last (a progress bar's final state: for log lines); otherwise it
    is shown as ``␍``.  A carriage return at the end of a line is dropped either way.
    ``strip_escapes=False``: escape sequences are not removed but shown (``␛[31m``), so only the
    control characters themselves change: for structured output (``ps``, ``nvidia-smi``) where a
    sequence cut short in one field must not swallow the next field (a process named ``\\x1b[``
    would otherwise eat ``) S`` from its ``/proc/PID/stat`` line and vanish from the table).
    """
    if newlines and "\n" in text:
        lines = text.split("\n")
        if (cap is None or max(map(len, lines)) <= cap) and "".join(lines).isprintable():
            return text  # most text: printable lines, none too long (one pass in C, not one call a line)
        return "\n".join(_line(ln, cap, overprint, strip_escapes) for ln in lines)
    return _line(text, cap, overprint, strip_escapes)


def sanitize_data(data: Any, cap: int | None = LINE_CAP) -> Any:
    """JSON-like ``data`` with every string (keys and values) passed through :func:`sanitize`
    (newlines kept, lines capped at ``cap``).  Other values are returned as they are; a string
    that needs no change is returned as the same object."""
    if isinstance(data, str):
        return sanitize(data, cap, newlines=True)
    if isinstance(data, Mapping):
        return {sanitize_data(k, cap) if isinstance(k, str) else k: sanitize_data(v, cap) for k, v in data.items()}
    if isinstance(data, list):
        return [sanitize_data(v, cap) for v in data]
    if isinstance(data, tuple):
        return tuple(sanitize_data(v, cap) for v in data)
    return data
