"""Log signatures (regex → layer, label, advice) and a fast, incremental log classifier.

A :class:`Signature` says what a log line means: where the failure lives (a
:class:`~cockpit.core.layers.Layer`), a short label, and one line of advice.  :data:`BUILTIN`
covers the failures of the seed story and the usual suspects of GPU training; users add their own
in config (``[[signatures]]`` → :func:`load_signatures`).

The :class:`Classifier` consumes a log line by line (``feed``, fine for a live log):

* plain lines are matched against the signatures.  Almost every line of a training log is a step
  line that matches nothing, so a **prefilter** runs first: one compiled alternation of literal
  keywords, each signature contributing one (or a few) that any matching line must contain.  Only
  lines that hit a keyword go through the signatures' own regexes.  Keywords are given for the
  built-ins and derived from the regex for user signatures; a signature without any usable literal
  is run on every line.
* Python tracebacks are assembled: from ``Traceback (most recent call last):`` (or the
  ``Exception in thread NAME:`` header before it) through the frames to the exception line, plus
  the lines of a multi-line message, and across ``During handling of the above exception…`` /
  ``The above exception was the direct cause…`` into one chain.  The chain is reported with the
  most specific signature any of its exception lines matched (the generic ``python-traceback`` one
  otherwise, labelled with the final exception line).  Lines are routed by their prefix, so
  ``[rank0]:``/``[rank1]:`` tracebacks interleaved by torchrun are assembled separately; several
  threads printing at once with the same prefix go to the most recently opened traceback (their
  frames cannot be told apart).

A traceback is reported as soon as its exception line arrives; when later lines extend it (message
continuation, a chained exception) an updated :class:`Match` with the same ``chain_id`` and
``update=True`` follows.  ``first_error``/``final_error`` always hold the latest version.
Tracebacks printed after ``Exception ignored in`` are warnings, not errors.

Lines are expected without their newline and already sanitised (see ``logs.sanitize``).
"""

from __future__ import annotations

import difflib
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..layers import Finding, Layer, Severity

try:  # Python 3.11+
    import re._parser as _sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = [
    "Signature",
    "Match",
    "BUILTIN",
    "TRACEBACK",
    "INCOMPLETE_TRACEBACK",
    "load_signatures",
    "Classifier",
]


# --------------------------------------------------------------------------------------------
# signatures


@dataclass(frozen=True)
class Signature:
    """A regex that identifies a failure in a log line.

    ``keywords``: literal substrings of which a matching line contains at least one (the
    classifier's prefilter); derived from ``pattern`` when empty; ``()`` after derivation means
    "run on every line".  ``label`` may name regex groups as ``{1}`` or ``{name}``.
    ``priority`` decides between signatures matching the same line or traceback chain.
    """

    pattern: str
    layer: Layer
    label: str
    advice: str = ""
    kind: str = "log-error"
    severity: Severity = Severity.ERROR
    priority: int = 50
    keywords: tuple[str, ...] = ()
    ignore_case: bool = False
    source: str = "builtin"
    regex: "re.Pattern[str]" = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        flags = re.IGNORECASE if self.ignore_case else 0
        object.__setattr__(self, "regex", re.compile(self.pattern, flags))
        if not self.keywords:
            kws = _derive_keywords(self.pattern, flags)
            object.__setattr__(self, "keywords", kws or ())
        elif self.ignore_case:
            object.__setattr__(self, "keywords", tuple(k.lower() for k in self.keywords))

    def search(self, line: str) -> "re.Match[str] | None":
        return self.regex.search(line)

    def render_label(self, m: "re.Match[str] | None") -> str:
        if m is None or "{" not in self.label:
            return self.label

        def sub(tok: "re.Match[str]") -> str:
            key = tok.group(1)
            try:
                val = m.group(int(key)) if key.isdigit() else m.group(key)
            except IndexError:
                return tok.group(0)
            return val if val is not None else ""

        return re.sub(r"\{(\w+)\}", sub, self.label)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern,
            "layer": self.layer.value,
            "label": self.label,
            "advice": self.advice,
            "kind": self.kind,
            "severity": self.severity.value,
            "priority": self.priority,
            "source": self.source,
        }


def _derive_keywords(pattern: str, flags: int) -> tuple[str, ...] | None:
    """Literal substrings that every match of ``pattern`` contains (one of them), or None.

    Reads the regex's parse tree; gives up (None: run the regex on every line) on anything it
    does not understand, on case-insensitive parts and on literals shorter than 3 characters.
    """
    try:
        tree = _sre_parse.parse(pattern, flags)
        gflags = getattr(getattr(tree, "state", None), "flags", flags) | flags
        ci = bool(gflags & re.IGNORECASE)
        best = _best(_required(tree))
        if best is None:
            return None
        return tuple(k.lower() for k in best) if ci else best
    except Exception:
        return None


def _required(sub: Any) -> list[tuple[str, ...]]:
    P = _sre_parse
    cands: list[tuple[str, ...]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            cands.append(("".join(run),))
            run.clear()

    for op, av in sub:
        if op is P.LITERAL:
            run.append(chr(av))
        elif op is P.SUBPATTERN:
            flush()
            _group, add_flags, _del, p = av
            if add_flags & re.IGNORECASE:
                continue
            cands.extend(_required(p))
        elif op is P.BRANCH:
            flush()
            alts: list[str] = []
            for alt in av[1]:
                b = _best(_required(alt))
                if b is None:
                    alts = []
                    break
                alts.extend(b)
            if alts:
                cands.append(tuple(dict.fromkeys(alts)))
        elif op in (P.MAX_REPEAT, P.MIN_REPEAT) or getattr(P, "POSSESSIVE_REPEAT", None) is op:
            flush()
            lo, _hi, p = av
            if lo >= 1:
                cands.extend(_required(p))
        else:
            flush()
    flush()
    return cands


def _best(cands: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    good = [c for c in cands if c and all(len(k) >= 3 for k in c)]
    if not good:
        return None
    return max(good, key=lambda c: (min(len(k) for k in c) if len(c) == 1 else min(len(k) for k in c) - 2 * len(c)))


_LAYER_NAMES = ", ".join(layer.value for layer in Layer)

_FX = (
    "Compile once before the threads start (warm the compiled function up under a lock in the main "
    "thread), or keep torch.compile out of worker threads; clear the inductor cache between attempts."
)

#: The built-in table.  Order does not matter; ``priority`` breaks ties.
BUILTIN: tuple[Signature, ...] = (
    Signature(
        r"Detected that you are using FX to symbolically trace",
        Layer.APP,
        "FX traced a dynamo-optimized function (torch.compile race between threads?)",
        _FX,
        kind="fx-dynamo-race",
        priority=90,
        keywords=("using FX to symbolically",),
    ),
    Signature(
        r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED",
        Layer.GPU,
        "CUDA out of memory",
        "Lower the batch size or sequence length, or free the GPU: check nvidia-smi for memory held by "
        "other or dead processes; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation.",
        kind="cuda-oom",
        priority=70,
        keywords=("OutOfMemoryError", "out of memory", "ALLOC_FAILED"),
    ),
    Signature(
        r"an illegal memory access was encountered|CUDA error: misaligned address|illegal instruction was encountered",
        Layer.GPU,
        "CUDA illegal memory access",
        "The CUDA context is unusable: restart the process. Rerun with CUDA_LAUNCH_BLOCKING=1 to find the "
        "kernel; check the host's kernel messages for Xid 13/31/43.",
        kind="cuda-illegal-access",
        priority=65,
        keywords=("illegal memory access", "misaligned address", "illegal instruction"),
    ),
    Signature(
        r"device-side assert triggered|Assertion `.*` failed",
        Layer.APP,
        "CUDA device-side assert (an index out of range in the code?)",
        "Usually an out-of-range index (embedding, labels, gather); rerun with CUDA_LAUNCH_BLOCKING=1 "
        "(or on CPU) to see the failing line.",
        kind="cuda-assert",
        priority=66,
        keywords=("device-side assert", "` failed"),
    ),
    Signature(
        r"No CUDA GPUs are available|no CUDA-capable device is detected|Found no NVIDIA driver on your system"
        r"|CUDA driver initialization failed|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice",
        Layer.GPU,
        "no GPU visible to CUDA",
        "The container sees no GPU: check /dev/nvidia* in the container, CUDA_VISIBLE_DEVICES, and the "
        "host's nvidia-smi.",
        kind="cuda-no-device",
        priority=64,
        keywords=("No CUDA GPUs", "CUDA-capable device", "no NVIDIA driver", "driver initialization", "NO_DEVICE",
                  "NoDevice"),
    ),
    Signature(
        r"Driver/library version mismatch|CUDA driver version is insufficient",
        Layer.GPU,
        "NVIDIA driver/library version mismatch",
        "The kernel module and the CUDA/NVML userspace differ: reboot the host after a driver upgrade, or "
        "match the container's libraries to the host's driver.",
        kind="driver-mismatch",
        priority=64,
        keywords=("version mismatch", "version is insufficient"),
    ),
    Signature(
        r"CUDA error: |CUDA driver error|cudaError\w+|CUDA_ERROR_\w+",
        Layer.GPU,
        "CUDA error",
        "Check the host's kernel messages for an Xid and nvidia-smi's state; rerun with "
        "CUDA_LAUNCH_BLOCKING=1 to locate it.",
        kind="cuda-error",
        priority=40,
        keywords=("CUDA error", "CUDA driver error", "cudaError", "CUDA_ERROR_"),
    ),
    Signature(
        r"Watchdog caught collective operation timeout",
        Layer.APP,
        "NCCL watchdog: a collective timed out",
        "One rank stalled or died: find the first error in the other ranks' logs; NCCL_DEBUG=INFO; check "
        "that every rank reaches the same collectives.",
        kind="nccl-timeout",
        priority=60,
        keywords=("Watchdog caught",),
    ),
    Signature(
        r"\bNCCL error\b|nccl(?:Internal|System|UnhandledCuda|InvalidUsage|InvalidArgument|Remote)Error"
        r"|DistBackendError|NCCL communicator was aborted",
        Layer.APP,
        "NCCL error",
        "Read the first rank's error; NCCL_DEBUG=INFO shows the failing transport (IB/socket/P2P).",
        kind="nccl-error",
        priority=55,
        keywords=("NCCL error", "ncclInternalError", "ncclSystemError", "ncclUnhandledCudaError", "ncclInvalidUsage",
                  "ncclInvalidArgument", "ncclRemoteError", "DistBackendError", "NCCL communicator"),
    ),
    Signature(
        r"BackendCompilerFailed",
        Layer.APP,
        "torch.compile backend failed",
        "The message after 'raised:' is the real error; TORCH_LOGS=+dynamo TORCHDYNAMO_VERBOSE=1 show "
        "more; clear the inductor cache (/tmp/torchinductor_$USER) between attempts.",
        kind="dynamo-backend-failed",
        priority=60,
        keywords=("BackendCompilerFailed",),
    ),
    Signature(
        r"InductorError|torch\._inductor\.exc\.\w+|LoweringException",
        Layer.APP,
        "inductor compile error",
        "Read the inductor error; clear /tmp/torchinductor_$USER; try mode='default' or the eager backend "
        "to confirm.",
        kind="inductor-error",
        priority=58,
        keywords=("InductorError", "_inductor.exc", "LoweringException"),
    ),
    Signature(
        r"torch\._dynamo\.exc\.(?!BackendCompilerFailed)(\w+)",
        Layer.APP,
        "torch.compile (dynamo) error: {1}",
        "TORCH_LOGS=+dynamo shows where tracing failed; torch._dynamo.config.suppress_errors=True falls "
        "back to eager.",
        kind="dynamo-error",
        priority=52,
        keywords=("_dynamo.exc",),
    ),
    Signature(
        r"ModuleNotFoundError: No module named '?([^'\s]+)'?",
        Layer.APP,
        "missing module {1}",
        "Install it in the environment the job runs with (check the interpreter path and venv), or fix "
        "PYTHONPATH.",
        kind="module-not-found",
        priority=62,
        keywords=("ModuleNotFoundError",),
    ),
    Signature(
        r"ImportError: ",
        Layer.APP,
        "import error",
        "A module or name failed to import: version mismatch between packages, or a circular import.",
        kind="import-error",
        priority=61,
        keywords=("ImportError",),
    ),
    Signature(
        r"^\W*(?:\w+: )?(SyntaxError|IndentationError|TabError): ",
        Layer.APP,
        "{1} in the deployed code",
        "The deployed code does not parse: run `python -m py_compile` before launching.",
        kind="syntax-error",
        priority=63,
        keywords=("SyntaxError", "IndentationError", "TabError"),
    ),
    Signature(
        r"No space left on device|Errno 28\b|Disk quota exceeded",
        Layer.CONTAINER,
        "disk full",
        "Free space in the container (checkpoints, /tmp, the inductor and pip caches): `df -h`.",
        kind="disk-full",
        priority=68,
        keywords=("No space left", "Errno 28", "quota exceeded"),
    ),
    Signature(
        r"can't start new thread|fork: Resource temporarily unavailable|Cannot allocate memory|"
        r"Too many open files|Errno 24\b",
        Layer.CONTAINER,
        "the container ran out of processes, memory or file descriptors",
        "Check the container's limits (pids.max, memory, ulimit -n) and leftover processes (zombies).",
        kind="resource-limit",
        priority=57,
        keywords=("start new thread", "temporarily unavailable", "allocate memory", "open files", "Errno 24"),
    ),
    Signature(
        r"Fatal Python error: (Segmentation fault|Aborted|Bus error|Floating point exception|\w[^:]*)"
        r"|Segmentation fault \(core dumped\)|\bSIGSEGV\b",
        Layer.APP,
        "the job crashed in native code (segfault)",
        "A crash inside a C/CUDA extension: faulthandler's stack above shows where; check the host's "
        "kernel messages (segfault line, Xid); mismatched torch/CUDA/extension builds are a common cause.",
        kind="segfault",
        priority=67,
        keywords=("Fatal Python error", "Segmentation fault", "SIGSEGV"),
    ),
    Signature(
        r"terminate called after throwing an instance of '([^']+)'",
        Layer.APP,
        "C++ exception escaped: {1}",
        "The 'what():' line that follows carries the message; often a CUDA or NCCL error inside an "
        "extension.",
        kind="cpp-terminate",
        priority=59,
        keywords=("terminate called",),
    ),
    Signature(
        r"^\s*Killed\s*$|\b\d+ Killed\s+\S",
        Layer.PROCESS,
        "killed by SIGKILL (the OOM killer?)",
        "Read the host's kernel messages for an OOM kill of this process; raise the container's memory "
        "limit or lower RAM use (dataloader workers, pinned memory, model loading).",
        kind="killed",
        priority=56,
        keywords=("Killed",),
    ),
    Signature(
        r"ChildFailedError",
        Layer.APP,
        "a torchrun worker failed",
        "torchrun's summary: the worker's own first error (earlier in the log, or its error file) is the "
        "cause.",
        kind="torchrun-child-failed",
        severity=Severity.WARNING,
        priority=10,
        keywords=("ChildFailedError",),
    ),
)

#: The generic traceback signature: its label is the final exception line.
TRACEBACK = Signature(
    r"Traceback \(most recent call last\)",
    Layer.APP,
    "Python exception",
    "Read the traceback: the last frame in your code is usually where to look.",
    kind="python-traceback",
    priority=0,
)

#: A traceback whose exception line never came (output cut, or the process died while printing).
INCOMPLETE_TRACEBACK = Signature(
    r"Traceback \(most recent call last\)",
    Layer.APP,
    "traceback without an exception line (output cut?)",
    "The process may have died while printing; check the process state and the host's kernel messages.",
    kind="python-traceback-incomplete",
    severity=Severity.WARNING,
    priority=0,
)


_SIG_KEYS = {"pattern", "layer", "label", "advice", "kind", "severity", "priority", "ignore_case"}
_REQUIRED_KEYS = ("pattern", "layer", "label")


def load_signatures(items: Iterable[dict[str, Any]] | None) -> list[Signature]:
    """Validate user signatures from config (``[[signatures]]`` tables).

    Keys: ``pattern`` (regex), ``layer`` (a layer name), ``label`` (may use ``{1}``/``{name}``),
    optional ``advice``, ``kind`` (default ``user``), ``severity`` (error|warning|info, default
    error), ``priority`` (default 100: above every built-in), ``ignore_case`` (default false).
    Raises ValueError naming ``signatures[INDEX].KEY`` and what to do.
    """
    out: list[Signature] = []
    if items is None:
        return out
    if isinstance(items, (dict, str, bytes)):
        raise ValueError("signatures: expected a list of tables ([[signatures]]), got a single value")
    for i, item in enumerate(items):
        where = f"signatures[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: expected a table with pattern, layer, label; got {type(item).__name__}")
        for key in item:
            if key not in _SIG_KEYS:
                near = difflib.get_close_matches(str(key), sorted(_SIG_KEYS), n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f" (known keys: {', '.join(sorted(_SIG_KEYS))})"
                raise ValueError(f"{where}.{key}: unknown key{hint}")
        for key in _REQUIRED_KEYS:
            if key not in item:
                raise ValueError(f"{where}.{key}: missing (a signature needs pattern, layer and label)")
        for key in ("pattern", "layer", "label", "advice", "kind", "severity"):
            if key in item and not isinstance(item[key], str):
                raise ValueError(f"{where}.{key}: expected a string, got {type(item[key]).__name__}")
        pattern = item["pattern"]
        if not pattern:
            raise ValueError(f"{where}.pattern: empty pattern would match every line")
        ignore_case = item.get("ignore_case", False)
        if not isinstance(ignore_case, bool):
            raise ValueError(f"{where}.ignore_case: expected true or false")
        try:
            rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise ValueError(f"{where}.pattern: invalid regular expression {pattern!r}: {exc}") from None
        except (RecursionError, OverflowError, MemoryError) as exc:
            raise ValueError(f"{where}.pattern: regular expression too complex: {exc!r}") from None
        if rx.search("") is not None:
            raise ValueError(f"{where}.pattern: {pattern!r} matches the empty string, so it would match every line")
        layer_name = item["layer"].strip().lower()
        try:
            layer = Layer(layer_name)
        except ValueError:
            near = difflib.get_close_matches(layer_name, [la.value for la in Layer], n=1)
            hint = f"did you mean '{near[0]}'? " if near else ""
            raise ValueError(f"{where}.layer: {item['layer']!r} is not a layer ({hint}one of {_LAYER_NAMES})") from None
        sev_name = item.get("severity", "error").strip().lower()
        try:
            severity = Severity(sev_name)
        except ValueError:
            raise ValueError(f"{where}.severity: {item['severity']!r} is not one of error, warning, info") from None
        priority = item.get("priority", 100)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise ValueError(f"{where}.priority: expected an integer")
        if not item["label"].strip():
            raise ValueError(f"{where}.label: empty label")
        out.append(
            Signature(
                pattern=pattern,
                layer=layer,
                label=item["label"],
                advice=item.get("advice", ""),
                kind=item.get("kind", "user") or "user",
                severity=severity,
                priority=priority,
                ignore_case=ignore_case,
                source="config",
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# matches


@dataclass(frozen=True)
class Match:
    """A signature matched a line, or a traceback (chain) was assembled.

    ``line_no`` is the 1-based number of the deciding line (for a traceback: its last exception
    line); ``traceback`` holds the chain's lines from its header (``Exception in thread`` line
    included) to the exception line and message; ``exceptions`` the chain's exception lines, the
    root cause first.  ``chain_id`` is shared by every version of one traceback chain;
    ``update`` is true for a version that replaces an earlier one.
    """

    signature: Signature
    line_no: int
    line: str
    label: str
    severity: Severity
    traceback: tuple[str, ...] = ()
    traceback_start: int | None = None
    thread: str | None = None
    exceptions: tuple[str, ...] = ()
    chain_id: int | None = None
    update: bool = False

    @property
    def layer(self) -> Layer:
        return self.signature.layer

    @property
    def kind(self) -> str:
        return self.signature.kind

    @property
    def advice(self) -> str:
        return self.signature.advice

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_finding(self) -> Finding:
        subject: dict[str, Any] = {"line_no": self.line_no, "line": self.line}
        if self.traceback:
            subject["traceback_start"] = self.traceback_start
            subject["traceback"] = list(self.traceback)
            subject["exceptions"] = list(self.exceptions)
        if self.thread:
            subject["thread"] = self.thread
        summary = self.label if not self.thread else f"{self.label} (thread {self.thread})"
        return Finding(
            layer=self.layer,
            kind=self.kind,
            summary=summary,
            advice=self.advice,
            severity=self.severity,
            subject=subject,
        )

    def to_dict(self) -> dict[str, Any]:
        d = self.to_finding().to_dict()
        d["signature"] = self.signature.to_dict()
        d["chain_id"] = self.chain_id
        return d


# --------------------------------------------------------------------------------------------
# the classifier

_TB_HEADER = re.compile(r"^(?P<prefix>.*?)Traceback \(most recent call last\):\s*$")
_THREAD_HEADER = re.compile(r"^(?P<prefix>.*?)Exception in thread (?P<name>.*?):\s*$")
_IGNORED_HEADER = re.compile(r"^(?P<prefix>.*?)Exception ignored (?:in|on)\b")
_CHAIN_MARKER = re.compile(
    r"^(?P<prefix>.*?)(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)\s*$"
)
_EXC_LINE = re.compile(r"(?P<name>[A-Za-z_][\w.]*)(?::(?:\s.*)?)?\Z")
_LOGLIKE = re.compile(
    r"\s*(?:\[|\d|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL|NOTE)\b|[IWEF]\d{4}\s|(?i:step|epoch|iter)\b)"
)
_STRUCT_KEYWORDS = ("Traceback (most recent", "Exception in thread", "Exception ignored", "above exception")


_BARE_EXC_SUFFIX = ("Error", "Exception", "Interrupt", "Exit", "Iteration", "Warning", "Failed", "Timeout",
                    "Empty", "Full", "Group")


def _looks_like_exception(body: str) -> bool:
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


def _min_keywords(words: Iterable[str]) -> list[str]:
    """Drop keywords that contain another keyword (the shorter one already triggers)."""
    uniq = sorted(set(w for w in words if w), key=len)
    out: list[str] = []
    for w in uniq:
        if not any(o in w for o in out):
            out.append(w)
    return out


def _trie_regex(words: Iterable[str]) -> str:
    """An alternation of literal ``words`` with shared prefixes factored out.

    Python's ``re`` tries every branch of a flat alternation at every position; factored as a
    trie, one branch per first character survives, which makes the prefilter about twice as
    fast on ordinary lines.  Words that extend a shorter word are dropped (the shorter one
    already triggers).
    """
    trie: dict[str, Any] = {}
    for w in words:
        if not w:
            continue
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        if "" in node:
            return ""
        alts: list[str] = []
        leaves: list[str] = []
        for ch, sub in sorted(node.items()):
            rest = build(sub)
            if rest:
                alts.append(re.escape(ch) + rest)
            else:
                leaves.append(ch)
        if len(leaves) == 1:
            alts.append(re.escape(leaves[0]))
        elif leaves:
            alts.append("[" + "".join(re.escape(c) for c in leaves) + "]")
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return build(trie) if trie else ""


class _Chain:
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


class _Block:
    __slots__ = ("prefix", "chain", "strays", "frames")

    def __init__(self, prefix: str, chain: _Chain):
        self.prefix = prefix
        self.chain = chain
        self.strays = 0
        self.frames = 0


class _After:
    __slots__ = ("chain", "mode", "count", "idle", "expect")

    def __init__(self, chain: _Chain):
        self.chain = chain
        self.mode = "message"  # message -> gap
        self.count = 0
        self.idle = 0
        self.expect = False  # a chain marker was seen: the next header continues the chain


class Classifier:
    """Classify log lines incrementally; see the module docstring.

    ``signatures``: the table (default :data:`BUILTIN`); ``user``: signatures from config, added
    to it.  ``max_matches`` bounds the kept history (``matches``); the first error is kept
    regardless.
    """

    HEAD_KEEP = 40

    def __init__(
        self,
        signatures: Iterable[Signature] | None = None,
        *,
        user: Iterable[Signature] = (),
        max_matches: int = 1000,
        max_traceback_lines: int = 500,
        max_strays: int = 200,
    ):
        sigs = list(BUILTIN if signatures is None else signatures) + list(user)
        self.signatures: tuple[Signature, ...] = tuple(sorted(sigs, key=lambda s: -s.priority))
        self.max_traceback_lines = max(self.HEAD_KEEP + 10, max_traceback_lines)
        self.max_strays = max_strays
        self._always = tuple(s for s in self.signatures if not s.keywords)
        cs = _min_keywords(k for s in self.signatures if not s.ignore_case for k in s.keywords)
        ci = _min_keywords(k.lower() for s in self.signatures if s.ignore_case for k in s.keywords)
        cs = _min_keywords(list(cs) + list(_STRUCT_KEYWORDS))
        pattern = _trie_regex(cs)
        if ci:
            pattern += "|(?i:" + _trie_regex(ci) + ")"
        self._prefilter = re.compile(pattern).search
        self.line_no = 0
        self.matches: deque[Match] = deque(maxlen=max(1, max_matches))
        self.counts: dict[str, int] = {}
        self._blocks: list[_Block] = []
        self._after: dict[str, _After] = {}
        self._pending_thread: dict[str, tuple[str, int, str]] = {}
        self._pending_ignored: dict[str, int] = {}
        self._next_id = 1
        self._first_ref: Match | _Chain | None = None
        self._final_ref: Match | _Chain | None = None
        self._chains: dict[int, _Chain] = {}
        self._max_chains = max(1, max_matches)
        self._busy = False  # any open structure: every line takes the slow path
        self._fast = not self._always  # prefilter only: no open structure, no keyword-less signature

    # -- public -------------------------------------------------------------------------

    @property
    def first_error(self) -> Match | None:
        """The first error-severity match; for a traceback, its chain as assembled so far."""
        return self._resolve(self._first_ref)

    @property
    def final_error(self) -> Match | None:
        """The last error-severity match; for a traceback, its chain as assembled so far."""
        return self._resolve(self._final_ref)

    @property
    def errors(self) -> list[Match]:
        """Error matches still in the bounded history, one per chain (current version)."""
        latest: dict[Any, Match] = {}
        for m in self.matches:
            if m.is_error:
                key = m.chain_id if m.chain_id is not None else ("line", m.line_no)
                chain = self._chains.get(m.chain_id) if m.chain_id is not None else None
                latest[key] = self._resolve(chain) if chain is not None else m
        return [m for m in latest.values() if m is not None and m.is_error]

    def _resolve(self, ref: "Match | _Chain | None") -> Match | None:
        if ref is None or isinstance(ref, Match):
            return ref
        if ref.match_version != ref.version or ref.last_match is None:
            ref.last_match = self._chain_match(ref)
            ref.match_version = ref.version
        return ref.last_match

    def feed(self, line: str) -> list[Match]:
        """Classify one line (without its newline); returns the matches it completed."""
        self.line_no += 1
        if self._fast and self._prefilter(line) is None:
            return []
        out = self._slow(line)
        self._update_busy()
        return out

    def feed_many(self, lines: Iterable[str]) -> list[Match]:
        out: list[Match] = []
        feed = self.feed
        for line in lines:
            r = feed(line)
            if r:
                out.extend(r)
        return out

    def flush(self) -> list[Match]:
        """End of input (or the process is gone): report tracebacks that never finished."""
        out: list[Match] = []
        for blk in list(reversed(self._blocks)):
            self._abandon(blk, out)
        self._blocks.clear()
        self._after.clear()
        self._pending_thread.clear()
        self._pending_ignored.clear()
        self._update_busy()
        return out

    def reset(self) -> None:
        self.__init__(self.signatures, max_matches=self.matches.maxlen or 1000,  # type: ignore[misc]
                      max_traceback_lines=self.max_traceback_lines, max_strays=self.max_strays)

    # -- internals ----------------------------------------------------------------------

    def _update_busy(self) -> None:
        self._busy = bool(self._blocks or self._after or self._pending_thread or self._pending_ignored)
        self._fast = not self._busy and not self._always

    def _record(self, m: Match, out: list[Match], chain: "_Chain | None" = None) -> None:
        out.append(m)
        self.matches.append(m)
        if not m.update:
            self.counts[m.kind] = self.counts.get(m.kind, 0) + 1
        if chain is not None:
            self._chains[chain.id] = chain
            if len(self._chains) > self._max_chains:
                oldest = next(iter(self._chains))
                if not (self._first_ref is self._chains[oldest] or self._final_ref is self._chains[oldest]):
                    del self._chains[oldest]
        if m.is_error:
            ref: Match | _Chain = chain if chain is not None else m
            if self._first_ref is None:
                self._first_ref = ref
            self._final_ref = ref

    def _classify_line(self, line: str, out: list[Match]) -> None:
        best: tuple[Signature, re.Match[str]] | None = None
        for sig in self.signatures:  # sorted by priority: the first hit wins
            kws = sig.keywords
            if kws:
                hay = line.lower() if sig.ignore_case else line
                if not any(k in hay for k in kws):
                    continue
            m = sig.regex.search(line)
            if m is not None:
                best = (sig, m)
                break
        if best is None:
            return
        sig, m = best
        self._record(
            Match(
                signature=sig,
                line_no=self.line_no,
                line=line,
                label=sig.render_label(m),
                severity=sig.severity,
                chain_id=self._new_id(),
            ),
            out,
        )

    def _best_sig(self, text: str) -> tuple[Signature, re.Match[str]] | None:
        for sig in self.signatures:
            if sig.kind in ("python-traceback", "python-traceback-incomplete"):
                continue
            kws = sig.keywords
            if kws:
                hay = text.lower() if sig.ignore_case else text
                if not any(k in hay for k in kws):
                    continue
            m = sig.regex.search(text)
            if m is not None:
                return sig, m
        return None

    def _new_id(self) -> int:
        i = self._next_id
        self._next_id += 1
        return i

    def _append(self, chain: _Chain, line: str) -> None:
        chain.version += 1
        chain.lines.append(line)
        if len(chain.lines) > self.max_traceback_lines:
            del chain.lines[self.HEAD_KEEP]
            chain.cut += 1

    def _block_for(self, line: str) -> _Block | None:
        best: _Block | None = None
        for blk in reversed(self._blocks):  # newest first
            if line.startswith(blk.prefix) and (best is None or len(blk.prefix) > len(best.prefix)):
                best = blk
        return best

    def _after_for(self, line: str) -> tuple[str, _After] | None:
        best: tuple[str, _After] | None = None
        for prefix, aft in self._after.items():
            if line.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
                best = (prefix, aft)
        return best

    def _emit_chain(self, chain: _Chain, out: list[Match], incomplete: bool = False) -> None:
        m = self._chain_match(chain, incomplete)
        chain.emitted = True
        chain.last_match = m
        chain.match_version = chain.version
        self._record(m, out, chain)

    def _chain_match(self, chain: _Chain, incomplete: bool = False) -> Match:
        if incomplete and not chain.exceptions:
            sig: Signature = INCOMPLETE_TRACEBACK
            label = sig.label
            severity = Severity.WARNING
            line = chain.lines[-1] if chain.lines else ""
            line_no = self.line_no
        else:
            sig = chain.sig or TRACEBACK
            if chain.sig is None:
                label = chain.exceptions[-1] if chain.exceptions else TRACEBACK.label
                label = label if len(label) <= 200 else label[:199] + "…"
            else:
                label = sig.render_label(chain.sig_m)
            severity = Severity.WARNING if chain.ignored and sig.severity is Severity.ERROR else sig.severity
            line = chain.deciding
            line_no = chain.deciding_no
        tb = list(chain.lines)
        if chain.cut:
            tb.insert(self.HEAD_KEEP, f"… [{chain.cut} traceback lines cut]")
        m = Match(
            signature=sig,
            line_no=line_no,
            line=line,
            label=label,
            severity=severity,
            traceback=tuple(tb),
            traceback_start=chain.start_no,
            thread=chain.thread,
            exceptions=tuple(chain.exceptions),
            chain_id=chain.id,
            update=chain.emitted,
        )
        return m

    def _consider(self, chain: _Chain, text: str, line: str) -> bool:
        """Let a line of the chain (exception or message) pick the chain's signature."""
        hit = self._best_sig(text)
        if hit is None:
            return False
        sig, m = hit
        if chain.sig is None or sig.priority > chain.sig.priority:
            chain.version += 1
            chain.sig, chain.sig_m = sig, m
            chain.deciding, chain.deciding_no = line, self.line_no
            return True
        return False

    def _abandon(self, blk: _Block, out: list[Match]) -> None:
        chain = blk.chain
        if chain.exceptions:  # a chained part never finished: report what the chain had
            if not chain.emitted:
                self._emit_chain(chain, out)
            return
        self._emit_chain(chain, out, incomplete=True)

    def _slow(self, line: str) -> list[Match]:
        out: list[Match] = []
        if line.endswith(("\n", "\r")):
            line = line.rstrip("\r\n")
        no = self.line_no

        # expire stale header hints
        if self._pending_thread:
            for p, (_n, at, _l) in list(self._pending_thread.items()):
                if no - at > 3:
                    del self._pending_thread[p]
        if self._pending_ignored:
            for p, at in list(self._pending_ignored.items()):
                if no - at > 3:
                    del self._pending_ignored[p]

        if "Traceback (most recent call last)" in line:
            m = _TB_HEADER.match(line)
            if m:
                self._open(m.group("prefix"), line, out)
                self._update_busy()
                return out
        if "Exception in thread" in line:
            m = _THREAD_HEADER.match(line)
            if m:
                self._pending_thread[m.group("prefix")] = (m.group("name"), no, line)
                self._update_busy()
                return out
        if "Exception ignored" in line:
            m = _IGNORED_HEADER.match(line)
            if m:
                self._pending_ignored[m.group("prefix")] = no
                self._update_busy()
                return out
        if "above exception" in line:
            m = _CHAIN_MARKER.match(line)
            if m and m.group("prefix") in self._after:
                aft = self._after[m.group("prefix")]
                aft.expect = True
                aft.mode = "gap"
                aft.idle = 0
                self._append(aft.chain, line)
                return out

        blk = self._block_for(line) if self._blocks else None
        if blk is not None:
            body = line[len(blk.prefix) :]
            if not body or body[0] in " \t":
                blk.frames += 1
                self._append(blk.chain, line)
                return out
            if _looks_like_exception(body):
                self._close(blk, line, body, out)
                self._update_busy()
                return out
            blk.strays += 1
            if blk.strays > self.max_strays:
                self._blocks.remove(blk)
                self._abandon(blk, out)
                self._update_busy()
            # a stray line: classify it on its own below

        if self._after and blk is None:
            hit = self._after_for(line)
            if hit is not None:
                prefix, aft = hit
                body = line[len(prefix) :]
                if aft.mode == "message":
                    if not body.strip():
                        aft.mode = "gap"
                        aft.idle = 0
                        return out
                    if aft.count < 10 and not _LOGLIKE.match(body) and not aft.expect:
                        aft.count += 1
                        self._append(aft.chain, line)
                        if self._consider(aft.chain, body, line):
                            self._emit_chain(aft.chain, out)
                        return out
                    del self._after[prefix]
                else:  # gap: blank lines between an exception and a chain marker / next header
                    if not body.strip() and aft.idle < 3:
                        aft.idle += 1
                        return out
                    del self._after[prefix]
                self._update_busy()

        self._classify_line(line, out)
        return out

    def _open(self, prefix: str, line: str, out: list[Match]) -> None:
        chain: _Chain | None = None
        aft = self._after.pop(prefix, None)
        if aft is not None and aft.expect:
            chain = aft.chain
            self._append(chain, line)
        if chain is None:
            thread = None
            start = self.line_no
            head: list[str] = []
            pt = self._pending_thread.pop(prefix, None)
            if pt is not None:
                thread, start, tline = pt
                head.append(tline)
            ignored = self._pending_ignored.pop(prefix, None) is not None
            chain = _Chain(self._new_id(), prefix, start, thread, ignored)
            for h in head:
                self._append(chain, h)
            self._append(chain, line)
        self._blocks.append(_Block(prefix, chain))

    def _close(self, blk: _Block, line: str, body: str, out: list[Match]) -> None:
        self._blocks.remove(blk)
        chain = blk.chain
        self._append(chain, line)
        chain.exceptions.append(body)
        self._consider(chain, body, line)
        if chain.sig is None:
            chain.deciding, chain.deciding_no = line, self.line_no
        self._emit_chain(chain, out)
        self._after[blk.prefix] = _After(chain)


def classify_lines(lines: Sequence[str], signatures: Iterable[Signature] | None = None) -> Classifier:
    """Convenience: a classifier fed with ``lines`` and flushed."""
    c = Classifier(signatures)
    c.feed_many(lines)
    c.flush()
    return c
