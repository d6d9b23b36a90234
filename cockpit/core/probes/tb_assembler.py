"""Traceback assembly: the classifier's slow path, line by line.

:class:`TracebackAssembler` routes each line that may belong to a traceback: a header opens a
:class:`~.tb_parts.Block` (after an ``Exception in thread NAME:`` or ``Exception ignored in``
hint), frames go to the open block with the longest matching prefix (the newest one among
equals), an exception line closes it into a :class:`~.tb_parts.Chain`, message lines and
``During handling of the above exception…`` markers extend the chain.  Lines where several
threads' writes were glued together are cut into their pieces: around a header
(:func:`~.tb_parts.split_glued`), and before an exception line that a signature recognises behind
another writer's text (:func:`~.tb_parts.glued_exception_at`).  Everything else is classified on
its own.

What a chain *means* (its signature, whether it counts, what is recorded) is the subclass's
business: :class:`~.classifier.Classifier` implements :meth:`_emit_chain`, :meth:`_classify_line`
and :meth:`_best_sig`.
"""

from __future__ import annotations

import re
from collections import deque

from .sig_model import Match, Signature
from .tb_parts import (
    BOX_BODY,
    BOX_HEADER,
    CHAIN_MARKER,
    IGNORED_HEADER,
    LATE_THREAD_NAME,
    LOGLIKE,
    NAME_BEFORE_FRAME,
    TB_HEADER,
    THREAD_HEADER,
    After,
    Block,
    Chain,
    glued_exception_at,
    looks_like_exception,
    split_glued,
)

__all__ = ["TracebackAssembler"]

#: An ``Exception in thread NAME:`` header names the traceback that opens within this many lines
#: (Python prints the two back to back, but other threads' writes may come between them).
THREAD_HEADER_WINDOW = 64
#: An ``Exception ignored in`` hint holds for the traceback header within this many lines.
IGNORED_HEADER_WINDOW = 3
#: Message lines after an exception line that still belong to it.
MAX_MESSAGE_LINES = 10


class TracebackAssembler:
    """The state machine of traceback assembly; see the module docstring."""

    HEAD_KEEP = 40  # a traceback cut to ``max_traceback_lines`` keeps its first lines

    line_no: int

    def __init__(self, *, max_traceback_lines: int, max_strays: int) -> None:
        self.max_traceback_lines = max(self.HEAD_KEEP + 10, max_traceback_lines)
        self.max_strays = max_strays
        self._reset_assembly()

    def _reset_assembly(self) -> None:
        self._blocks: list[Block] = []
        self._after: dict[str, After] = {}
        self._pending_thread: dict[str, deque[tuple[str, int, str]]] = {}
        self._pending_ignored: dict[str, int] = {}
        #: thread headers whose name went to a later line, by prefix: when each was seen
        self._unnamed: dict[str, int] = {}
        self._next_id = 1
        self._busy = False  # any open structure: every line takes the slow path

    # -- what the subclass decides ----------------------------------------------------------

    def _emit_chain(self, chain: Chain, out: list[Match], incomplete: bool = False) -> None:
        raise NotImplementedError

    def _classify_line(self, line: str, out: list[Match]) -> None:
        raise NotImplementedError

    def _best_sig(self, text: str) -> tuple[Signature, re.Match[str]] | None:
        raise NotImplementedError

    def _opened(self, chain: Chain) -> None:
        """A new chain was opened (the subclass notes what came before its header)."""

    # -- assembly ---------------------------------------------------------------------------

    def _update_busy(self) -> None:
        self._busy = bool(self._blocks or self._after or self._pending_thread or self._pending_ignored or self._unnamed)

    def _new_id(self) -> int:
        i = self._next_id
        self._next_id += 1
        return i

    def _flush_assembly(self, out: list[Match]) -> None:
        for blk in list(reversed(self._blocks)):
            self._abandon(blk, out)
        self._blocks.clear()
        self._after.clear()
        self._pending_thread.clear()
        self._pending_ignored.clear()
        self._unnamed.clear()
        self._update_busy()

    def _slow(self, line: str) -> list[Match]:
        out: list[Match] = []
        if line.endswith(("\n", "\r")):
            line = line.rstrip("\r\n")
        self._expire_hints(self.line_no)
        if "Traceback (most recent call last):" in line or "Exception in thread " in line:
            for part in split_glued(line):
                self._route(part, out)
        elif self._unnamed and (g := NAME_BEFORE_FRAME.match(line)) is not None and self._late_name(g.group("name") + ":"):
            self._route(line[g.end():], out)  # the name went to its header; the frame line is the other thread's
        else:
            self._route(line, out)
        return out

    def _expire_hints(self, no: int) -> None:
        for prefix, queue in list(self._pending_thread.items()):
            while queue and no - queue[0][1] > THREAD_HEADER_WINDOW:
                queue.popleft()
            if not queue:
                del self._pending_thread[prefix]
        for prefix, at in list(self._pending_ignored.items()):
            if no - at > IGNORED_HEADER_WINDOW:
                del self._pending_ignored[prefix]
        for prefix, at in list(self._unnamed.items()):
            if no - at > THREAD_HEADER_WINDOW:
                del self._unnamed[prefix]

    def _route(self, line: str, out: list[Match]) -> None:
        if self._header(line):
            return
        blk = self._block_for(line) if self._blocks else None
        if blk is not None:
            if blk.boxed:  # rich pads its lines to the console's width
                line = line.rstrip()
            body = line[len(blk.prefix) :]
            frame = not body or body[0] in (BOX_BODY if blk.boxed else " \t")
            if not frame and looks_like_exception(body):
                self._close(blk, line, body, out)
                return
            cut = self._glued_exception(body, frame)
            if cut > 0:  # another writer's text, then this traceback's exception line
                head, body = line[: len(blk.prefix) + cut], body[cut:]
                if frame:
                    self._append(blk.chain, head)
                else:
                    self._classify_line(head, out)
                self._close(blk, blk.prefix + body, body, out)
                return
            if frame:
                blk.frames += 1
                self._append(blk.chain, line)
                return
            blk.strays += 1
            if blk.strays > self.max_strays:
                self._blocks.remove(blk)
                self._abandon(blk, out)
            # a stray line: classify it on its own below
        elif self._after and self._continue_after(line, out):
            return
        self._classify_line(line, out)

    def _header(self, line: str) -> bool:
        """Handle a traceback header, a header hint or a chain marker; False for other lines."""
        if "Traceback (most recent call last)" in line:
            m = TB_HEADER.match(line)
            box = BOX_HEADER.match(line) if m is None else None
            if m or box:
                self._open((m or box).group("prefix"), line, boxed=box is not None)  # type: ignore[union-attr]
                return True
        if "Exception in thread" in line:
            m = THREAD_HEADER.match(line)
            if m:
                key = m.group("prefix").strip()
                hint = (m.group("name"), self.line_no, line)
                self._pending_thread.setdefault(key, deque()).append(hint)
                if not m.group("name"):
                    self._unnamed[key] = self.line_no
                return True
        if self._unnamed and line.endswith(":") and self._late_name(line):
            return True
        if "Exception ignored" in line:
            m = IGNORED_HEADER.match(line)
            if m:
                self._pending_ignored[m.group("prefix").strip()] = self.line_no
                return True
        if "above exception" in line:
            m = CHAIN_MARKER.match(line)
            if m and m.group("prefix") in self._after:
                aft = self._after[m.group("prefix")]
                aft.expect = True
                aft.mode = "gap"
                aft.idle = 0
                self._append(aft.chain, line)
                return True
        return False

    def _continue_after(self, line: str, out: list[Match]) -> bool:
        """A message line or a blank gap after an exception line; False when the line is not."""
        hit = self._after_for(line)
        if hit is None:
            return False
        prefix, aft = hit
        body = line[len(prefix) :]
        if aft.mode == "message":
            if not body.strip():
                aft.mode = "gap"
                aft.idle = 0
                return True
            if aft.count < MAX_MESSAGE_LINES and not LOGLIKE.match(body) and not aft.expect:
                aft.count += 1
                self._append(aft.chain, line)
                if self._consider(aft.chain, body, line):
                    self._emit_chain(aft.chain, out)
                return True
        elif not body.strip() and aft.idle < 3:  # gap: blank lines before a chain marker / next header
            aft.idle += 1
            return True
        del self._after[prefix]
        return False

    def _glued_exception(self, body: str, frame: bool) -> int:
        """Where a glued exception line that a signature knows starts in ``body``, or -1."""
        cut = glued_exception_at(body, frame) if ":" in body else -1
        return cut if cut > 0 and self._best_sig(body[cut:]) is not None else -1

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

    def _late_name(self, line: str) -> bool:
        """Give a thread header whose name went to a later line (``loader-9:`` alone) that name.

        Two threads dying at once can print ``Exception in thread Exception in thread loader-7:``,
        the second name and colon a few lines on, inside the first thread's traceback.  The name
        goes to the header still waiting for its traceback, else to the traceback it opened.
        """
        m = LATE_THREAD_NAME.match(line)
        key = m.group("prefix").strip() if m else None
        if m is None or key not in self._unnamed or looks_like_exception(m.group("name")):
            return False
        name = m.group("name")
        del self._unnamed[key]
        queue = self._pending_thread.get(key, deque())
        for i, (old, no, tline) in enumerate(queue):
            if not old:
                queue[i] = (name, no, tline)
                return True
        for blk in reversed(self._blocks):
            if blk.prefix.strip() == key and blk.chain.thread == "":
                blk.chain.thread = name
                return True
        return True  # its traceback was already reported: the line is still that header's

    def _open(self, prefix: str, line: str, boxed: bool = False) -> None:
        chain: Chain | None = None
        aft = self._after.pop(prefix, None)
        if aft is not None and aft.expect:
            chain = aft.chain
            self._append(chain, line)
        if chain is None:
            thread = None
            start = self.line_no
            head: list[str] = []
            key = prefix.strip()  # hints pair up with a header despite another writer's stray blank
            queue = self._pending_thread.get(key)
            if queue:  # first come, first served: threads' headers and tracebacks pair up in order
                thread, start, tline = queue.popleft()
                head.append(tline)
                if not queue:
                    del self._pending_thread[key]
            ignored = self._pending_ignored.pop(key, None) is not None
            chain = Chain(self._new_id(), prefix, start, thread, ignored)
            for h in head:
                self._append(chain, h)
            self._append(chain, line)
            self._opened(chain)
        self._blocks.append(Block(prefix, chain, boxed))

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
