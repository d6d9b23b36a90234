"""Journal export: :func:`render_markdown`, a post-mortem timeline of attempts, and its cell helpers.

Everything a record holds is text cockpit did not write (a remote error line, a stage's detail, a
path, the hypothesis), and the post-mortem is pasted where Markdown is rendered.  So every piece is
escaped for where it lands (:func:`_md` for running text, :func:`_code` for code spans, :func:`_fence`
for blocks): a remote ``[click](http://evil)`` or ``<img src=x onerror=…>`` renders as the text it
is, never as a link or HTML, and a ``__init__`` keeps its underscores.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

from ..fate_record import fate_text
from ..layers import Layer, Outcome, Status
from ..redact import Redactor
from ..render import outcome_label
from .records import AttemptRecord, _str, _value

LEGEND = (
    "Outcomes: **passed**: the code ran and reached its progress marker (or stayed healthy); "
    "**failed**: the code ran and failed (`app`, or `gpu` after the job started), which is evidence "
    "about the hypothesis; **untested**: something below the code failed (`config`, `ssh`, `host`, "
    "`container`, `process`), so the fix never ran and says nothing about the hypothesis; "
    "**interrupted**: cockpit stopped before a verdict; **pending**: the job waits in the scheduler's "
    "queue, not verified yet; **running**: no verdict yet."
)


def _bold_label(outcome: Outcome | str, layer: Layer | str | None) -> str:
    word, _, rest = outcome_label(outcome, layer).partition(" — ")
    return f"**{_md(word)}** — {_md(rest)}"


#: the redactor of the render under way: each piece is redacted before it is escaped (an escaped
#: secret, ``p\*ss``, would no longer match the final pass over the whole text)
_REDACT: ContextVar[Callable[[str], str] | None] = ContextVar("cockpit_md_redact", default=None)

#: backslash escapes and entities that make text inert: no emphasis, code span, link, image,
#: autolink, raw HTML, entity, strikethrough or table cell break can start from it.  ``(`` and
#: ``)`` stay as they are: with ``[`` and ``]`` escaped they can no longer make a link.
_INERT = str.maketrans({"\\": "\\\\", "`": "\\`", "*": "\\*", "[": "\\[", "]": "\\]", "~": "\\~", "|": "\\|",
                        "<": "&lt;", ">": "&gt;", "&": "&amp;"})
#: an underscore that could open or close emphasis (one inside a word never does, CommonMark 6.2)
_EDGE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")


def _one_line(text: Any, limit: int | None = None) -> str:
    red = _REDACT.get()
    s = red(_str(text)) if red is not None else _str(text)
    s = " ⏎ ".join(part.strip() for part in s.replace("\r\n", "\n").replace("\r", "\n").split("\n") if part.strip())
    if limit is not None and len(s) > limit:
        s = s[: limit - 1].rstrip() + "…"
    return s


def _md(text: Any, limit: int | None = None) -> str:
    """``text`` as inert Markdown on one line (shortened first, so an escape is never cut in half)."""
    s = _EDGE_UNDERSCORE.sub(r"\\_", _one_line(text, limit).translate(_INERT))
    return "\\" + s if s.startswith("#") else s


def _cell(text: Any, limit: int | None = None) -> str:
    """One Markdown table cell: a single line, escaped (pipes too), optionally shortened; — when empty."""
    return _md(text, limit) or "—"


def _code(text: Any, *, table: bool = False) -> str:
    """A code span that ``text`` cannot close: delimited by more backticks than its longest run,
    padded when it starts or ends with a backtick.  In a table a pipe is escaped (GFM splits cells
    before it sees code spans)."""
    s = _one_line(text)
    if not s:
        return "—"
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if s[0] in "` " or s[-1] in "` " else ""
    return f"{ticks}{pad}{s.replace('|', chr(92) + '|') if table else s}{pad}{ticks}"


def _fmt_ts(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def fate_line(fate: dict[str, Any]) -> str:
    """``died (app) after 4m12s: RuntimeError …`` (see :func:`cockpit.core.fate.fate_text`)."""
    return fate_text(fate)


def _fmt_duration(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 60:
        return f"{s:.1f}s" if s >= 0.05 or s == 0 else f"{s * 1000:.0f}ms"
    total = int(round(s))
    if total < 3600:
        return f"{total // 60}m {total % 60:02d}s"
    return f"{total // 3600}h {(total % 3600) // 60:02d}m"


def _fmt_bytes(n: Any) -> str | None:
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return None
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return None  # pragma: no cover


def _cache_size(c: Any) -> Any:
    if isinstance(c, dict):
        for k in ("bytes", "size", "size_bytes"):
            if k in c:
                return c[k]
    return None


def _cache_path(c: Any) -> str:
    if isinstance(c, dict):
        return _str(c.get("path") or c.get("name") or "?")
    return _str(c)


def _caches_cell(caches: list[Any] | None) -> str:
    if caches is None:
        return "no"
    if not caches:
        return "yes (nothing there)"
    sizes = [_cache_size(c) for c in caches]
    nums = [s for s in sizes if isinstance(s, (int, float)) and not isinstance(s, bool)]
    total = f", {_fmt_bytes(sum(nums))}" if nums else ""
    return f"{len(caches)} path{'s' if len(caches) != 1 else ''}{total}"


def _code_cell(cv: dict[str, Any] | None) -> str:
    if not cv:
        return "—"
    sha = _str(cv.get("git_commit") or "")
    short = sha[:7] if sha else (_str(cv.get("source")) or "no git")
    if cv.get("dirty"):
        short += "+dirty"
    return _code(short, table=True)


def _first_error_lines(fe: Mapping[str, Any] | None) -> list[str]:
    if not fe:
        return []
    for key in ("lines", "traceback", "text", "excerpt"):
        v = fe.get(key)
        if isinstance(v, list) and v:
            return [ln for x in v for ln in (_str(x).splitlines() or [""])]
        if isinstance(v, str) and v.strip():
            return v.splitlines()
    for key in ("line", "message", "summary"):
        v = fe.get(key)
        if isinstance(v, str) and v.strip():
            return v.splitlines()
    return []


def _first_error_line(fe: Mapping[str, Any] | None) -> str:
    """The one line a person reads first."""
    if not fe:
        return ""
    for key in ("summary", "line", "message"):
        v = fe.get(key)
        if isinstance(v, str) and v.strip():
            return next(ln.strip() for ln in v.splitlines() if ln.strip())
    lines = [ln.rstrip() for ln in _first_error_lines(fe) if ln.strip()]
    if not lines:
        label = fe.get("label")
        return _str(label) if label else ""
    if lines[0].startswith("Traceback"):
        # A Python traceback says what happened on the first unindented line after its last
        # frame ("RuntimeError: …"); the message may continue on further lines.
        last_frame = max((i for i, ln in enumerate(lines) if ln[:1] in (" ", "\t")), default=0)
        return lines[min(last_frame + 1, len(lines) - 1)].strip()
    return lines[0].strip()


def _fence(lines: list[str]) -> str:
    """A fenced block longer than any backtick run inside it, so the content cannot close it."""
    red = _REDACT.get()
    body = "\n".join(red(ln) if red is not None else ln for ln in lines)
    ticks = 3
    while "`" * ticks in body:
        ticks += 1
    fence = "`" * ticks
    return f"{fence}text\n{body}\n{fence}"


def render_markdown(attempts: Iterable[AttemptRecord], *, title: str = "cockpit attempt history",
                    redactor: Redactor | None = None) -> str:
    """A post-mortem timeline to paste into an incident report.

    A header with a legend, a summary table (one row per attempt), then one section per attempt
    with its stages and the first error's lines in a fenced block.  Times are UTC.  With
    ``redactor`` the text is redacted once more as a whole (give it records read with
    :meth:`Journal.attempts(redactor) <cockpit.core.journal.store.Journal.attempts>` too: a
    table cell is shortened before this pass could see a whole secret).
    """
    token = _REDACT.set(redactor.text if redactor is not None else None)
    try:
        text = _render(list(attempts), title)
    finally:
        _REDACT.reset(token)
    return redactor.text(text) if redactor is not None else text


def _render(recs: list[AttemptRecord], title: str) -> str:
    out: list[str] = [f"# {_md(title)}", ""]
    if not recs:
        out += ["No attempts recorded.", "", LEGEND, ""]
        return "\n".join(out)

    starts = [r.started_at for r in recs if r.started_at is not None]
    counts: dict[str, int] = {}
    for r in recs:
        counts[r.outcome_name] = counts.get(r.outcome_name, 0) + 1
    order = [o.value for o in (Outcome.PASSED, Outcome.FAILED, Outcome.UNTESTED, Outcome.INTERRUPTED, Outcome.PENDING, Outcome.RUNNING)]
    tally = ", ".join(f"{counts[o]} {_md(o)}" for o in order + sorted(set(counts) - set(order)) if counts.get(o))
    span = f"{_fmt_ts(min(starts))} → {_fmt_ts(max(starts))} (UTC)" if starts else "times unknown"
    out += [f"{len(recs)} attempt{'s' if len(recs) != 1 else ''}, {span}: {tally}.", "", LEGEND, ""]

    out += [
        "| # | started (UTC) | hypothesis | code | caches cleared | outcome | layer | first error | duration |",
        "|---:|---|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        out.append(
            "| "
            + " | ".join(
                [
                    _cell(r.attempt),
                    _fmt_ts(r.started_at),
                    _cell(r.note, 80),
                    _code_cell(r.code_version),
                    _cell(_caches_cell(r.caches)),
                    _bold_label(r.outcome_name, r.layer) + (f" → {_cell(fate_line(r.fate), 80)}" if r.fate else ""),
                    _cell(_value(r.layer)),
                    _cell(_first_error_line(r.first_error), 120),
                    _fmt_duration(r.duration_s),
                ]
            )
            + " |"
        )
    out.append("")

    for r in recs:
        out += [f"## Attempt {_md(r.attempt)}: {_md(outcome_label(r.outcome_name, r.layer))}", ""]
        out.append(f"- **Hypothesis:** {_cell(r.note)}")
        if r.fate:
            out.append(f"- **Then:** {_cell(fate_line(r.fate))}")
        if r.metrics:
            from ..metrics.report import summary_line  # late, like fate_line

            out.append(f"- **Metrics:** {_cell(summary_line(r.metrics, limit=6))}")
        if r.compile:
            from ..compile_report import markdown_line, summary_of  # late, like fate_line

            cs = summary_of(r.compile)
            if cs is not None and cs.events:
                out.append(f"- **torch.compile:** {_cell(markdown_line(cs))}")
        if r.stacks and isinstance(r.stacks.get("text"), str):
            out += ["", f"Threads' stacks ({_cell(r.stacks.get('method'))}):", "", _fence(r.stacks["text"].splitlines()[:80]), ""]
        if r.target:
            out.append(f"- **Target:** {_cell(r.target)}")
        out.append(
            f"- **Started:** {_fmt_ts(r.started_at)} UTC · **finished:** {_fmt_ts(r.finished_at)}"
            f" · **duration:** {_fmt_duration(r.duration_s)}"
        )
        cv = r.code_version
        if cv:
            bits = [_code_cell(cv)]
            if cv.get("dirty_hash"):
                bits.append(f"dirty hash {_code(_str(cv['dirty_hash'])[:12])}")
            files = cv.get("files")
            if isinstance(files, list) and files:
                shown = ", ".join(_md(f) for f in files[:8]) + (f", … {len(files) - 8} more" if len(files) > 8 else "")
                bits.append(f"files: {shown}")
            if cv.get("source"):
                bits.append(f"source: {_md(cv['source'])}")
            out.append(f"- **Code:** {'; '.join(bits)}")
        if r.diff:
            d = r.diff
            changed = d.get("files")
            text = _md(f"{len(changed) if isinstance(changed, list) else 0} file(s), +{d.get('added', '?')} −{d.get('removed', '?')}")
            if d.get("diff_path"):
                text += f", {_code(d['diff_path'])}"
            out.append(f"- **Diff:** {text}")
        if r.caches is None:
            out.append("- **Caches cleared:** no")
        elif not r.caches:
            out.append("- **Caches cleared:** yes, nothing was there")
        else:
            parts = []
            for c in r.caches:
                size = _fmt_bytes(_cache_size(c))
                parts.append(_code(_cache_path(c)) + (f" ({size})" if size else ""))
            out.append(f"- **Caches cleared:** {', '.join(parts)}")
        if r.log_path:
            out.append(f"- **Log:** {_code(r.log_path)}")
        if r.job:
            j = r.job
            bits = [f"{k} {j[k]}" for k in ("unit", "pid", "pgid", "start_time") if j.get(k) not in (None, "")]
            if bits:
                out.append(f"- **Job:** {_cell(', '.join(bits))}")
        if r.summary:
            out.append(f"- **Summary:** {_cell(r.summary)}")
        if r.interrupted_reason:
            out.append(f"- **Interrupted:** {_cell(r.interrupted_reason)}")
        out.append("")

        if r.stages:
            out += ["| action | stage | status | layer | detail | duration |", "|---|---|---|---|---|---|"]
            for s in r.stages:
                st = s.stage
                status = f"**{st.status.value}**" if st.status is Status.FAIL else st.status.value
                out.append(
                    f"| {_cell(s.action)} | {_cell(st.name)} | {status} | {st.layer.value} | "
                    f"{_cell(st.detail, 160)} | {_fmt_duration(st.duration_s)} |"
                )
            out.append("")
        else:
            out += ["_No stages recorded._", ""]

        fe = r.first_error
        if fe:
            meta = []
            if fe.get("layer"):
                meta.append(f"layer {_code(fe['layer'])}")
            if fe.get("label"):
                meta.append(_md(fe["label"]))
            where = fe.get("path") or fe.get("log_path")
            lineno = fe.get("line_no", fe.get("lineno"))
            if where:
                meta.append(_code(where) + (f" line {_md(lineno)}" if lineno is not None else ""))
            out.append("**First error**" + (f" ({', '.join(meta)})" if meta else "") + ":")
            out.append("")
            lines = _first_error_lines(fe)
            if len(lines) > 60:
                lines = lines[:60] + [f"… {len(lines) - 60} more lines"]
            out += [_fence(lines or [_first_error_line(fe)]), ""]
            if fe.get("advice"):
                out += [f"Advice: {_cell(fe['advice'])}", ""]
    return "\n".join(out)
