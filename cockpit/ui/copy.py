"""``y``: copy the focused thing to the local clipboard, over SSH and tmux; ``m``: mouse capture.

What is copied (:func:`copy_focused`):

* a text selected with the mouse inside cockpit (Textual's own selection), when there is one;
* log pane: the selected line (``n``/``N``, ``e``/``E`` or a click selects one), or the whole
  traceback it belongs to, as the core's classifier assembled it (only that thread's lines, however
  the threads interleaved: :mod:`cockpit.core.probes.tb_assembler`);
* attempts pane: the selected attempt as Markdown (:func:`cockpit.core.journal.export.render_markdown`);
* verdict screen: the verdict with the failing stage's evidence (:func:`verdict_copy`);
* processes pane: the findings about the selected process, else the process itself;
* GPU pane: its findings.

The text goes to :meth:`textual.app.App.copy_to_clipboard`, which writes an OSC 52 escape: the
*local* terminal puts it in the clipboard, however many SSH hops away cockpit runs.  Inside tmux
the escape reaches tmux, which keeps it only with ``set -s set-clipboard on`` (its default,
``external``, ignores applications) and passes it to the outer terminal when it knows that
terminal takes it (the terminfo ``Ms`` capability, or ``set -as terminal-features ',TERM:clipboard'``).
Textual writes a plain OSC 52 (no tmux passthrough wrapping), which is what ``set-clipboard on``
accepts; ``tests/test_ui_copy.py`` reads it back from tmux's paste buffer.  Before it leaves, the text is sanitized (no escape or control characters: a log line
cannot smuggle a terminal sequence into the clipboard) and passes :func:`redact_copied`, the one
hook for share mode.  A toast says what was copied and how long it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from textual.widgets.data_table import CellDoesNotExist

from ..core.probes.logs import sanitize

if TYPE_CHECKING:
    from textual.app import App

    from ..core.journal import AttemptRecord
    from ..core.layers import Finding, Stage, Verdict
    from ..core.probes.signatures import Match
    from .panes.base import Pane
    from .panes.gpu import GpuPane
    from .panes.log import ChainKey, LogPane
    from .panes.procs import ProcsPane

__all__ = ["Copied", "sanitize_copy", "redact_copied", "describe", "log_copy", "attempt_copy", "verdict_copy", "procs_copy",
           "gpu_copy", "deliver", "copy_focused", "set_mouse_capture"]

#: more than this is not sent (terminals drop long OSC 52 strings; a selection of a whole ring is not what was meant)
MAX_BYTES = 512 * 1024


#: the app's return type (the cockpit app's, or Textual's App as a modal screen knows it)
_R = TypeVar("_R")


@dataclass(frozen=True)
class Copied:
    """What ``y`` copies: ``what`` names it in the toast (``traceback``, ``attempt #3 as Markdown``)."""

    what: str
    text: str


def sanitize_copy(text: str) -> str:
    """No escape sequences or control characters (tabs and newlines stay), line by line."""
    return "\n".join(sanitize(line) for line in text.replace("\r\n", "\n").split("\n"))


def redact_copied(app: App[_R], text: str) -> str | None:
    """``text`` as it may leave through the clipboard: in share mode (``cockpit --share``) redacted
    with the app's redactor (:func:`.shown.sharing`); None (nothing copied) when the app shares but
    has no redactor, rather than risk a secret leaving through the clipboard."""
    if not getattr(app, "share", False):  # the cockpit app's share mode; a modal screen knows its app as Textual's App
        return text
    from .shown import sharing

    red = sharing()
    return red.text(text) if red is not None else None


def _size(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"


def describe(c: Copied, text: str | None = None) -> str:
    """``copied traceback, 14 lines, 1.2 kB``."""
    body = c.text if text is None else text
    n = body.count("\n") + 1 if body else 0
    return f"copied {c.what}, {n} line{'s' if n != 1 else ''}, {_size(len(body.encode('utf-8')))}"


# -- what each place copies ----------------------------------------------------------------------

def _traceback_for(chains: dict[ChainKey, Match], line_no: int, text: str | None) -> Match | None:
    """The classifier's traceback that line ``line_no`` (showing ``text``) belongs to, or None.

    A traceback spans its header to its exception line and message; other threads' lines may sit
    in between, so among the tracebacks around the line the one whose lines hold its text wins
    (the innermost, when several do); a line none of them holds is not part of a traceback.
    """
    around = []
    for m in chains.values():
        tb = list(m.traceback)
        start = m.traceback_start or m.line_no
        last = max((i for i, t in enumerate(tb) if t == m.line), default=len(tb) - 1)
        if start <= line_no <= m.line_no + (len(tb) - 1 - last):
            around.append((start, m))
    if text is not None:
        want = text.rstrip()
        around = [(s, m) for s, m in around if any(t.rstrip() == want for t in m.traceback)]
    return max(around, key=lambda c: c[0])[1] if around else None


def log_copy(pane: LogPane) -> Copied | None:
    """The log pane's selected line, or the whole traceback it belongs to."""
    log = pane.log_view
    no = log.current
    if no is None:
        return None
    text = log.text_of(no)
    m = _traceback_for(pane.chains, no, text)
    if m is not None:
        thread = f" (thread {m.thread})" if m.thread else ""
        return Copied(f"traceback{thread}", "\n".join(m.traceback))
    if text is None:
        return None
    return Copied(f"log line {no}", text)


def attempt_copy(rec: AttemptRecord) -> Copied:
    from ..core.journal.export import render_markdown

    return Copied(f"attempt #{rec.attempt} as Markdown", render_markdown([rec], title=f"cockpit attempt #{rec.attempt}"))


def _fence(lines: list[str]) -> str:
    body = "\n".join(lines)
    ticks = 3
    while "`" * ticks in body:
        ticks += 1
    return f"{'`' * ticks}text\n{body}\n{'`' * ticks}"


def _evidence(stages: list[tuple[str, Stage]]) -> list[str]:
    failing = next((s for _, s in stages if s.status.value == "fail"), None)
    ev = failing.evidence if failing is not None else None
    if failing is None or ev is None:
        return []
    lines = ([f"$ {ev.command}"] if ev.command else []) + ([f"exit code {ev.exit_code}"] if ev.exit_code is not None else [])
    lines += ev.output.rstrip().splitlines()[-200:] if ev.output else []
    if not lines:
        return []
    return ["", f"**Evidence** of the failing stage ({failing.name}):", "", _fence(lines)]


def verdict_copy(rec: AttemptRecord | None, v: Verdict | None, stages: list[tuple[str, Stage]]) -> Copied:
    """The verdict screen's verdict (an attempt's record as Markdown, else an action's verdict as its
    stages) with the failing stage's evidence (``stages``: the screen's, each with its shown name)."""
    if rec is not None:
        c = attempt_copy(rec)
        return Copied(f"verdict of attempt #{rec.attempt}", "\n".join([c.text.rstrip("\n"), *_evidence(stages)]))
    from ..core.render import render_verdict

    if v is None:
        return Copied("verdict", "")
    text = [f"# cockpit verdict: {v.action}", "", _fence(render_verdict(v.to_dict()).splitlines()), *_evidence(stages)]
    return Copied(f"verdict of {v.action}", "\n".join(text))


def _finding_line(f: Finding) -> str:
    return f"{f.severity.value} [{f.layer.value}] {f.summary}" + (f" → {f.advice}" if f.advice else "")


_PID_KEYS = ("pid", "ppid", "pids", "parent_pid", "job_pids")


def _mentions(f: Finding, pid: int) -> bool:
    """A finding about ``pid``: the process itself, or the parent that does not reap it."""
    subj = f.subject
    for k in _PID_KEYS:
        v = subj.get(k)
        if v == pid or (isinstance(v, (list, tuple, set)) and pid in v):
            return True
    return False


def procs_copy(pane: ProcsPane) -> Copied | None:
    """The findings about the selected process, else the process itself (pid, state, command)."""
    v = pane.view
    if v is None:
        return None
    table = pane.table
    key: str | None = None
    if table.row_count:
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except CellDoesNotExist:  # no row under the cursor: no selection
            key = None
    last = key.rpartition(":")[2] if key is not None else ""  # "node:pid" on a Slurm job's nodes
    pid = int(last) if last.isdigit() else None
    if pid is not None:
        found = [f for f in v.findings if _mentions(f, pid)]
        if found:
            return Copied(f"finding{'s' if len(found) != 1 else ''} about pid {pid}", "\n".join(_finding_line(f) for f in found))
        p = next((p for p in v.procs if p.pid == pid), None)
        if p is not None:
            return Copied(f"process {pid}", f"pid {p.pid} ppid {p.ppid} pgid {p.pgid} state {p.state}: {p.args or p.name}")
    if v.findings:
        return Copied("process findings", "\n".join(_finding_line(f) for f in v.findings))
    return None


def gpu_copy(pane: GpuPane) -> Copied | None:
    snap = pane.view.snapshot if pane.view is not None else None
    findings = list(snap.findings) if snap is not None else []
    if not findings:
        return None
    return Copied("GPU findings", "\n".join(_finding_line(f) for f in findings))


# -- delivering ---------------------------------------------------------------------------------

def deliver(app: App[_R], c: Copied | None, *, nothing: str = "nothing to copy here") -> str | None:
    """Sanitize, redact (share mode), send with OSC 52, toast.  The text sent, or None."""
    if c is None or not c.text.strip():
        app.notify(nothing, severity="warning", timeout=4, markup=False)
        return None
    text = redact_copied(app, sanitize_copy(c.text))
    if text is None:
        app.notify("share mode: copying is off until copied text can be redacted", severity="warning", timeout=6, markup=False)
        return None
    if len(text.encode("utf-8")) > MAX_BYTES:
        app.notify(f"{c.what} is {_size(len(text.encode('utf-8')))}: more than a terminal clipboard takes ({_size(MAX_BYTES)}); "
                   "not copied", severity="warning", timeout=6, markup=False)
        return None
    app.copy_to_clipboard(text)
    app.notify(describe(c, text), timeout=4, markup=False)
    return text


class MouseApp(Protocol):
    """What :func:`set_mouse_capture` needs of the app (the cockpit app; no import of it here: the
    app's key handlers import this module)."""

    mouse_reporting: bool

    @property
    def _driver(self) -> object: ...


def copy_focused(app: App[_R], pane: Pane) -> str | None:
    """``y`` in the main screen: the text selected with the mouse, else what the focused pane selects."""
    from .panes.gpu import GpuPane
    from .panes.history import HistoryPane
    from .panes.log import LogPane
    from .panes.procs import ProcsPane

    selected = app.screen.get_selected_text()
    if selected:
        return deliver(app, Copied("selection", selected))
    if isinstance(pane, LogPane):
        return deliver(app, log_copy(pane), nothing="no log line selected: n / N, e / E or a click selects one")
    if isinstance(pane, HistoryPane):
        sel = pane.selected()
        rec = pane.record(sel) if sel is not None else (pane.records[-1] if pane.records else None)
        return deliver(app, attempt_copy(rec) if rec is not None else None, nothing="no attempt yet")
    if isinstance(pane, ProcsPane):
        return deliver(app, procs_copy(pane), nothing="no process or finding to copy")
    if isinstance(pane, GpuPane):
        return deliver(app, gpu_copy(pane), nothing="no GPU finding to copy")
    return deliver(app, None)


def set_mouse_capture(app: MouseApp, on: bool) -> bool:
    """Turn the terminal's mouse reporting on or off (off: the terminal's own selection works).

    Textual has no public switch: the Linux driver's ``_enable_mouse_support`` /
    ``_disable_mouse_support`` write the xterm private modes (1000, 1003, 1015, 1006).  A driver
    without them (headless tests, the web) keeps its state; the app's ``mouse_reporting`` says what
    was asked.  Returns whether the driver was told.
    """
    app.mouse_reporting = on
    driver = app._driver  # Textual's own: its mouse switches are private (see above)
    fn = getattr(driver, "_enable_mouse_support" if on else "_disable_mouse_support", None)
    if not callable(fn):
        return False
    fn()
    return True
