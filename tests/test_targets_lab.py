"""Several targets against the lab: two containers of one host (200 and 201), one SSH connection
for both, ``status --all``, a group attempt with one verdict per target and a combined one, and
each target's journal naming it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from cockpit.core.config import load_config
from cockpit.core.engine import Engine
from cockpit.core.journal import Journal
from tests.lab import faults

pytestmark = pytest.mark.lab

EVAL_CT = 201


@pytest.fixture
def two(lab, tmp_path):
    """A config whose targets are containers 200 ("train") and 201 ("eval") of the lab host."""
    lab.add_container(EVAL_CT)
    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
    ws = lab.workspace(EVAL_CT)

    def make(eval_job: str | None = None) -> str:
        base = lab.config_toml(target={"name": None, "container": None})
        ej = eval_job or lab.jobsim_command("--steps", 0, "--interval", 0.2)
        text = base + f'''
[[targets]]
name = "train"
container = 200

[[targets]]
name = "eval"
container = {EVAL_CT}
[targets.job]
workdir = "{ws}"
log = "{ws}/eval-{{attempt}}.log"
command = {json.dumps(ej)}
[targets.deploy]
dest = "{ws}/src"

[[groups]]
name = "both"
targets = ["train", "eval"]
'''
        path = tmp_path / "cockpit.toml"
        path.write_text(text)
        return str(path)

    yield make
    lab.remove_container(EVAL_CT)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cockpit", *args], capture_output=True, text=True, timeout=timeout)


def test_status_all_returns_every_target_and_names_the_one_that_fails(lab, two):
    path = two()
    r = cli("status", "--all", "--quick", "--json", "--config", path)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["ok"] and list(d["targets"]) == ["train", "eval"] and d["combined"]["ok"]
    assert d["targets"]["eval"]["target"] == "eval" and d["targets"]["eval"]["verdict"]["ok"]
    lab.pct("stop", EVAL_CT, check=True)
    r = cli("status", "--all", "--quick", "--json", "--config", path)
    assert r.returncode == 1
    d = json.loads(r.stdout)
    assert d["targets"]["train"]["ok"] and not d["targets"]["eval"]["ok"]
    assert (d["combined"]["layer"], d["combined"]["target"]) == ("host", "eval"), d["combined"]
    one = cli("status", "--quick", "--json", "--target", "eval", "--config", path)
    assert one.returncode == 1 and json.loads(one.stdout)["target"] == "eval"
    bad = cli("status", "--target", "evl", "--config", path)
    assert bad.returncode == 2 and "did you mean 'eval'" in bad.stderr


def test_a_group_attempt_gives_one_verdict_per_target_and_a_combined_one(lab, two):
    crash = lab.jobsim_command("--steps", 0, "--interval", 0.05, "--crash", "fx", "--crash-at", 1)
    path = two(eval_job=crash)
    r = cli("attempt", "--group", "both", "-m", "both nodes", "--json", "--config", path, timeout=180)
    assert r.returncode == 1, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["targets"]["train"]["outcome"] == "passed", d["targets"]["train"]["summary"]
    assert d["targets"]["eval"]["outcome"] == "failed" and d["targets"]["eval"]["layer"] == "app"
    assert d["combined"] == {**d["combined"], "ok": False, "layer": "app", "target": "eval"}
    cfg = load_config(path)
    for name in ("train", "eval"):
        rec = Journal(cfg.for_target(name).journal_path).attempts()[-1]
        assert rec.target == name and rec.note == "both nodes"
    h = cli("history", "--json", "--target", "eval", "--config", path)
    assert h.returncode == 0, h.stderr
    rows = json.loads(h.stdout)
    rows = rows["attempts"] if isinstance(rows, dict) else rows
    assert [x["target"] for x in rows] == ["eval"] and rows[0]["outcome"] == "failed"
    for name in ("train", "eval"):  # leave no job behind
        cli("stop", "--target", name, "--config", path)


async def test_targets_on_one_host_share_one_ssh_connection(lab, two):
    cfg = load_config(two())
    before = len(faults.connections(lab))
    a, b = Engine(cfg.for_target("train")), Engine(cfg.for_target("eval"))
    try:
        ra, rb = await a.transport.run("hostname"), await b.transport.run("hostname")
        assert (ra.text.strip(), rb.text.strip()) == ("ct200", f"ct{EVAL_CT}")  # each its own container
        assert a.transport.link is b.transport.link and a.transport.connects == 1
        assert len(faults.connections(lab)) - before == 1  # sshd sees one connection for both
        await a.close()
        rb = await b.transport.run("echo still")  # closing one target leaves the other's connection
        assert rb.text.strip() == "still"
    finally:
        await a.close()
        await b.close()


async def test_the_tui_strip_watches_every_target_and_gt_switches(lab, two):
    from cockpit.ui.app import create_app
    from cockpit.ui.panes.targets import TargetStrip
    from tests.test_ui_app import SIZE
    from tests.test_ui_support import wait_for

    cfg = load_config(two())
    lab.pct("stop", EVAL_CT, check=True)  # the other target is down: the strip must say so
    app = create_app(cfg, refresh=True)
    async with app.run_test(size=SIZE) as pilot:
        strip = app.query_one(TargetStrip)
        await wait_for(pilot, lambda: strip.summaries["eval"].checked_at is not None, timeout=30, what="the other target checked")
        text = strip.render().plain
        assert "▸ train ✔" in text and "eval ✘ host" in text and "⚠" in text, text
        assert strip.attention() == ["eval"]
        await pilot.press("greater_than_sign")
        await wait_for(pilot, lambda: app.switch_to == "eval", what="the switch")
    assert app.switch_to == "eval" and app.return_code == 0
    assert cfg.for_target(app.switch_to).target.container == EVAL_CT  # what run_tui starts next


async def test_one_target_has_no_strip_and_gt_says_why(lab, lab_config):
    from cockpit.ui.app import create_app
    from cockpit.ui.panes.targets import TargetStrip
    from tests.test_ui_app import SIZE

    app = create_app(lab_config(), refresh=False)
    async with app.run_test(size=SIZE) as pilot:
        assert not app.query(TargetStrip)
        await pilot.press("greater_than_sign")
        await pilot.pause()
        assert app.switch_to is None and app.is_running


POD_CT = 233


async def test_two_lab_containers_and_a_podman_one_in_status_all_and_the_strip(lab, two):
    """The issue's case: two Proxmox containers and a Podman container of one host, in one config."""
    from cockpit.ui.app import create_app
    from cockpit.ui.panes.targets import TargetStrip
    from tests.test_ui_app import SIZE
    from tests.test_ui_support import wait_for

    lab.add_engine_container("podman", "pod-eval", POD_CT)
    try:
        ws = lab.workspace(POD_CT)
        path = two()
        with open(path, "a") as f:
            f.write(f'''
[[targets]]
name = "pod"
runtime = "podman"
container = "pod-eval"
podman = "{lab.bin_dir / 'podman'}"
[targets.job]
workdir = "{ws}"
log = "{ws}/pod-{{attempt}}.log"
[targets.deploy]
dest = "{ws}/src"
''')
        r = await asyncio.to_thread(cli, "status", "--all", "--quick", "--json", "--config", path)
        d = json.loads(r.stdout)
        assert r.returncode == 0 and list(d["targets"]) == ["train", "eval", "pod"], r.stdout[-2000:] + r.stderr
        host = next(s for s in d["targets"]["pod"]["verdict"]["stages"] if s["name"] == "host answers")
        assert "container pod-eval is running" in host["detail"]
        app = create_app(load_config(path), refresh=True)
        async with app.run_test(size=SIZE) as pilot:
            strip = app.query_one(TargetStrip)
            await wait_for(pilot, lambda: all(s.checked_at for s in strip.summaries.values()), timeout=30, what="every target checked")
            text = strip.render().plain
            assert "train ✔" in text and "eval ✔" in text and "pod ✔" in text, text
    finally:
        lab.remove_container(POD_CT)
