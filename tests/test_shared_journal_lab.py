"""Two config files in one directory, two containers: one journal file, two targets' histories.

Config files beside each other share ``.cockpit/journal.jsonl``.  Each target must see only its
own attempts: a second file's ``attempt`` once took the first file's job for its own, "stopped"
it as already exited (it looked for it in its own container) and journalled it, alive and well
in its container, as vanished; ``status`` of the first file then judged the second file's job
in the wrong container.  Run through the installed ``cockpit``, from the directory holding both
files, options before and after the sub-command, as a user types it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cockpit.core.journal import Journal, Scope
from cockpit.core.layers import Outcome, Status
from tests.front_door_support import needs_cockpit, run

pytestmark = [pytest.mark.lab, needs_cockpit]

OTHER_CT = 201


@pytest.fixture
def two_files(lab, tmp_path):
    """``cockpit.toml`` for container 200 and ``gpu2.toml`` for 201, in one directory."""
    lab.add_container(OTHER_CT)
    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
    command = lab.jobsim_command("--steps", "0", "--interval", "0.2")
    lab.write_config(tmp_path / "cockpit.toml", target={"name": "train"}, job={"command": command})
    ws = lab.workspace(OTHER_CT)
    lab.write_config(tmp_path / "gpu2.toml", target={"name": "gpu2", "container": OTHER_CT},
                     job={"command": command, "workdir": ws, "log": f"{ws}/train-{{attempt}}.log"},
                     deploy={"dest": f"{ws}/src"})
    try:
        yield tmp_path
    finally:
        lab.kill_jobs(OTHER_CT)
        lab.remove_container(OTHER_CT)
        lab.reset()


def history(cwd: Path, *argv: str) -> list[dict]:
    r = run(cwd, *argv, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_two_config_files_in_one_directory_keep_their_jobs_and_histories_apart(lab, two_files):
    d = two_files
    a = run(d, "attempt", "--note", "on 200", timeout=90)
    assert a.returncode == 0, a.stdout + a.stderr
    b = run(d, "--config", "gpu2.toml", "attempt", "--note", "on 201", timeout=90)
    assert b.returncode == 0, b.stdout + b.stderr
    # the second file has no job of its own yet: it neither stops nor judges the first file's
    assert "no job recorded by cockpit: nothing to stop" in b.stdout, b.stdout
    assert "already exited" not in b.stdout
    mine, theirs = history(d, "history", "--config", "gpu2.toml"), history(d, "history")
    assert [(h["note"], h["target"]) for h in mine] == [("on 201", "gpu2")]
    assert [(h["note"], h["target"]) for h in theirs] == [("on 200", "train")]
    assert theirs[0]["where"].endswith(" pct 200") and mine[0]["where"].endswith(f" pct {OTHER_CT}")
    assert (theirs[0]["fate"] or {}).get("state") in (None, "running"), theirs[0]["fate"]
    # one file, two ids: a log named by its attempt is never written by both
    assert {theirs[0]["attempt"], mine[0]["attempt"]} == {1, 2}
    # and each status judges its own job, in its own container, alive
    for argv in (("status",), ("status", "--config", "gpu2.toml")):
        s = run(d, *argv, "--json", timeout=60)
        assert s.returncode == 0, s.stdout + s.stderr
        assert json.loads(s.stdout)["ok"], s.stdout


def test_attempts_journalled_before_places_were_are_known_by_their_targets_name(tmp_path):
    path = tmp_path / "journal.jsonl"
    old = Journal(path)  # an older cockpit: no place in its records
    first = old.start_attempt("old train", "train")
    second = old.start_attempt("old eval", "eval")
    train = Journal(path, scope=Scope("train", "gpu1 pct 200"))
    assert [r.attempt for r in train.attempts()] == [first]
    assert train.get(second) is None and train.get(first) is not None
    new = train.start_attempt("new train", "train")
    renamed = Journal(path, scope=Scope("trainer", "gpu1 pct 200"))  # same container, a new name
    assert [r.attempt for r in renamed.attempts()] == [new]
    assert [r.attempt for r in Journal(path).attempts()] == [first, second, new]  # unscoped: the whole file


async def test_a_config_for_the_same_container_says_whose_job_it_stops(lab, tmp_path, engines):
    """Two files for one container and workdir are one target's history: the second file's attempt
    stops the first file's job (one job per container), and says whose it was."""
    from cockpit.core.config import load_config

    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
    command = lab.jobsim_command("--steps", "0", "--interval", "0.2")
    train = load_config(lab.write_config(tmp_path / "train.toml", target={"name": "train"}, job={"command": command}))
    ev = load_config(lab.write_config(tmp_path / "eval.toml", target={"name": "eval"}, job={"command": command}))
    first = await engines(train).attempt("train's job")
    assert first.outcome is Outcome.PASSED, first.verdict.summary()
    second = await engines(ev).attempt("eval's job")
    [identify] = [s for s in second.verdict.stages if s.name == "stop: identify job"]
    assert identify.status is Status.OK and f"group {first.job.pgid} (launched by target train): " in identify.detail, identify.detail
