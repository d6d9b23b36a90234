"""The incremental log classifier: line signatures, traceback assembly, first and final error.

:class:`Classifier` consumes a log line by line (``feed``, fine for a live log):

* plain lines are matched against the signatures (:mod:`.sig_table`, plus the user's).  A
  prefilter (:mod:`.sig_prefilter`) runs first, so the step lines that make up almost all of a
  training log cost one regex search; a signature without any usable keyword runs on every line.
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

import re
from collections import deque
from typing import Iterable, Sequence

from ..layers import Severity
from .sig_model import Match, Signature
from .sig_prefilter import build_prefilter
from .sig_table import BUILTIN, INCOMPLETE_TRACEBACK, TRACEBACK
from .tb_parts import (
    CHAIN_MARKER,
    IGNORED_HEADER,
    LOGLIKE,
    TB_HEADER,
    THREAD_HEADER,
    After,
    Block,
    Chain,
    looks_like_exception,
)

__all__ = ["Classifier", "classify_lines"]


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
        self._prefilter = build_prefilter(self.signatures)
        self.line_no = 0
        self.matches: deque[Match] = deque(maxlen=max(1, max_matches))
        self.counts: dict[str, int] = {}
        self._blocks: list[Block] = []
        self._after: dict[str, After] = {}
        self._pending_thread: dict[str, tuple[str, int, str]] = {}
        self._pending_ignored: dict[str, int] = {}
        self._next_id = 1
        self._first_ref: Match | Chain | None = None
        self._final_ref: Match | Chain | None = None
        self._chains: dict[int, Chain] = {}
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
        latest: dict[int | tuple[str, int], Match] = {}
        for m in self.matches:
            if m.is_error:
                key = m.chain_id if m.chain_id is not None else ("line", m.line_no)
                chain = self._chains.get(m.chain_id) if m.chain_id is not None else None
                cur = self._resolve(chain) if chain is not None else m
                if cur is not None:
                    latest[key] = cur
        return [m for m in latest.values() if m.is_error]

    def _resolve(self, ref: "Match | Chain | None") -> Match | None:
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

    def _record(self, m: Match, out: list[Match], chain: "Chain | None" = None) -> None:
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
            ref: Match | Chain = chain if chain is not None else m
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

    def _append(self, chain: Chain, line: str) -> None:
        chain.version += 1
        chain.lines.append(line)
        if len(chain.lines) > self.max_traceback_lines:
            del chain.lines[self.HEAD_KEEP]
            chain.cut += 1

    def _block_for(self, line: str) -> Block | None:
        best: Block | None = None
        for blk in reversed(self._blocks):  # newest first
            if line.startswith(blk.prefix) and (best is None or len(blk.prefix) > len(best.prefix)):
                best = blk
        return best

    def _after_for(self, line: str) -> tuple[str, After] | None:
        best: tuple[str, After] | None = None
        for prefix, aft in self._after.items():
            if line.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
                best = (prefix, aft)
        return best

    def _emit_chain(self, chain: Chain, out: list[Match], incomplete: bool = False) -> None:
        m = self._chain_match(chain, incomplete)
        chain.emitted = True
        chain.last_match = m
        chain.match_version = chain.version
        self._record(m, out, chain)

    def _chain_match(self, chain: Chain, incomplete: bool = False) -> Match:
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

    def _consider(self, chain: Chain, text: str, line: str) -> bool:
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

    def _abandon(self, blk: Block, out: list[Match]) -> None:
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
            m = TB_HEADER.match(line)
            if m:
                self._open(m.group("prefix"), line, out)
                self._update_busy()
                return out
        if "Exception in thread" in line:
            m = THREAD_HEADER.match(line)
            if m:
                self._pending_thread[m.group("prefix")] = (m.group("name"), no, line)
                self._update_busy()
                return out
        if "Exception ignored" in line:
            m = IGNORED_HEADER.match(line)
            if m:
                self._pending_ignored[m.group("prefix")] = no
                self._update_busy()
                return out
        if "above exception" in line:
            m = CHAIN_MARKER.match(line)
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
            if looks_like_exception(body):
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
                    if aft.count < 10 and not LOGLIKE.match(body) and not aft.expect:
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
        chain: Chain | None = None
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
            chain = Chain(self._new_id(), prefix, start, thread, ignored)
            for h in head:
                self._append(chain, h)
            self._append(chain, line)
        self._blocks.append(Block(prefix, chain))

    def _close(self, blk: Block, line: str, body: str, out: list[Match]) -> None:
        self._blocks.remove(blk)
        chain = blk.chain
        self._append(chain, line)
        chain.exceptions.append(body)
        self._consider(chain, body, line)
        if chain.sig is None:
            chain.deciding, chain.deciding_no = line, self.line_no
        self._emit_chain(chain, out)
        self._after[blk.prefix] = After(chain)


def classify_lines(lines: Sequence[str], signatures: Iterable[Signature] | None = None) -> Classifier:
    """Convenience: a classifier fed with ``lines`` and flushed."""
    c = Classifier(signatures)
    c.feed_many(lines)
    c.flush()
    return c
