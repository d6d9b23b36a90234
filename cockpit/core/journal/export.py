"""Journal export: :func:`render_markdown`, a post-mortem timeline of attempts, and its cell helpers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from ..layers import Layer, Outcome, Status
from ..redact import Redactor
from .records import AttemptRecord, _str, _value, outcome_label

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
    return f"**{word}** — {rest}"


def _cell(text: Any, limit: int | None = None) -> str:
    """One Markdown table cell: a single line, pipes escaped, optionally shortened."""
    s = _str(text)
    s = " ⏎ ".join(part.strip() for part in s.replace("\r\n", "\n").replace("\r", "\n").split("\n") if part.strip())
    if limit is not None and len(s) > limit:
        s = s[: limit - 1].rstrip() + "…"
    return s.replace("|", "\\|") if s else "—"


def _fmt_ts(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def fate_line(fate: dict[str, Any]) -> str:
    """``died (app) after 4m12s: RuntimeError …`` (see :func:`cockpit.core.fate.fate_text`)."""
    from ..fate import fate_text  # late: the fate module reaches the actions; the journal must not need them

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
    return f"`{short}`" if short else "—"


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
    body = "\n".join(lines)
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
    text = _render(list(attempts), title)
    return redactor.text(text) if redactor is not None else text


def _render(recs: list[AttemptRecord], title: str) -> str:
    out: list[str] = [f"# {title}", ""]
    if not recs:
        out += ["No attempts recorded.", "", LEGEND, ""]
        return "\n".join(out)

    starts = [r.started_at for r in recs if r.started_at is not None]
    counts: dict[str, int] = {}
    for r in recs:
        counts[_value(r.outcome)] = counts.get(_value(r.outcome), 0) + 1
    order = [o.value for o in (Outcome.PASSED, Outcome.FAILED, Outcome.UNTESTED, Outcome.INTERRUPTED, Outcome.PENDING, Outcome.RUNNING)]
    tally = ", ".join(f"{counts[o]} {o}" for o in order + sorted(set(counts) - set(order)) if counts.get(o))
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
                    str(r.attempt),
                    _fmt_ts(r.started_at),
                    _cell(r.note, 80),
                    _code_cell(r.code_version),
                    _cell(_caches_cell(r.caches)),
                    _bold_label(r.outcome, r.layer) + (f" → {_cell(fate_line(r.fate), 80)}" if r.fate else ""),
                    _cell(_value(r.layer)),
                    _cell(_first_error_line(r.first_error), 120),
                    _fmt_duration(r.duration_s),
                ]
            )
            + " |"
        )
    out.append("")

    for r in recs:
        out += [f"## Attempt {r.attempt}: {outcome_label(r.outcome, r.layer)}", ""]
        out.append(f"- **Hypothesis:** {_cell(r.note)}")
        if r.fate:
            out.append(f"- **Then:** {_cell(fate_line(r.fate))}")
        if r.metrics:
            from ..metrics.report import summary_line  # late, like fate_line

            out.append(f"- **Metrics:** {_cell(summary_line(r.metrics, limit=6))}")
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
                bits.append(f"dirty hash `{_str(cv['dirty_hash'])[:12]}`")
            files = cv.get("files")
            if isinstance(files, list) and files:
                shown = ", ".join(_str(f) for f in files[:8]) + (f", … {len(files) - 8} more" if len(files) > 8 else "")
                bits.append(f"files: {shown}")
            if cv.get("source"):
                bits.append(f"source: {_str(cv['source'])}")
            out.append(f"- **Code:** {_cell('; '.join(bits))}")
        if r.diff:
            d = r.diff
            changed = d.get("files")
            text = f"{len(changed) if isinstance(changed, list) else 0} file(s), +{d.get('added', '?')} −{d.get('removed', '?')}"
            if d.get("diff_path"):
                text += f", `{_str(d['diff_path'])}`"
            out.append(f"- **Diff:** {_cell(text)}")
        if r.caches is None:
            out.append("- **Caches cleared:** no")
        elif not r.caches:
            out.append("- **Caches cleared:** yes, nothing was there")
        else:
            parts = []
            for c in r.caches:
                size = _fmt_bytes(_cache_size(c))
                parts.append(f"`{_cache_path(c)}`" + (f" ({size})" if size else ""))
            out.append(f"- **Caches cleared:** {', '.join(parts)}")
        if r.log_path:
            out.append(f"- **Log:** `{_str(r.log_path)}`")
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
                meta.append(f"layer `{_str(fe['layer'])}`")
            if fe.get("label"):
                meta.append(_str(fe["label"]))
            where = fe.get("path") or fe.get("log_path")
            lineno = fe.get("line_no", fe.get("lineno"))
            if where:
                meta.append(f"`{_str(where)}`" + (f" line {lineno}" if lineno is not None else ""))
            out.append("**First error**" + (f" ({', '.join(meta)})" if meta else "") + ":")
            out.append("")
            lines = _first_error_lines(fe)
            if len(lines) > 60:
                lines = lines[:60] + [f"… {len(lines) - 60} more lines"]
            out += [_fence(lines or [_first_error_line(fe)]), ""]
            if fe.get("advice"):
                out += [f"Advice: {_cell(fe['advice'])}", ""]
    return "\n".join(out)
