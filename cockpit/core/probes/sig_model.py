"""Signature and Match: what a log line means, and what the classifier found.

A :class:`Signature` is a regex with a layer, a label and advice; :func:`load_signatures` validates
user signatures from config (``[[signatures]]`` tables); keywords for the classifier's prefilter are
derived from a signature's regex here (:func:`derive_keywords`).  A :class:`Match` is one result:
a signature that matched a line, or an assembled traceback chain.  The built-in table is
:mod:`.sig_table`; the classifier is :mod:`.classifier`.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..layers import Finding, Layer, Severity

try:  # Python 3.11+
    import re._parser as _sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef, unused-ignore]

__all__ = ["Signature", "Match", "load_signatures", "derive_keywords"]

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# signatures


@dataclass(frozen=True)
class Signature:
    """A regex that identifies a failure in a log line.

    ``keywords``: literal substrings of which a matching line contains at least one (the
    classifier's prefilter); derived from ``pattern`` when empty; ``()`` after derivation means
    "run on every line".  ``label`` may name regex groups as ``{1}`` or ``{name}``.
    ``priority`` decides between signatures matching the same line or traceback chain.
    ``kind`` is the signature's id (unique among the built-ins; user signatures without one share
    ``user``): findings carry it, and ``Classifier(ignore=...)`` names signatures by it.
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
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        flags = re.IGNORECASE if self.ignore_case else 0
        object.__setattr__(self, "regex", re.compile(self.pattern, flags))
        if not self.keywords:
            kws = derive_keywords(self.pattern, flags)
            object.__setattr__(self, "keywords", kws or ())
        elif self.ignore_case:
            object.__setattr__(self, "keywords", tuple(k.lower() for k in self.keywords))

    def search(self, line: str) -> re.Match[str] | None:
        return self.regex.search(line)

    def render_label(self, m: re.Match[str] | None) -> str:
        if m is None or "{" not in self.label:
            return self.label

        def sub(tok: re.Match[str]) -> str:
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


def derive_keywords(pattern: str, flags: int) -> tuple[str, ...] | None:
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
    except Exception as exc:  # noqa: BLE001 - the parser's internals vary by version: fall back to no keywords (debug-logged), never fail a config
        log.debug("no prefilter keywords for %r: %r", pattern, exc)
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
