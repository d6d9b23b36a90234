"""The pieces of traceback assembly: line shapes and the records the classifier keeps.

Line shapes: the headers that open a traceback (``Traceback (most recent call last):``, with an
``Exception in thread NAME:`` or ``Exception ignored in`` line before it), the markers that chain
one traceback to the next, and what reads like an exception line.  Records: a :class:`Chain`
(one reported error, possibly several chained tracebacks), the :class:`Block` of a traceback still
collecting frames, and the :class:`After` state that follows an exception line (message
continuation, then a gap where a chain marker may come).
"""

from __future__ import annotations

import re

from .sig_model import Match, Signature

__all__ = [
    "TB_HEADER", "THREAD_HEADER", "IGNORED_HEADER", "CHAIN_MARKER", "LOGLIKE", "looks_like_exception",
    "Chain", "Block", "After",
]

TB_HEADER = re.compile(r"^(?P<prefix>.*?)Traceback \(most recent call last\):\s*$")
THREAD_HEADER = re.compile(r"^(?P<prefix>.*?)Exception in thread (?P<name>.*?):\s*$")
IGNORED_HEADER = re.compile(r"^(?P<prefix>.*?)Exception ignored (?:in|on)\b")
CHAIN_MARKER = re.compile(
    r"^(?P<prefix>.*?)(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)\s*$"
)
_EXC_LINE = re.compile(r"(?P<name>[A-Za-z_][\w.]*)(?::(?:\s.*)?)?\Z")
LOGLIKE = re.compile(
    r"\s*(?:\[|\d|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL|NOTE)\b|[IWEF]\d{4}\s|(?i:step|epoch|iter)\b)"
)


_BARE_EXC_SUFFIX = ("Error", "Exception", "Interrupt", "Exit", "Iteration", "Warning", "Failed", "Timeout",
                    "Empty", "Full", "Group")


def looks_like_exception(body: str) -> bool:
    """``Name: message`` or a bare ``Name`` that reads like a Python exception line."""
    m = _EXC_LINE.match(body)
    if not m:
        return False
    name = m.group("name")
    last = name.rsplit(".", 1)[-1]
    if not last:
        return False
    if len(body) == len(name):  # no message: only names that end like exceptions
        return last.endswith(_BARE_EXC_SUFFIX) or ("." in name and last[:1].isupper())
    if "." in name:
        return True
    return last[0].isupper() and len(last) > 1 and not last.isupper()



class Chain:
    __slots__ = (
        "id", "prefix", "start_no", "lines", "cut", "exceptions", "sig", "sig_m", "deciding", "deciding_no",
        "thread", "ignored", "last_match", "emitted", "version", "match_version",
    )

    def __init__(self, cid: int, prefix: str, start_no: int, thread: str | None, ignored: bool):
        self.id = cid
        self.prefix = prefix
        self.start_no = start_no
        self.lines: list[str] = []
        self.cut = 0
        self.exceptions: list[str] = []
        self.sig: Signature | None = None
        self.sig_m: "re.Match[str] | None" = None
        self.deciding = ""
        self.deciding_no = 0
        self.thread = thread
        self.ignored = ignored
        self.last_match: Match | None = None
        self.emitted = False
        self.version = 0  # bumped on every change; last_match is current when match_version == version
        self.match_version = -1


class Block:
    __slots__ = ("prefix", "chain", "strays", "frames")

    def __init__(self, prefix: str, chain: Chain):
        self.prefix = prefix
        self.chain = chain
        self.strays = 0
        self.frames = 0


class After:
    __slots__ = ("chain", "mode", "count", "idle", "expect")

    def __init__(self, chain: Chain):
        self.chain = chain
        self.mode = "message"  # message -> gap
        self.count = 0
        self.idle = 0
        self.expect = False  # a chain marker was seen: the next header continues the chain
