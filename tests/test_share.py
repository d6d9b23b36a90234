"""``cockpit --share``: read-only, and no secret on any pane or screen (issue 10).

A real job in the lab prints its token and password, runs a helper whose command line carries the
token, and an nvidia-smi process name holds it; an older journal (written before redaction) has
secrets in a note, a summary, an error and a stage's evidence.  Without ``--share`` the owner's
screen shows the job's log as it is; with it, the whole screen (every pane, the verdict detail,
the stacks screen, the toasts) holds none of them.  Screen text is read from the app's own
screenshot (``export_screenshot``) and from the widgets' contents.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cockpit.core.config import parse_config
from cockpit.ui.app import create_app
from cockpit.ui.panes import GpuPane, HistoryPane, LogPane, ProcsPane
from cockpit.ui.screens import VerdictScreen
from tests.test_ui_support import wait_for

SIZE = (160, 50)
TOKEN = "hf_Sh4reM0deSecretT0ken0123456789"
MARK = "Sh4reM0deSecret"
PASSWORD = "Zq81x7Kk-db-pw"


def screen_text(app: Any) -> str:
    """Everything the terminal shows now, line by line, from the app's SVG screenshot."""
    svg = app.export_screenshot()
    lines: dict[int, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text[^>]*?\bx="([\d.]+)"[^>]*?clip-path="url\(#[\w-]+-line-(\d+)\)"[^>]*>(.*?)</text>', svg):
        lines.setdefault(int(m[2]), []).append((float(m[1]), html.unescape(m[3]).replace("\xa0", " ")))
    return "\n".join("".join(t for _, t in sorted(parts)) for _, parts in sorted(lines.items()))


def rendered(renderable: Any) -> str:
    console = Console(width=400, record=True)
    console.print(renderable)
    return console.export_text()


def _older_journal(path: Path) -> None:
    """Attempt 1 as a cockpit without redaction wrote it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    ev = [
        {"event": "attempt_started", "attempt": 1, "note": f"retry with {TOKEN}", "target": "lab"},
        {"event": "stage", "attempt": 1, "action": "launch", "stage": {
            "name": "spawn", "status": "fail", "layer": "process", "detail": f"login refused for password={PASSWORD}",
            "evidence": {"command": f"env 'HF_TOKEN={TOKEN}' python train.py", "exit_code": 1, "output": f"401 {TOKEN}"}}},
        {"event": "attempt_finished", "attempt": 1, "outcome": "untested", "layer": "process",
         "summary": f"spawn failed: password={PASSWORD}", "first_error": {"label": f"401 Unauthorized for {TOKEN}", "layer": "app"}},
    ]
    path.write_text("".join(json.dumps({"v": 1, "ts": 1733130000.0 + i, **e}) + "\n" for i, e in enumerate(ev)))


def _no_secret(where: str, text: str) -> None:
    assert MARK not in text and PASSWORD not in text, f"a secret on the shared screen ({where}):\n{text}"


pytestmark = pytest.mark.lab


async def test_share_hides_every_secret_the_owners_screen_shows(lab, lab_config, engines):
    sim = lab.jobsim_command("--steps", "0", "--interval", "0.1")
    command = (f'/bin/sh -c "sleep 600; :" "worker --hf-token $HF_TOKEN" & '
               f'echo "login with token $HF_TOKEN and password=$DB_PASSWORD"; exec {sim}')
    cfg = lab_config(job={"command": command, "env": {"HF_TOKEN": TOKEN, "DB_PASSWORD": PASSWORD}})
    gpu0 = lab.gpu(0, **{"utilization.gpu": 91})
    lab.set_gpu_state("normal", gpus=[gpu0], apps=[{"pid": 4242, "process_name": f"/usr/bin/python3-{TOKEN}", "used_memory": 1000,
                                                    "gpu_uuid": gpu0["uuid"]}])
    _older_journal(cfg.journal_path)
    res = await engines(cfg).attempt("a job that prints its secrets", follow=False)
    assert res.outcome.value == "passed", res.verdict.summary()
    assert MARK not in cfg.journal_path.read_text().split("\n", 3)[3]  # what this cockpit wrote is redacted

    # the owner's own screen: the job's log line as the job wrote it
    app = create_app(cfg)
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(LogPane).log_view
        await wait_for(pilot, lambda: any("login with token" in ln for ln in log.lines), timeout=20, what="the log line")
        assert any(TOKEN in ln and PASSWORD in ln for ln in log.lines)

    app = create_app(cfg, share=True)
    assert app.read_only
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        log = app.query_one(LogPane).log_view
        procs, gpu, hist = app.query_one(ProcsPane), app.query_one(GpuPane), app.query_one(HistoryPane)
        await wait_for(pilot, lambda: any("login with token" in ln for ln in log.lines), timeout=20, what="the log line")
        await wait_for(pilot, lambda: any("worker" in str(c) for _, cells in procs.rows() for c in cells), timeout=20,
                       what="the helper in the process table")
        await wait_for(pilot, lambda: "python3-" in gpu.procs_text().plain, timeout=20, what="the GPU process")
        await wait_for(pilot, lambda: hist.table.row_count == 2, timeout=20, what="both attempts")
        line = next(ln for ln in log.lines if "login with token" in ln)
        assert line == "login with token *** and password=***", line
        _no_secret("log pane", "\n".join(log.lines))
        cells = [str(getattr(c, "plain", c)) for key in ("1", "2") for c in hist.table.get_row(key)]
        _no_secret("attempts pane", "\n".join(cells))
        assert any("retry with ***" in c for c in cells), cells
        proc_cells = "\n".join(str(getattr(c, "plain", c)) for row in procs.table.ordered_rows for c in procs.table.get_row(row.key))
        _no_secret("process table", proc_cells)
        assert "--hf-token ***" in proc_cells, proc_cells
        assert "python3-***" in gpu.procs_text().plain
        shots: list[str] = []

        def whole_screen() -> bool:  # a GPU refresh can land between two frames: wait for a frame with all of it
            shots.append(screen_text(app))
            _no_secret("the screen", shots[-1])  # every frame, not only the one that matches
            return "python3-***" in shots[-1] and "retry with ***" in shots[-1] and "SHARED · READ-ONLY" in shots[-1]

        await wait_for(pilot, whole_screen, timeout=20, what=lambda: f"the whole redacted screen: {shots[-1] if shots else ''}")

        # the older attempt's full verdict: evidence, summary, first error
        app.push_screen(app.views.verdict_screen(hist.record(1)))
        await wait_for(pilot, lambda: isinstance(app.screen, VerdictScreen), what="the verdict detail")
        await pilot.pause()
        body = rendered(app.screen.body.build())
        assert "evidence of the failing stage" in body and "HF_TOKEN=***" in body, body
        _no_secret("verdict detail", body)
        _no_secret("the verdict screen", screen_text(app))
        await pilot.press("escape")

        app.notify(f"a toast quoting {TOKEN} and password={PASSWORD}")
        await wait_for(pilot, lambda: "a toast quoting" in screen_text(app), what="the toast")
        assert "a toast quoting *** and password=***" in screen_text(app)
        _no_secret("a toast", screen_text(app))


def _local_cfg(tmp: Path) -> Any:
    return parse_config(f"""
[target]
name = "lab"
transport = "local"
[job]
workdir = "{tmp}"
command = "/bin/true"
log = "{tmp}/train-{{attempt}}.log"
[job.env]
WANDB_API_KEY = "wandb-local-{MARK}"
[journal]
path = "{tmp}/j/journal.jsonl"
[gpu]
enabled = false
""")


@pytest.mark.parametrize("share", [False, True])
async def test_the_stacks_screen_and_findings_in_share_mode(tmp_path, share):
    from cockpit.core.actions.stacks import StackDump, ThreadStack
    from cockpit.core.layers import Layer, Severity
    from cockpit.ui.panes.base import findings_text
    from cockpit.ui.screens.stacks import StacksScreen

    class Finding:
        severity, layer = Severity.ERROR, Layer.PROCESS
        summary = f"duplicate job: python train.py --hf-token {TOKEN}"
        advice = f"stop the copy started with wandb-local-{MARK}"

    dump = StackDump("py-spy", 1733130000.0, [ThreadStack(7, 7, "MainThread", "idle", [f"login (train.py:3) token={TOKEN}"])])
    app = create_app(_local_cfg(tmp_path), refresh=False, share=share)
    async with app.run_test(size=SIZE) as pilot:
        findings = findings_text(app.query_one(ProcsPane), [Finding()], 5, advice=True).plain
        app.push_screen(StacksScreen(dump))
        await wait_for(pilot, lambda: isinstance(app.screen, StacksScreen), what="the stacks screen")
        await pilot.pause()
        shown = screen_text(app)
        assert "login (train.py:3)" in shown
        if share:
            _no_secret("stacks screen", shown)
            _no_secret("findings", findings)
            assert "token=hf_***" in shown and "--hf-token hf_***" in findings and "started with ***" in findings
        else:
            assert MARK in shown and TOKEN in findings
