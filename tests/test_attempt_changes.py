"""Each attempt records what it deployed that the previous attempt did not (engine wiring)."""

import sys

from cockpit.core.changes import read_diff
from cockpit.core.config import parse_config
from cockpit.core.engine import Engine
from cockpit.core.journal import Journal


def config(tmp_path):
    src, ws = tmp_path / "src", tmp_path / "ws"
    src.mkdir()
    ws.mkdir()
    (src / "train.py").write_text("lr = 1e-3\nbatch = 8\nprint('step 1')\n")
    text = f"""
[target]
transport = "local"
[job]
workdir = "{ws}"
command = "{sys.executable} train.py; sleep 30"
log = "{ws}/train-{{attempt}}.log"
progress_pattern = '^step'
stop_timeout = 2
[deploy]
source = "{src}"
dest = "{ws}"
[cache]
paths = []
[journal]
path = "{tmp_path}/j/journal.jsonl"
[verify]
settle = 0.5
"""
    return parse_config(text), src


async def test_second_attempt_records_exactly_the_edited_lines(tmp_path):
    cfg, src = config(tmp_path)
    eng = Engine(cfg)
    try:
        first = await eng.attempt("baseline")
        assert first.outcome.value == "passed", first.verdict.summary()
        (src / "train.py").write_text("lr = 3e-4\nbatch = 8\nprint('step 1')\n")
        second = await eng.attempt("lower lr")
        assert second.outcome.value == "passed"
    finally:
        await eng.run_action("stop")
        await eng.close()
    assert second.changes and second.changes["files"] and second.changes["added"] == 1 and second.changes["removed"] == 1
    rec = Journal(cfg.journal_path).get(second.attempt)
    assert rec.diff and rec.diff["added"] == 1
    diff = read_diff(cfg.journal_path.parent, second.attempt)
    body = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert body == ["-lr = 1e-3", "+lr = 3e-4"]
