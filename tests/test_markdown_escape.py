"""``history --markdown`` escapes what the records hold: remote error text, stage details, paths,
notes.  The post-mortem is rendered by a real CommonMark parser with GFM tables (markdown-it-py,
the parser rich uses); a remote ``[click](http://evil)``, ``<img src=x onerror=…>`` or a code span
breaking out of its backticks must render as text, never as a link, an image or HTML."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.journal import Journal, render_markdown
from cockpit.core.layers import Layer, Outcome, Stage, Status
from cockpit.core.redact import Redactor

markdown_it = pytest.importorskip("markdown_it")

LINK = "[click](http://evil.example/x)"
IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(2)</script>"
AUTOLINK = "<http://evil.example/auto>"
TICKS = "`` ` [code](http://evil.example/c) ``"
FENCE = "```\n</code></pre><img src=y onerror=alert(3)>\n```"


def html_of(md: str) -> str:
    return markdown_it.MarkdownIt("commonmark").enable("table").render(md)


def assert_inert(html: str) -> None:
    low = html.lower()
    assert "<a " not in low and "<img" not in low and "<script" not in low, html
    assert "href=" not in low, html


def hostile_journal(path: Path) -> list:
    j = Journal(path)
    a = j.start_attempt(f"hypothesis {LINK} **bold** __init__", "lab", log_path=f"/w/`{LINK}`.log",
                        code_version={"git_commit": "4092e57aa", "source": f"/src {IMG}", "files": [f"x{LINK}.py"],
                                      "dirty": True, "dirty_hash": "`abc`"})
    j.record_stage(a, "verify", Stage("progress", Status.FAIL, Layer.APP, f"remote said {IMG} {SCRIPT} {AUTOLINK}"))
    j.record_stage(a, f"act{LINK}", Stage(f"st{IMG}", Status.OK, Layer.HOST, "ok | pipe"))
    j.finish_attempt(
        a, Outcome.FAILED, layer=Layer.APP, summary=f"summary {LINK} {TICKS}",
        first_error={"layer": "app`", "label": f"label {LINK} {IMG}", "path": f"/w/{TICKS}.log", "line_no": 7,
                     "lines": ["Traceback (most recent call last):", "  File \"x.py\", line 1, in __init__",
                               f"RuntimeError: {LINK} {IMG}", FENCE], "advice": f"advice {LINK}"},
        caches=[{"path": f"/tmp/{TICKS}", "bytes": 10}, {"path": f"/tmp/{IMG}"}],
    )
    return j.attempts()


def test_remote_text_renders_as_text_never_as_a_link_image_or_html(tmp_path: Path) -> None:
    md = render_markdown(hostile_journal(tmp_path / "j.jsonl"))
    html = html_of(md)
    assert_inert(html)
    # the text is all still there, shown as written
    assert LINK in html and "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;script&gt;" in html
    assert "http://evil.example/auto" in html and "[code](http://evil.example/c)" in html
    assert "hypothesis " + LINK + " **bold** __init__" in html  # literal asterisks: not bold; underscores kept
    assert "line 1, in __init__" in html and "<em>" not in html


def test_table_rows_keep_their_columns(tmp_path: Path) -> None:
    md = render_markdown(hostile_journal(tmp_path / "j.jsonl"))
    html = html_of(md)
    summary = html.split("<table>")[1]
    first_row = summary.split("<tbody>")[1].split("</tr>")[0]
    assert first_row.count("<td") == 9, first_row  # an escaped | or a code span never splits a cell
    stages = html.split("<table>")[2].split("<tbody>")[1]
    assert all(row.count("<td") == 6 for row in stages.split("</tr>")[:-1]), stages


def test_an_unknown_outcome_from_a_hand_edited_journal_is_escaped_in_the_heading(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    events = [{"event": "attempt_started", "attempt": 1, "note": "n", "target": "lab"},
              {"event": "attempt_finished", "attempt": 1, "outcome": f"weird{LINK}", "layer": IMG}]
    path.write_text("".join(json.dumps({"v": 1, "ts": 1733130000.0 + i, **e}) + "\n" for i, e in enumerate(events)))
    html = html_of(render_markdown(Journal(path).attempts()))
    assert_inert(html)
    assert "weird" + LINK in html


def test_secrets_are_redacted_before_they_are_escaped(tmp_path: Path) -> None:
    secret = "p*ss&w[0]rd_<42>"
    j = Journal(tmp_path / "j.jsonl")
    a = j.start_attempt(f"try {secret} again", "lab")
    j.finish_attempt(a, Outcome.FAILED, layer=Layer.APP, summary=f"login with {secret} refused",
                     first_error={"line": f"auth {secret} refused", "label": secret})
    md = render_markdown(j.attempts(), redactor=Redactor(env={"DB_PASSWORD": secret}))
    assert "***" in md
    for form in ("p*ss", "p\\*ss", "w[0]rd", "w\\[0\\]rd", "&lt;42&gt;"):
        assert form not in md, (form, md)


def test_history_markdown_from_the_cli_is_inert(tmp_path: Path) -> None:
    conf = tmp_path / "cockpit.toml"
    conf.write_text(f'[target]\nname = "lab"\ntransport = "local"\n[job]\nworkdir = "{tmp_path}"\n[journal]\npath = "{tmp_path}/journal.jsonl"\n')
    hostile_journal(tmp_path / "journal.jsonl")
    r = subprocess.run([sys.executable, "-m", "cockpit", "history", "--markdown", "--config", str(conf)],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert_inert(html_of(r.stdout))
    assert "\\[click\\](http://evil.example/x)" in r.stdout
