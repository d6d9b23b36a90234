"""The pieces of traceback assembly: line shapes and the records the classifier keeps.

Line shapes: the headers that open a traceback (``Traceback (most recent call last):``, with an
``Exception in thread NAME:`` or ``Exception ignored in`` line before it), the markers that chain
one traceback to the next, what reads like an exception line, :func:`record_level` (the level of
the log record a line starts, from its own field) and :func:`split_glued`, which cuts a line where
several threads' unbuffered writes were glued together.  Records: a
:class:`Chain` (one reported error, possibly several chained tracebacks), the :class:`Block` of a
traceback still collecting frames, and the :class:`After` state that follows an exception line
(message continuation, then a gap where a chain marker may come).
"""

from __future__ import annotations

import re

from .sig_model import Match, Signature

__all__ = [
    "TB_HEADER", "BOX_HEADER", "BOX_BODY", "THREAD_HEADER", "LATE_THREAD_NAME", "NAME_BEFORE_FRAME", "IGNORED_HEADER", "CHAIN_MARKER", "LOGLIKE", "looks_like_exception",
    "is_tag_prefix", "split_glued", "split_names", "thread_names", "glued_exception_at", "Chain", "Block", "After", "record_level", "HANDLED_LEVELS",
]

TB_HEADER = re.compile(r"^(?P<prefix>.*?)Traceback \(most recent call last\):\s*$")
#: ``rich``'s traceback (``rich.traceback.install()``, a ``RichHandler(rich_tracebacks=True)``): the header
#: is the top of a box whose lines (``│ path:N in func │``, the ``╰───╯`` bottom) hold the frames; the
#: exception line follows the box with the header's prefix, as a plain traceback's does
BOX_HEADER = re.compile(r"^(?P<prefix>.*?)╭─+ Traceback \(most recent call last\) ─+╮\s*$")
#: the first character of a line inside (or closing) such a box
BOX_BODY = "│╰"
THREAD_HEADER = re.compile(r"^(?P<prefix>.*?)Exception in thread (?P<name>.*?):\s*$")
#: a thread's name as Python makes them (``loader-7``, ``Thread-3 (work)``): a header whose "name"
#: is words (``Exception in thread pool worker, retrying: …``) is someone's prose, not a dead thread
_THREAD_NAME = re.compile(r"[^\s:]+(?: \([^)]*\))?")
#: a thread's name, then another writer's indented frame or code line glued behind it
_NAME_THEN_FRAME = re.compile(rf"{_THREAD_NAME.pattern}(?= {{2,}}\S)")
#: a thread's name at a line's start with another thread's frame line glued behind it, its colon still
#: to come (``loader-7  File "…/threading.py", line 1045, …``): only a glue of two writers reads so
NAME_BEFORE_FRAME = re.compile(rf"^(?P<name>{_THREAD_NAME.pattern})(?= {{2,}}File \")")
#: the name and colon of an ``Exception in thread`` header written on a line of their own (glued headers)
LATE_THREAD_NAME = re.compile(rf"^(?P<prefix>.*?)(?P<name>{_THREAD_NAME.pattern}):$")
IGNORED_HEADER = re.compile(r"^(?P<prefix>.*?)Exception ignored (?:in|on)\b")
CHAIN_MARKER = re.compile(
    r"^(?P<prefix>.*?)(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)\s*$"
)
_EXC_LINE = re.compile(r"(?P<name>[A-Za-z_][\w.]*)(?::(?:\s.*)?)?\Z")
LOGLIKE = re.compile(
    r"\s*(?:\[|\d|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL|NOTE)\b|[IWEF]\d{4}\s|(?i:step|epoch|iter)\b)"
)


# --------------------------------------------------------------------------------------------
# log records: the level a line's record carries

#: glog, as PyTorch's own logging prints every line of a record (``W0501 12:00:00.123456 1234
#: file.py:12] msg``; C++ ``[W501 …]`` too), after torchrun's ``[rank0]:`` tag
_GLOG = re.compile(r"^(?:\[(?:rank|default)\d+\]:)?\[?(?P<g>[DVIWEFC])\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)?\s+\d+\s+\S+:\d+\]")
#: Python ``logging`` shapes: ``WARNING:name:msg`` (the default), ``2024-05-01 12:00:00,123 - name
#: - WARNING - msg``, ``[2024-05-01 12:00:00] WARNING msg``, ``… | WARNING  | …`` (loguru),
#: ``[…][name][WARNING] - msg`` (hydra): a timestamp and one logger name at most before the level,
#: so that a message that merely says "error" is no record head
_PYLOG = re.compile(
    r"^(?:\[(?:rank|default)\d+\]:)?\s*"
    r"(?:\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s*(?:[-|:]\s*)?)?"
    r"(?:\[?[A-Za-z_][\w.<>-]*\]?\s*(?:[-|:]\s*)?)?"
    r"\[?(?P<p>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?(?=[\s:|\]-]|$)"
)
#: a glog head and nothing but bracketed tags after it (``… file.py:12] [0/0] ``): a per-line prefix
_GLOG_TAG = re.compile(_GLOG.pattern + r"(?:\s*\[[^\]]*\])*\s*$")
_GLOG_LEVEL = {"D": "DEBUG", "V": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL", "C": "CRITICAL"}
#: the levels at which a logged traceback was handled: the program said so and went on
HANDLED_LEVELS = frozenset({"DEBUG", "INFO", "WARNING"})


def record_level(line: str) -> str | None:
    """The level of the log record that ``line`` starts (``DEBUG`` … ``CRITICAL``), or None.

    Only the record's own level field counts (its head: glog's letter, Python ``logging``'s level
    name after at most a timestamp and a logger name), never a word in the message."""
    if not line or len(line) < 5:
        return None
    m = _GLOG.match(line)
    if m:
        return _GLOG_LEVEL[m.group("g")]
    m = _PYLOG.match(line[:160])
    if m:
        lvl = m.group("p")
        return {"WARN": "WARNING", "FATAL": "CRITICAL"}.get(lvl, lvl)
    return None


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


# --------------------------------------------------------------------------------------------
# glued lines: several threads writing to one stream without a lock

_GLUE_TOKEN = re.compile(r"Traceback \(most recent call last\):|(?:Exception in thread )+")
_TAG_END = ":]|>"


def is_tag_prefix(text: str) -> bool:
    """Whether ``text`` before a header reads as a per-line tag (``[rank0]: ``, ``0: ``, ``svc | ``).

    Indentation and a gutter (``    | ``) are tags too, and so is a glog record head as PyTorch's
    logging prints it on every line of a record (``W1203 14:05:12.345000 4242 file.py:12] [0/0] ``).  Anything else (a frame or code line, an
    exception line, a cut step line) is another writer's text glued in front of the header.
    """
    core = text.strip()
    if not core:
        return True
    if _GLOG_TAG.match(text):  # PyTorch's glog-style record head on every line of the record
        return True
    if len(core) > 40 or core[-1] not in _TAG_END:
        return False
    if text[0] in " \t" and core.strip("|+:>-[] "):  # indented words: a code line, not a gutter
        return False
    if "Exception in thread" in core or "Traceback (most recent" in core:
        return False
    return not looks_like_exception(core)


def split_names(text: str, k: int) -> list[str]:
    """``k`` thread names written back to back (``loader-9loader-7``), cut apart, or ``[text, "", …]``.

    Python writes ``Exception in thread ``, the name and ``:\\n`` in three writes, and a
    line-buffered stderr collects several threads' writes into one line: two threads dying at once
    can print ``Exception in thread Exception in thread loader-9loader-7:``.  The names are cut
    where the longest stem they start with repeats (``loader-``), when it starts exactly ``k``
    names each longer than it; otherwise the first header gets the text and the others no name.
    """
    if k == 1:
        return [text]
    for size in range(len(text) // k, 0, -1):
        stem = text[:size]
        starts: list[int] = []
        i = 0
        while (i := text.find(stem, i)) >= 0:
            starts.append(i)
            i += size
        if len(starts) == k:
            names = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)], strict=True)]
            if all(len(n) > size for n in names):
                return names
    return [text] + [""] * (k - 1)


def _thread_run(line: str, m: re.Match[str]) -> tuple[int, list[str]] | None:
    """Where a run of ``Exception in thread `` headers (``m``) ends and the names it carries.

    None when it is no header (no colon and no other header behind its text).  A header whose
    name runs into another header (``Exception in thread loader-9Exception in thread loader-7:``),
    or into another thread's indented frame or code line (``Exception in thread loader-7    self.run()``),
    had its colon written later: its name is the text before the other writer's.
    """
    k = m.group().count("Exception in thread ")
    j = m.end()
    nxt = _GLUE_TOKEN.search(line, j)
    rest = line[j:] if nxt is None else line[j : nxt.start()]
    if glued := _NAME_THEN_FRAME.match(rest):
        end, text = j + glued.end(), glued.group()
    elif nxt is None and rest.rstrip().endswith(":"):
        end, text = len(line), rest.rstrip()[:-1].strip()  # the whole line: NAME runs to the last colon, as Python prints it
    elif (c := rest.find(":")) >= 0:
        end, text = j + c + 1, rest[:c].strip()
    elif nxt is not None and nxt.group()[0] == "E" and rest.strip():
        end, text = nxt.start(), rest.strip()
    else:
        return None
    return end, split_names(text, k)


def split_glued(line: str) -> list[str]:
    """Cut ``line`` into the pieces that different writers glued together around its headers.

    Threads that print without a lock interleave their writes, even inside a line: Python prints
    ``Exception in thread NAME:`` and its newline in three writes, so another thread's text can
    land between them; a frame line can be cut by another thread's ``Traceback …`` header.  A
    header (``Traceback (most recent call last):``, ``Exception in thread NAME:``) gets a piece
    of its own; text before it stays with it only when it reads as a tag prefix
    (:func:`is_tag_prefix`), text after it becomes the next piece.  Thread headers glued to one
    another come back one piece each, written out as Python prints one (:func:`split_names`;
    a header whose name went elsewhere reads ``Exception in thread :``).  A line without glue
    comes back as ``[line]``.
    """
    parts: list[str] = []
    start = pos = 0
    while True:
        m = _GLUE_TOKEN.search(line, pos)
        if m is None:
            break
        run = None
        if m.group()[0] == "T":
            end = m.end()
        else:
            run = _thread_run(line, m)
            if run is None:  # no colon: not a header
                pos = m.end()
                continue
            end = run[0]
        if m.start() > start and not is_tag_prefix(line[start : m.start()]):
            parts.append(line[start : m.start()])
            start = m.start()
        if run is not None:
            tag = line[start : m.start()]
            parts += [f"{tag}Exception in thread {name}:" for name in run[1]]
            start = end
        elif line[end:].strip():
            parts.append(line[start:end])
            start = end
        pos = end
    if not parts or line[start:].strip():
        parts.append(line[start:])
    return parts


def thread_names(line: str) -> list[str]:
    """The names in the ``Exception in thread NAME:`` headers of ``line``, glued ones apart."""
    names = []
    for part in split_glued(line):
        m = THREAD_HEADER.match(part) if "Exception in thread " in part else None
        if m and _THREAD_NAME.fullmatch(m.group("name")):
            names.append(m.group("name"))
    return names


_EXC_NAME = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failed)(?=:\s)"
#: every place an exception name may start, overlapping ones too: ``raise RuntimeErRuntimeError: …``
#: (a frame cut inside a word, then another writer's exception line) holds one inside a longer word
_EXC_START = re.compile(f"(?=({_EXC_NAME}))")


def glued_exception_at(body: str, frame: bool) -> int:
    """Where an exception line glued behind another writer's text starts in ``body``, or -1.

    ``RuntimeError: …`` written right after another thread's cut line (``step 4 los``, a cut
    frame) ends up inside it.  In a frame or code line (``frame``) the name must follow a
    character that cannot end a word of code before it (not a space, quote or bracket), so that
    ``msg = "KeyError: x"`` stays a code line.
    """
    for m in _EXC_START.finditer(body):
        p = m.start()
        if p > 0 and not (frame and body[p - 1] in " \t\"'([{=,:"):
            return p
    return -1


#: the outermost frame of a traceback that unwound the whole program (nothing caught it)
_ENTRY_FRAME = re.compile(r'^\s+File "[^"]*", line \d+, in (?:<module>|_run_module_as_main|_run_code)\s*$')
#: the same frame in a ``rich`` box: ``│ /work/train.py:88 in <module>   │``
_BOX_FRAME = re.compile(r"^│ \S.*:\d+ in (?P<func>\S+)\s*│?\s*$")
_ENTRY_FUNCS = ("<module>", "_run_module_as_main", "_run_code")


def unwound(lines: list[str], prefix: str) -> bool:
    """The chain's last traceback starts at the program's entry: an uncaught exception (or one
    caught at the top level, which reads the same)."""
    heads = [i for i, ln in enumerate(lines) if ln.startswith(prefix) and "Traceback (most recent call last)" in ln]
    if not heads:
        return False
    for ln in lines[heads[-1] + 1:]:
        body = ln[len(prefix):] if ln.startswith(prefix) else ln
        if body.lstrip().startswith("File "):
            return bool(_ENTRY_FRAME.match(body))
        box = _BOX_FRAME.match(body)
        if box:
            return box.group("func") in _ENTRY_FUNCS
    return False


# --------------------------------------------------------------------------------------------
# records


class Chain:
    """One reported traceback chain: its lines, exception lines and deciding signature.

    ``counted``: the chain's current version is an error the classifier counts (error-severity,
    not ignored); ``emitted``: some version was reported.
    """

    __slots__ = (
        "id", "prefix", "start_no", "lines", "cut", "exceptions", "sig", "sig_m", "deciding", "deciding_no",
        "thread", "ignored", "last_match", "emitted", "version", "match_version", "counted", "level", "before", "fallback",
    )

    def __init__(self, cid: int, prefix: str, start_no: int, thread: str | None, ignored: bool):
        self.id = cid
        self.prefix = prefix
        self.start_no = start_no
        self.lines: list[str] = []
        self.cut = 0
        self.exceptions: list[str] = []
        self.sig: Signature | None = None
        self.sig_m: re.Match[str] | None = None
        self.deciding = ""
        self.deciding_no = 0
        self.thread = thread
        self.ignored = ignored
        self.last_match: Match | None = None
        self.emitted = False
        self.version = 0  # bumped on every change; last_match is current when match_version == version
        self.match_version = -1
        self.counted = False
        #: the level of the log record that carries the traceback (its lines' prefix, or the record
        #: line right before a traceback the program caught), None for a bare traceback
        self.level: str | None = None
        #: the level of a log record on the line right before the header (``logger.exception``'s
        #: or ``logger.warning(…, exc_info=True)``'s message line)
        self.before: str | None = None
        #: the label of torch._dynamo's ``WON'T CONVERT`` line this traceback explains (eager fallback)
        self.fallback: str | None = None


class Block:
    """A traceback of ``chain`` still collecting frames: lines that start with ``prefix`` go to it."""

    __slots__ = ("prefix", "chain", "strays", "frames", "boxed")

    def __init__(self, prefix: str, chain: Chain, boxed: bool = False):
        self.prefix = prefix
        self.chain = chain
        self.strays = 0
        self.frames = 0
        #: a ``rich`` box (:data:`BOX_HEADER`): its frames are the lines that start with a box side
        self.boxed = boxed


class After:
    """What may follow ``chain``'s exception line: message lines, then a gap before a chain marker."""

    __slots__ = ("chain", "mode", "count", "idle", "expect")

    def __init__(self, chain: Chain):
        self.chain = chain
        self.mode = "message"  # message -> gap
        self.count = 0
        self.idle = 0
        self.expect = False  # a chain marker was seen: the next header continues the chain
