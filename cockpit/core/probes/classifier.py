"""The incremental log classifier: line signatures, traceback chains, and what counts as an error.

:class:`Classifier` consumes a log line by line (``feed``, fine for a live log):

* plain lines are matched against the signatures (:mod:`.sig_table`, plus the user's).  A
  prefilter (:mod:`.sig_prefilter`) runs first, so the step lines that make up almost all of a
  training log cost one regex search; a signature without any usable keyword runs on every line.
* Python tracebacks are assembled (:mod:`.tb_assembler`): from ``Traceback (most recent call
  last):`` (or the ``Exception in thread NAME:`` header before it) through the frames to the
  exception line, plus the lines of a multi-line message, and across ``During handling of the
  above exception…`` / ``The above exception was the direct cause…`` into one chain.  The chain is
  reported with the most specific signature any of its exception lines matched (the generic
  ``python-traceback`` one otherwise, labelled with the final exception line).  Lines are routed
  by their prefix, so ``[rank0]:``/``[rank1]:`` tracebacks interleaved by torchrun are assembled
  separately; several threads printing at once with the same prefix go to the most recently
  opened traceback (their frames cannot be told apart), and lines where their writes were glued
  together mid-line are cut apart first.

A traceback is reported as soon as its exception line arrives; when later lines extend it (message
continuation, a chained exception) an updated :class:`Match` with the same ``chain_id`` and
``update=True`` follows.  ``first_error``/``final_error`` always hold the latest version.
Tracebacks printed after ``Exception ignored in`` are warnings, not errors.  So is a traceback that
a log record at DEBUG/INFO/WARNING carries: the record's level is the severity, not the word
"Traceback".  The level is the record's own field (:func:`~.tb_parts.record_level`): in the prefix
of every traceback line (PyTorch's glog-style ``W0501 … file.py:12]`` formatter), or on the line
right before the header (``logger.warning("…", exc_info=True)``) when the traceback did not unwind
the program (an uncaught exception after an INFO line reads the same, and stays an error).  An
ERROR/CRITICAL record stays an error.  torch._dynamo's ``WON'T CONVERT`` record (with
``suppress_errors``, it runs the function eagerly) and its tracebacks are one warning finding:
"running eagerly: compile failed for `f` (file:line)".  A thread's traceback
that never got its exception line (output cut, or its line was lost in another thread's) is still
an error at ``flush``: ``Exception in thread NAME:`` says that the thread died.

``ignore``: signature ids (a :class:`Signature`'s ``kind``; :func:`signature_ids` lists them) whose
matches are dropped: not returned by ``feed``, not in ``errors``, ``first_error``,
``final_error``, ``dead_threads()`` or ``error_count``.  A traceback decided by an ignored
signature is dropped whole (it does not fall back to the generic ``python-traceback``).

Lines are expected without their newline and already sanitised (see ``logs.sanitize``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence

from ..layers import Severity
from .sig_model import Match, Signature
from .sig_prefilter import build_prefilter
from .sig_table import BUILTIN, EAGER_FALLBACK, INCOMPLETE_TRACEBACK, TRACEBACK
from .tb_assembler import TracebackAssembler
from .tb_parts import HANDLED_LEVELS, Chain, record_level, unwound

__all__ = ["Classifier", "classify_lines", "signature_ids", "unknown_signature_ids"]

_CHAIN_KINDS = (TRACEBACK.kind, INCOMPLETE_TRACEBACK.kind)
#: an unprefixed traceback belongs to a ``WON'T CONVERT`` line this many lines before it (the
#: record's message, the first traceback and the one ``exc_info`` appends)
FALLBACK_WINDOW = 60


def signature_ids(user_sigs: Iterable[Signature] = ()) -> list[str]:
    """Every id ``Classifier(ignore=...)`` understands: built-in kinds, then the user's."""
    sigs = [*BUILTIN, TRACEBACK, INCOMPLETE_TRACEBACK, *user_sigs]
    return list(dict.fromkeys(s.kind for s in sigs))


def unknown_signature_ids(ids: Iterable[str], user_sigs: Iterable[Signature] = ()) -> list[str]:
    """The ids in ``ids`` that name no signature (typos to report), each once, in order."""
    known = set(signature_ids(user_sigs))
    return [i for i in dict.fromkeys(ids) if i not in known]


def _first_hit(sigs: Sequence[Signature], text: str) -> tuple[Signature, re.Match[str]] | None:
    """The first signature of ``sigs`` (sorted by priority) that matches ``text``."""
    for sig in sigs:
        kws = sig.keywords
        if kws:
            hay = text.lower() if sig.ignore_case else text
            if not any(k in hay for k in kws):
                continue
        m = sig.regex.search(text)
        if m is not None:
            return sig, m
    return None


class Classifier(TracebackAssembler):
    """Classify log lines incrementally; see the module docstring.

    ``signatures``: the table (default :data:`BUILTIN`); ``user``: signatures from config, added
    to it; ``ignore``: signature ids whose matches are dropped.  ``max_matches`` bounds the kept
    history (``matches``); the first error is kept regardless.
    """

    def __init__(
        self,
        signatures: Iterable[Signature] | None = None,
        *,
        user: Iterable[Signature] = (),
        ignore: Iterable[str] = frozenset(),
        max_matches: int = 1000,
        max_traceback_lines: int = 500,
        max_strays: int = 200,
    ):
        sigs = list(BUILTIN if signatures is None else signatures) + list(user)
        self.signatures: tuple[Signature, ...] = tuple(sorted(sigs, key=lambda s: -s.priority))
        self.ignore: frozenset[str] = frozenset(ignore)
        self.max_matches = max(1, max_matches)
        super().__init__(max_traceback_lines=max_traceback_lines, max_strays=max_strays)
        self._chain_sigs = tuple(s for s in self.signatures if s.kind not in _CHAIN_KINDS)
        self._always = tuple(s for s in self.signatures if not s.keywords)
        self._prefilter = build_prefilter(self.signatures)
        self._reset_results()

    def _reset_results(self) -> None:
        self.line_no = 0
        self.matches: deque[Match] = deque(maxlen=self.max_matches)
        self.counts: dict[str, int] = {}
        self._first_ref: Match | Chain | None = None
        self._final_ref: Match | Chain | None = None
        self._chains: dict[int, Chain] = {}
        self._threads: dict[str, Chain] = {}  # thread name -> the chain that killed it
        self._error_count = 0
        self._fast = not self._always  # prefilter only: no open structure, no keyword-less signature
        self._prev_line = ""  # the line before the current one (a log record introducing a traceback)
        self._before = ""
        self._fallback: tuple[str, int, str] | None = None  # (line, line_no, label) of the last WON'T CONVERT

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
    def error_count(self) -> int:
        """Distinct errors seen: one per error line, one per traceback chain however often updated."""
        return self._error_count

    @property
    def errors(self) -> list[Match]:
        """Error matches still in the bounded history, one per chain (current version)."""
        latest: dict[int | tuple[str, int], Match] = {}
        for m in self.matches:
            if m.is_error:
                key = m.chain_id if m.chain_id is not None else ("line", m.line_no)
                chain = self._chains.get(m.chain_id) if m.chain_id is not None else None
                if chain is None:
                    latest[key] = m
                elif chain.counted:
                    latest[key] = self._chain_now(chain)
        return [m for m in latest.values() if m.is_error]

    def dead_threads(self) -> list[Match]:
        """One error per thread that died (``Exception in thread NAME:``), in order of first death."""
        return [self._chain_now(ch) for ch in self._threads.values() if ch.counted]

    def feed(self, line: str) -> list[Match]:
        """Classify one line (without its newline); returns the matches it completed."""
        self.line_no += 1
        prev, self._prev_line = self._prev_line, line
        if self._fast and not self._prefilter(line):
            return []
        self._before = prev
        out = self._slow(line)
        self._update_busy()
        self._fast = not self._busy and not self._always
        return out

    def feed_many(self, lines: Iterable[str]) -> list[Match]:
        """Classify a batch (what ``feed`` does line by line): the shapes of the whole batch are
        taken at once (:meth:`~.sig_prefilter.Prefilter.shapes`), a line whose shape is known
        clean is only counted, and a batch of such lines costs one pass in C."""
        batch = lines if isinstance(lines, list) else list(lines)
        out: list[Match] = []
        shapes = self._prefilter.shapes(batch) if batch and self._fast else None
        if shapes is None:
            for line in batch:
                r = self.feed(line)
                if r:
                    out.extend(r)
            return out
        clean = self._prefilter.clean
        if clean.issuperset(shapes):
            self.line_no += len(batch)
            self._prev_line = batch[-1]
            return out
        skipped = 0  # lines just before ``i`` that were only counted
        for i, shape in enumerate(shapes):
            if self._fast and shape in clean:
                skipped += 1
                continue
            if skipped:
                self.line_no += skipped
                self._prev_line = batch[i - 1]
                skipped = 0
            r = self.feed(batch[i])
            if r:
                out.extend(r)
        if skipped:
            self.line_no += skipped
            self._prev_line = batch[-1]
        return out

    def flush(self) -> list[Match]:
        """End of input (or the process is gone): report tracebacks that never finished."""
        out: list[Match] = []
        self._flush_assembly(out)
        self._fast = not self._always
        return out

    def reset(self) -> None:
        """Forget everything seen; keep the signatures and settings."""
        self._reset_assembly()
        self._reset_results()

    # -- what lines and chains mean -----------------------------------------------------------

    def _classify_line(self, line: str, out: list[Match]) -> None:
        hit = _first_hit(self.signatures, line)  # sorted by priority: the first hit wins
        if hit is None:
            return
        sig, m = hit
        if sig.kind in self.ignore:
            return
        match = Match(signature=sig, line_no=self.line_no, line=line, label=sig.render_label(m),
                      severity=sig.severity, chain_id=self._new_id())
        if sig is EAGER_FALLBACK:
            self._fallback = (line[: m.start()], self.line_no, match.label)
        self._record(match, out)

    def _opened(self, chain: Chain) -> None:
        prefix = chain.prefix
        chain.level = record_level(prefix) if prefix.strip() else None
        before = self._before
        if chain.thread is None and before.startswith(prefix) and "Traceback (most recent call last)" not in before:
            chain.before = record_level(before[len(prefix):])
        fb = self._fallback
        if fb is not None and (fb[0] == prefix if prefix.strip() else self.line_no - fb[1] <= FALLBACK_WINDOW):
            chain.fallback = fb[2]

    def _best_sig(self, text: str) -> tuple[Signature, re.Match[str]] | None:
        return _first_hit(self._chain_sigs, text)

    def _emit_chain(self, chain: Chain, out: list[Match], incomplete: bool = False) -> None:
        m = self._chain_match(chain, incomplete)
        chain.last_match = m
        chain.match_version = chain.version
        if m.kind in self.ignore:
            if chain.counted:
                self._withdraw(chain)
            return
        chain.emitted = True
        self._record(m, out, chain)

    def _chain_now(self, chain: Chain) -> Match:
        """The chain's current version (lines may have been added since it was reported)."""
        if chain.match_version != chain.version or chain.last_match is None:
            chain.last_match = self._chain_match(chain)
            chain.match_version = chain.version
        return chain.last_match

    def _resolve(self, ref: Match | Chain | None) -> Match | None:
        return ref if ref is None or isinstance(ref, Match) else self._chain_now(ref)

    def _chain_match(self, chain: Chain, incomplete: bool = False) -> Match:
        if incomplete and not chain.exceptions:
            sig: Signature = INCOMPLETE_TRACEBACK
            label = sig.label
            # a thread's header says it died, even when its exception line never came
            severity = Severity.ERROR if chain.thread is not None and not chain.ignored else Severity.WARNING
            line = chain.lines[-1] if chain.lines else ""
            line_no = self.line_no
        else:
            sig = chain.sig or TRACEBACK
            if chain.sig is None:
                label = chain.exceptions[-1] if chain.exceptions else TRACEBACK.label
                # a long message keeps its end too: where a child's signal or the failing value is said
                label = label if len(label) <= 200 else label[:140] + " … " + label[-57:]
            else:
                label = sig.render_label(chain.sig_m)
            severity = Severity.WARNING if chain.ignored and sig.severity is Severity.ERROR else sig.severity
            if chain.fallback is not None and (chain.prefix.strip() or not unwound(chain.lines, chain.prefix)):
                # dynamo's eager fallback: one finding with its line's label (an unprefixed traceback
                # that unwound the program is a crash after it, not dynamo's)
                sig, label, severity = EAGER_FALLBACK, chain.fallback, Severity.WARNING
            elif severity is Severity.ERROR and _handled(chain):
                severity = Severity.WARNING
            line = chain.deciding
            line_no = chain.deciding_no
        tb = list(chain.lines)
        if chain.cut:
            tb.insert(self.HEAD_KEEP, f"… [{chain.cut} traceback lines cut]")
        return Match(
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

    # -- bookkeeping --------------------------------------------------------------------------

    def _record(self, m: Match, out: list[Match], chain: Chain | None = None) -> None:
        out.append(m)
        self.matches.append(m)
        if not m.update:
            self.counts[m.kind] = self.counts.get(m.kind, 0) + 1
        if chain is not None:
            self._keep_chain(chain)
            if not m.is_error:
                if chain.counted:  # an error chain turned into a warning (a chained part decided)
                    self._withdraw(chain)
                return
            if not chain.counted:
                chain.counted = True
                self._error_count += 1
            if chain.thread is not None:
                self._note_thread(chain.thread, chain)
        elif m.is_error:
            self._error_count += 1
        if m.is_error:
            ref: Match | Chain = chain if chain is not None else m
            if self._first_ref is None:
                self._first_ref = ref
            self._final_ref = ref

    def _keep_chain(self, chain: Chain) -> None:
        self._chains[chain.id] = chain
        if len(self._chains) > self.max_matches:  # forget the oldest chain that no ref holds
            for cid, old in self._chains.items():
                if old is not self._first_ref and old is not self._final_ref:
                    del self._chains[cid]
                    break

    def _note_thread(self, name: str, chain: Chain) -> None:
        cur = self._threads.get(name)
        if cur is None:
            if len(self._threads) < self.max_matches:
                self._threads[name] = chain
        elif cur is not chain and not cur.counted:
            self._threads[name] = chain

    def _withdraw(self, chain: Chain) -> None:
        """A reported error chain no longer counts (now ignored, or now a warning)."""
        chain.counted = False
        self._error_count -= 1
        if self._first_ref is chain:
            self._first_ref = self._live_ref(newest=False)
        if self._final_ref is chain:
            self._final_ref = self._live_ref(newest=True)
        if self._first_ref is None:
            self._first_ref = self._final_ref
        elif self._final_ref is None:
            self._final_ref = self._first_ref

    def _live_ref(self, newest: bool) -> Match | Chain | None:
        """The first (or last) error in the history that still counts."""
        for m in reversed(self.matches) if newest else self.matches:
            chain = self._chains.get(m.chain_id) if m.chain_id is not None else None
            if chain is not None:
                if chain.counted:
                    return chain
            elif m.is_error:
                return m
        return None


def _handled(chain: Chain) -> bool:
    """The traceback is carried by a log record below ERROR: the program caught it and said so."""
    if chain.level is not None:
        return chain.level in HANDLED_LEVELS
    return chain.before in HANDLED_LEVELS and not unwound(chain.lines, chain.prefix)


def classify_lines(lines: Sequence[str], signatures: Iterable[Signature] | None = None) -> Classifier:
    """Convenience: a classifier fed with ``lines`` and flushed."""
    c = Classifier(signatures)
    c.feed_many(lines)
    c.flush()
    return c
