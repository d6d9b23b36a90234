"""Remote and journal text is data, never markup (issue 10, the part that crashed the TUI on every
start): notes, errors, summaries and fates with square brackets show verbatim in the attempts pane
and in the verdict detail."""

from __future__ import annotations

from pathlib import Path

from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome
from cockpit.ui.screens.verdict import VerdictScreen
from tests.test_ui_loop import SIZE, make_app
from tests.test_ui_support import wait_for

HOSTILE = "try [fix] [/] [rank0]: RuntimeError [bold]x[/bold] [/tmp] [link=http://x]y[/link]"


async def test_square_brackets_from_the_journal_show_verbatim(tmp_path: Path):
    app = make_app(tmp_path)
    j = Journal(app.cfg.journal_path)
    a = j.start_attempt(HOSTILE, "lab", log_path="/tmp/[/]/train-1.log")
    j.record(a, "fate", state="died", layer="app", cause=HOSTILE, at=1.0, after_s=3.0, last_progress="[step 1]")
    j.finish_attempt(a, Outcome.FAILED, layer=Layer.APP, summary=f"attempt: {HOSTILE}",
                     first_error={"label": HOSTILE, "layer": "app", "line": HOSTILE})
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one("#history-table")
        await wait_for(pilot, lambda: table.row_count == 1, what="the hostile row")
        row = [c.plain if hasattr(c, "plain") else str(c) for c in table.get_row("1")]
        assert any(HOSTILE[:40] in c for c in row), row
        await pilot.press("4", "v")
        await wait_for(pilot, lambda: isinstance(app.screen, VerdictScreen), what="the verdict detail")
        await pilot.pause()
        shown = app.screen.body.build()
        from rich.console import Console

        console = Console(width=400, record=True)
        console.print(shown)
        text = console.export_text()
        assert HOSTILE in text and "/tmp/[/]/train-1.log" in text, text[:2000]


# -- the one sanitize, at the boundary where remote text enters cockpit's data -------------------------

import json  # noqa: E402
import re  # noqa: E402

import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cockpit.core.text import LINE_CAP, sanitize, sanitize_data  # noqa: E402
from tests.examples import examples  # noqa: E402

#: what may never leave sanitize: C0 (but tab and, with newlines=True, newline), DEL, C1, bidi
#: controls, line/paragraph separators, lone surrogates
UNSAFE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_ANY = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=200)
_HOSTILE = st.lists(st.sampled_from(["\x1b[31m", "\x1b]2;t\x07", "\x1b]2;open", "\x1bP1$r\x1b\\", "\x9b1m", "\r", "\n", "\t",
                                     "\u202e", "\u2066", "\ud800", "\x00", "\x85", "[/]", "x" * 50, "中", "👩\u200d💻"]) | _ANY,
                    max_size=10).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(text=_HOSTILE, cap=st.none() | st.integers(1, 80), newlines=st.booleans(), overprint=st.booleans())
def test_sanitize_leaves_nothing_a_terminal_would_act_on(text: str, cap: int | None, newlines: bool, overprint: bool) -> None:
    out = sanitize(text, cap, newlines=newlines, overprint=overprint)
    assert not UNSAFE.search(out.replace("\n", "") if newlines else out), repr(out)
    assert sanitize(out, cap, newlines=newlines, overprint=overprint) == out  # idempotent: read and write may both clean
    if newlines:
        assert out.count("\n") == text.count("\n")  # lines stay lines
    if cap is not None:
        assert all(len(line) <= cap + len(" … [999999 characters cut]") for line in out.split("\n"))


@pytest.mark.parametrize(("raw", "kw", "clean"), [
    ("\x1b[1;31mERROR\x1b[0m [rank0]: boom", {}, "ERROR [rank0]: boom"),
    ("a\x1b]2;pwned\x07b", {}, "ab"),  # a terminated OSC (a title) goes, with its text
    ("a\x1b]2;open, b", {}, "a\u241b]2;open, b"),  # an unterminated one eats nothing: its ESC shows
    ("bidi \u202eevil\u2066", {}, "bidi \\u202eevil\\u2066"),
    ("surrogate \ud800", {}, "surrogate \\ud800"),
    ("ps\rhidden", {}, "ps\u240dhidden"),  # a carriage return in data shows
    ("10%\r50%\r100%", {"overprint": True}, "100%"),  # … in a log line, the last state wins
    ("crlf\r\nline 2\r", {"newlines": True}, "crlf\nline 2"),
    ("two\nlines", {}, "two\u240alines"),
    ("tab\tkept 中 👩\u200d💻 e\u0301", {}, "tab\tkept 中 👩\u200d💻 e\u0301"),
    ("x" * 10, {"cap": 4}, "xxxx … [6 characters cut]"),
])
def test_sanitize_examples(raw: str, kw: dict, clean: str) -> None:
    assert sanitize(raw, **kw) == clean


def test_remote_text_is_clean_where_it_enters_core_data(tmp_path: Path):
    """Stages, evidence, findings, ps and nvidia-smi output, stack dumps, the journal (write and read)."""
    from cockpit.core.actions.stacks import parse_py_spy
    from cockpit.core.layers import Evidence, Finding, Stage, Status
    from cockpit.core.notify import verdict_line
    from cockpit.core.probes import gpu as gpu_probe
    from cockpit.core.probes import procs as procs_probe

    evil = "x\x1b]2;pwned\x07\x1b[31m\x9b1m\u202e\ud800"
    seen = "x\\u202e\\ud800"  # ANSI sequences gone (the 8-bit CSI too), the rest visible
    st_ = Stage("verify: alive", Status.FAIL, Layer.APP, evil, advice=evil, evidence=Evidence(evil, 1, f"{evil}\n{'y' * (LINE_CAP + 5)}"))
    assert st_.detail == st_.advice == st_.evidence.command == seen  # type: ignore[union-attr]
    assert st_.evidence.output.split("\n")[1].endswith("… [5 characters cut]")  # type: ignore[union-attr]
    f = Finding(Layer.GPU, "k", evil, evil)
    assert f.summary == f.advice == seen
    procs, bad = procs_probe.parse_ps(f"@@cockpit-ps proc\n@@uptime 10\n@@conf 100\nP\t0\t1\t1\t0\tpython3 {evil}\t7 (py) S 1 7 7 "
                                      + "0 " * 40 + "\n")
    wire = "x\u241b]2;pwned\u2407\u241b[31m\\x9b1m\\u202e\\ud800"  # in ps and nvidia-smi output escapes show: they cannot eat a field
    assert not bad and procs[0].args == f"python3 {wire}"
    snap = gpu_probe.parse_gpu_output(f"0, NVIDIA {evil}, GPU-a, 0:0.0, 550, P0, 1, 1, 1, 1, 2, 1, 2, 0, Disabled, 0\n", "", 0)
    assert snap.gpus[0].name == f"NVIDIA {wire}"
    procs, bad = procs_probe.parse_ps("@@cockpit-ps proc\n@@uptime 10\n@@conf 100\nP\t0\t1\t1\t0\t\t8 (\x1b[) S 1 8 8 " + "0 " * 40 + "\n")
    assert not bad and procs[0].comm == "\u241b[", (procs, bad)  # a process named ESC [ used to vanish from the table
    assert parse_py_spy(7, f'Thread 7 (idle): "{evil}"\n    f (a.py:1)\n')[0].name == seen
    j = Journal(tmp_path / "journal.jsonl")
    a = j.start_attempt(evil, "lab")  # a lone surrogate used to make the journal write raise UnicodeEncodeError
    j.finish_attempt(a, Outcome.FAILED, layer=Layer.APP, summary=evil)
    raw = (tmp_path / "journal.jsonl").read_text(encoding="utf-8")
    assert "\\u001b" not in raw and "\x9b" not in raw and "\u202e" not in raw
    with open(tmp_path / "journal.jsonl", "a", encoding="utf-8") as fh:  # a line written by hand, or by an older cockpit
        fh.write(json.dumps({"v": 1, "ts": 1.0, "event": "attempt_started", "attempt": 2, "note": evil}) + "\n")
    notes = [r.note for r in Journal(tmp_path / "journal.jsonl").attempts()]
    assert notes == [seen, seen]
    assert sanitize_data({"k\x1b": [evil, 1, None]}) == {"k\u241b": [seen, 1, None]}
    line = verdict_line({"attempt": 1, "outcome": "failed", "layer": "app", "first_error": {"line": evil}})
    assert "]2;" not in line and "\x1b" not in line  # an OSC title used to leave "]2;pwned" in the tmux message
