"""Destructive actions cannot hit the wrong thing (issue 10, first part), against the lab."""

from __future__ import annotations

import pytest

from cockpit.core.layers import Layer

pytestmark = pytest.mark.lab


async def test_clear_cache_refuses_a_symlink_and_leaves_its_target_whole(lab, lab_config, engines):
    ws = lab.workspace()
    lab.exec_in(200, f"mkdir -p {ws}/precious && echo keep > {ws}/precious/data && ln -sfn {ws}/precious /tmp/cache-link")
    cfg = lab_config(cache={"paths": ["/tmp/cache-link/"]})
    v = await engines(cfg).run_action("clear-cache")
    assert not v.ok and v.layer is Layer.CONFIG and "symlink" in v.failed_stage.detail, v.summary()
    assert lab.exec_in(200, f"cat {ws}/precious/data").stdout.strip() == "keep"


async def test_stop_never_signals_a_record_without_a_start_time(lab, lab_config, engines):
    from cockpit.core.actions.job import JobRecord

    eng = engines(lab_config())
    eng.job = JobRecord(pid=1, pgid=1)  # what a job that exited at once could leave: no start time
    v = await eng.run_action("stop")
    ident = [s for s in v.stages if s.name == "identify job"][0]
    assert "not signalled" in ident.detail, ident.detail
    assert lab.exec_in(200, "cat /proc/1/stat").stdout.startswith("1 ")  # PID 1 untouched
    eng.job = None


async def test_a_token_in_job_env_never_reaches_the_journal_and_files_have_sane_modes(lab, lab_config, engines):
    import stat as st_mod

    token = "hf_SECRETSECRETSECRET1234"
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.05"), "env": {"HF_TOKEN": token}})
    res = await engines(cfg).attempt("with a token")
    assert res.outcome.value == "passed", res.verdict.summary()
    data = cfg.journal_path.read_bytes()
    assert token.encode() not in data and b"HF_TOKEN=***" in data
    assert st_mod.S_IMODE(cfg.journal_path.stat().st_mode) == 0o600
    mode = lab.exec_in(200, f"stat -c %a {res.job.log_path}").stdout.strip()
    assert mode == "644", mode  # the job's umask is [job] umask (022), not the session's 077


async def test_diffs_and_snapshots_are_private_and_hold_no_secret(lab, lab_config, engines):
    """Two attempts, the second deploying a source with a token pasted in: the snapshot, the diff and
    the journal hold none of it, every file is 0600 and every directory 0700."""
    import stat as st_mod

    secret = "AKIAIOSFODNN7EXAMPLE"
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.05")})
    eng = engines(cfg)
    assert (await eng.attempt("first", follow=False)).outcome.value == "passed"
    (lab.dir / "src" / "train.py").write_text(f"KEY_ID = '{secret}'\nprint('the code under test')\n")
    res = await eng.attempt("second", follow=False)
    assert res.outcome.value == "passed" and res.changes and res.changes["diff_path"], res.changes
    jd = cfg.journal_path.parent
    diff = (jd / "diffs" / "attempt-2.diff").read_text()
    assert "+KEY_ID = 'AKIA***'" in diff, diff
    files = [p for p in jd.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    assert any(p.parent.name == "manifests" for p in files) and any("objects" in p.parts for p in files)
    for p in files:
        assert secret.encode() not in p.read_bytes(), p
        assert st_mod.S_IMODE(p.stat().st_mode) == 0o600, (p, oct(p.stat().st_mode))
    for d in [jd, *(p for p in jd.rglob("*") if p.is_dir())]:
        assert st_mod.S_IMODE(d.stat().st_mode) == 0o700, (d, oct(d.stat().st_mode))
