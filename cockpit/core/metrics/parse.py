"""Log line → numbers: the forms training jobs print their metrics in, and ``[metrics] pattern``.

:class:`MetricParser` turns one log line into a :class:`Reading` (or None: most lines hold no
metric).  The built-in forms, tried on every line that passes a keyword prefilter (``loss``,
``step``, ``iter``, ``epoch`` or a progress bar's ``%|``, any case):

* **key value text**: ``step 120 loss 1.83 lr 3e-4 tok/s 5100``, ``step=120 | loss=1.83``,
  ``step: 120, loss: 1.83``, ``step 120/1000`` (a total); a unit after a number is dropped
  (``time 0.25s``).  Taken only when a key is step-like (``step``, ``global_step``, ``iter``…) or
  holds ``loss``, so ``line 12`` in a traceback is never a metric;
* **dicts** (HF Trainer, JSON lines): ``{'loss': 1.83, 'grad_norm': 0.9, 'learning_rate': 3e-05,
  'epoch': 0.12}``, ``{"loss": 1.83, "step": 120}``;
* **progress bars** (tqdm, HF, Lightning): ``  12%|█▏  | 120/1000 [00:30<03:40,  4.00it/s,
  loss=1.83]`` gives the step and the total (``bar``), the rate (``it/s``) and the postfix pairs;
  ``Epoch 2:  12%|…| 120/1000 […]`` (Lightning) also the epoch.  Validation, sanity-check, test
  and predict bars are not training steps and are left out.

A line rewritten with carriage returns (a bar in a file) is read at its last segments.  Values
that are not finite (``nan``, ``inf``, ``-inf``, ``NaN``, ``Infinity``) are kept as such: a loss
that turned NaN is the most important number of a run, not noise (a step or a total must be finite).

A training loop prints the same line with other numbers again and again: a line the key-value form
alone reads is learned as a *template* of its shape (:mod:`.shapes`), and the next lines of that
shape are read by one match of the template (~2 µs instead of ~5–10 µs), to the same reading.
The parser holds no state but these templates: resolving a
reading's step (a bar's epoch, a restarted bar, a dict line without a step) is
:class:`~cockpit.core.metrics.series.AttemptMetrics`'s job, so a reading can be stored and replayed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from ..probes.sig_model import derive_keywords
from .shapes import ShapeCache, shape, template

__all__ = ["Reading", "MetricParser", "goal", "STEP_KEYS", "BUILTIN_KEYWORDS"]

_NUM = r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?)(?![A-Za-z]))"
#: ``key value`` / ``key=value`` / ``key: value`` (a separator is required: ``rank0`` is no pair)
#: (the key is matched whole, as an atomic group would: a lookahead and its backreference; the
#: lookbehind after its first letter keeps a key from starting inside a word, cheaply)
_KV = re.compile(r"([A-Za-z_](?<![\w./-][A-Za-z_])(?=([\w./-]{0,47}))\2)(?:\s*[:=]\s*|\s+)(" + _NUM + r")(?:/(\d+))?"
                 r"(?:%|[A-Za-z]{1,3}(?:/[A-Za-z]{1,3})?)?(?![\w.:/-])")
#: ``'key': value`` inside a dict (``np.float64(1.2)`` and ``tensor(1.2)`` wrappers allowed)
_DICT = re.compile(r"['\"]([A-Za-z_][\w./ -]{0,47})['\"]\s*:\s*(?:[\w.]{1,24}\()?(" + _NUM + r")\)?\s*(?=[,}])")
#: tqdm's right side: ``NN%|BAR| N/TOTAL [INFO]``
_BAR = re.compile(r"(\d{1,3})%\|[^|]{0,400}\|\s*(\d+)/(\d+)\s*\[([^\]]{0,400})\]")
_EPOCH = re.compile(r"(?i)\bepoch\s+(\d+)")
_RATE = re.compile(r"^(" + _NUM + r")\s*(?:([A-Za-z]{1,8})/s|s/([A-Za-z]{1,8}))$")
#: bars that are not training steps (Lightning names them so)
_NOT_TRAINING = ("validat", "sanity", "test", "predict", "eval")

#: keys that carry the step (compared lowercased)
STEP_KEYS = frozenset({"step", "steps", "global_step", "iter", "iters", "iteration", "it", "train/global_step",
                       "trainer/global_step", "global step"})
#: the prefilter: a line holding none of these (lowercased) is never parsed by the built-in forms
BUILTIN_KEYWORDS = ("loss", "step", "iter", "poch", "%|")
#: postfix keys that are bookkeeping, not metrics
_SKIP = frozenset({"v_num"})

#: ``max``: bigger is better (accuracy, throughput); ``min``: smaller is better (loss-like)
_MAX_WORDS = ("acc", "f1", "bleu", "rouge", "auc", "precision", "recall", "reward", "score", "/s", "per_s", "throughput", "mfu")
_MIN_WORDS = ("loss", "ppl", "perplexity", "err", "wer", "cer", "mse", "mae", "nll")


def goal(name: str) -> str | None:
    """``"min"`` for loss-like names, ``"max"`` for accuracy- and throughput-like ones, else None
    (a learning rate or an epoch has no better)."""
    n = name.lower()
    if any(w in n for w in _MIN_WORDS):
        return "min"
    if any(w in n for w in _MAX_WORDS) or n.endswith("_per_second"):
        return "max"
    return None


@dataclass(slots=True)
class Reading:
    """What one log line said: named values, and where in the run it was said."""

    values: dict[str, float] = field(default_factory=dict)
    #: the step the line itself names (``step 120``, ``'step': 120``, a ``(?P<step>…)`` group)
    step: float | None = None
    #: a total the line names (``step 120/1000``, a ``(?P<total>…)`` group)
    total: int | None = None
    #: a progress bar: ``(n, total, epoch)`` (epoch None when the bar names none)
    bar: tuple[int, int, int | None] | None = None

    def to_record(self) -> dict[str, Any]:
        d: dict[str, Any] = {"v": self.values}
        if self.step is not None:
            d["s"] = self.step
        if self.total is not None:
            d["tot"] = self.total
        if self.bar is not None:
            d["b"] = list(self.bar)
        return d

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> Reading | None:
        v = d.get("v")
        if not isinstance(v, dict):
            return None
        values = {str(k): x for k, x in ((k, _stored(x)) for k, x in v.items()) if x is not None}
        step = d.get("s")
        tot = d.get("tot")
        b = d.get("b")
        bar = None
        if isinstance(b, list) and len(b) == 3 and all(isinstance(x, int) for x in b[:2]) and (b[2] is None or isinstance(b[2], int)):
            bar = (b[0], b[1], b[2])
        return cls(values, _fnum(step), tot if isinstance(tot, int) and not isinstance(tot, bool) else None, bar)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _stored(x: Any) -> float | None:
    """A stored value: a number, or a non-finite one written as a string (JSON has no NaN)."""
    if isinstance(x, str) and x in ("nan", "inf", "-inf"):
        return float(x)
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _fnum(x: Any) -> float | None:
    return float(x) if _finite(x) else None


def _num(text: str) -> float | None:
    """A value as the line wrote it, non-finite ones included (see :func:`_step`)."""
    try:
        return float(text)
    except ValueError:
        return None


def _step(text: str) -> float | None:
    """A step or a total: finite only (``step nan`` says nothing about where the run is)."""
    v = _num(text)
    return v if v is not None and math.isfinite(v) else None


class MetricParser:
    """One log line → :class:`Reading` or None (see the module doc).

    ``pattern``: ``[metrics] pattern``, a regex whose named groups are values (``step`` and
    ``total`` are the step and the total); tried first, searched anywhere in the line.
    ``builtin``: also the built-in forms (when the pattern does not match)."""

    def __init__(self, pattern: str = "", builtin: bool = True) -> None:
        self.pattern = re.compile(pattern) if pattern else None
        self.keywords = derive_keywords(pattern, 0) if pattern else None
        self.builtin = builtin
        #: templates of the lines the key-value form alone reads (:mod:`.shapes`)
        self.shapes: ShapeCache[_KvForm] = ShapeCache(_KvForm.make)

    def parse(self, line: str) -> Reading | None:
        if self.pattern is None and "{" not in line and "%|" not in line:  # neither a dict nor a bar
            low = line.lower()
            if not ("loss" in low or "step" in low or "iter" in low or "poch" in low):
                return None  # no keyword in the line: none in any of its segments (the prefilter of _one)
            # a line of a known shape: it passed every check of _one when its template was learned
            form = self.shapes.get(shape(line))
            if form is not None:
                m = form.match(line)
                if m is not None:
                    return form.read(m.groups())
        if "\r" in line:  # a bar rewritten in place: its last whole segment says where it is
            for seg in reversed(line.split("\r")[-3:]):
                if seg.strip():
                    r = self._one(seg)
                    if r is not None:
                        return r
            return None
        return self._one(line)

    def _one(self, s: str) -> Reading | None:
        if self.pattern is not None and (self.keywords is None or any(k in s for k in self.keywords)):
            m = self.pattern.search(s)
            if m is not None:
                r = _from_groups(m)
                if r is not None:
                    return r
        if not self.builtin:
            return None
        low = s.lower()
        if not ("loss" in low or "step" in low or "iter" in low or "poch" in low or "%|" in low):
            return None
        if "%|" in s or "{" in s:  # a bar or a dict: the general forms
            return _builtin(s)
        key = shape(s)
        form = self.shapes.get(key)
        if form is not None:
            m = form.match(s)
            if m is not None:
                return form.read(m.groups())
        self.shapes.learn(key, s)
        return _builtin(s)


class _KvForm:
    """The key-value form's reading of one shape of line (:mod:`.shapes`): what :func:`_pairs`
    found in the first line of the shape, each key (when it has digits), value and total a group
    of the template; :meth:`read` does what :func:`_pairs` does with them, the values decided again."""

    __slots__ = ("match", "fields", "simple", "steps", "keys", "vals", "take")

    def __init__(self, match: Any, fields: tuple[tuple[str | int, int, int, bool], ...]) -> None:
        self.match = match
        #: ``(key or its group, value group, total group or -1, the key is the step)``
        self.fields = fields
        steps = [(vi, oi) for _, vi, oi, is_step in fields if is_step]
        keys = [k for k, _, _, is_step in fields if not is_step]
        #: no key with digits, no key twice: the values are the value groups, named in order
        self.simple = all(isinstance(k, str) for k in keys) and len(set(keys)) == len(keys)
        self.steps = tuple(steps)
        self.keys = tuple(str(k) for k in keys)
        self.vals = tuple(vi for _, vi, _, is_step in fields if not is_step)
        #: the value groups' texts, in one call in C
        self.take: Callable[[tuple[str, ...]], tuple[str, ...]] = (
            itemgetter(*self.vals) if len(self.vals) > 1 else lambda g: tuple(g[i] for i in self.vals))

    @classmethod
    def make(cls, s: str) -> _KvForm | None:
        found = list(_KV.finditer(s))
        if not any(m.group(1).lower() in STEP_KEYS or "loss" in m.group(1).lower() for m in found):
            found = []  # not a metrics line (strict): every line of the shape reads as nothing
        spans: list[tuple[int, int]] = []
        fields: list[tuple[str | int, int, int, bool]] = []
        for m in found:
            k = m.group(1)
            key: str | int = k
            if any(c in "0123456789" for c in k):
                key = len(spans)
                spans.append(m.span(1))
            vi = len(spans)
            spans.append(m.span(3))
            oi = -1
            if m.group(4):
                oi = len(spans)
                spans.append(m.span(4))
            fields.append((key, vi, oi, k.lower() in STEP_KEYS))
        pat = template(s, spans)
        return cls(pat.fullmatch, tuple(fields)) if pat is not None else None

    def read(self, g: tuple[str, ...]) -> Reading | None:
        if not self.fields:
            return None
        if self.simple:
            try:
                values = dict(zip(self.keys, map(float, self.take(g)), strict=True))
                step: float | None = None
                total: int | None = None
                for vi, oi in self.steps:
                    x = float(g[vi])
                    if math.isfinite(x):
                        step, total = x, int(g[oi]) if oi >= 0 else None
                        break
            except ValueError:  # a number float() does not read (never from _NUM): as _pairs does
                return self._read(g)
            return Reading(values, step, total) if (values or step is not None) else None
        return self._read(g)

    def _read(self, g: tuple[str, ...]) -> Reading | None:
        r = Reading()
        values = r.values
        for key, vi, oi, is_step in self.fields:
            x = _num(g[vi])
            if x is None:
                continue
            if is_step:
                if r.step is None and math.isfinite(x):
                    r.step = x
                    if oi >= 0:
                        r.total = int(g[oi])
            else:
                k = key if isinstance(key, str) else g[key]
                if k not in values:
                    values[k] = x
        return r if (values or r.step is not None) else None


def _from_groups(m: re.Match[str]) -> Reading | None:
    r = Reading()
    for name, text in m.groupdict().items():
        if text is None:
            continue
        v = _num(text.strip())
        if v is None:
            continue
        if name in ("step", "total"):
            if not math.isfinite(v):
                continue
            if name == "step":
                r.step = v
            else:
                r.total = int(v) if v >= 0 else None
        else:
            r.values[name] = v
    return r if r.values or r.step is not None else None


def _builtin(s: str) -> Reading | None:
    r = Reading()
    rest = s
    if "%|" in s:
        m = _BAR.search(s)
        if m is not None:
            desc = s[: m.start()]
            if not any(w in desc.lower() for w in _NOT_TRAINING):
                _bar(r, desc, m)
            rest = s[: m.start()] + " " + s[m.end():]  # the text around the bar may hold a dict (HF)
    in_dict = False
    if "{" in rest and ":" in rest:
        pairs: list[tuple[str, str]] = _DICT.findall(rest)
        # a dict of metrics names a step, a loss or an epoch (a config dump does not)
        if pairs and any(_signal(k) or k.lower() == "epoch" for k, _ in pairs):
            in_dict = True
            for k, v in pairs:
                _put(r, k, v)
    if not in_dict and r.bar is None:
        _pairs(r, rest, strict=True)
    return r if (r.values or r.step is not None or r.bar is not None) else None


def _bar(r: Reading, desc: str, m: re.Match[str]) -> None:
    n, total = int(m.group(2)), int(m.group(3))
    em = _EPOCH.search(desc)
    r.bar = (n, total, int(em.group(1)) if em else None)
    info = [p.strip() for p in m.group(4).split(",")]
    for part in info[1:]:
        rm = _RATE.match(part)
        if rm is not None:
            v = _step(rm.group(1))
            if v is not None and v > 0:
                r.values[f"{rm.group(2) or rm.group(3)}/s"] = v if rm.group(2) else 1.0 / v
            continue
        k, sep, text = part.partition("=")
        if sep and k.strip() not in _SKIP:
            _put(r, k.strip(), text.strip())


def _pairs(r: Reading, s: str, *, strict: bool) -> None:
    """``key value`` pairs; with ``strict`` only from a line with a step-like or loss-like key."""
    found = _KV.findall(s)
    if not found:
        return
    if strict and not any(k.lower() in STEP_KEYS or "loss" in k.lower() for k, _, _, _ in found):
        return
    values = r.values
    for k, _, v, of in found:
        x = _num(v)
        if x is None:
            continue
        if k.lower() in STEP_KEYS:
            if r.step is None and math.isfinite(x):
                r.step = x
                if of:
                    r.total = int(of)
        elif k not in values:
            values[k] = x


def _signal(key: str) -> bool:
    k = key.lower()
    return k in STEP_KEYS or "loss" in k


def _put(r: Reading, key: str, text: str) -> None:
    key = key.strip()
    v = _num(text)
    if v is None or not key:
        return
    if key.lower() in STEP_KEYS:
        if r.step is None and math.isfinite(v):
            r.step = v
        return
    r.values.setdefault(key, v)
