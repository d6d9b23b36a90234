"""Secrets in [job.env] never reach the journal as launch evidence (issue 10, in part)."""

from __future__ import annotations

from cockpit.core.actions.job import redact_evidence
from cockpit.core.layers import Evidence


def test_secret_named_values_are_hidden_and_the_rest_kept():
    env = {"HF_TOKEN": "hf_abcdefghijklmnop", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG", "TORCHINDUCTOR_CACHE_DIR": "/tmp/ind"}
    cmd = ("cd /w && env 'HF_TOKEN=hf_abcdefghijklmnop' 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG' "
           "TORCHINDUCTOR_CACHE_DIR=/tmp/ind setsid -f /bin/sh -c …")
    ev = redact_evidence(Evidence(command=cmd, exit_code=1, output="token hf_abcdefghijklmnop rejected"), env)
    assert "hf_abcdefghijklmnop" not in ev.command + ev.output and "wJalrXUtnFEMI" not in ev.command
    assert "HF_TOKEN=***" in ev.command and "/tmp/ind" in ev.command and ev.exit_code == 1


def test_escape_sequences_from_the_journal_never_reach_the_terminal(capsys):
    from cockpit.cli import main
    from cockpit.core.journal import Journal
    from cockpit.core.layers import Layer, Outcome
    from cockpit.demo import demo_config

    cfg = demo_config()
    j = Journal(cfg.journal_path)
    evil = "note \x1b]2;pwned\x07 \x1b[31mred\x1b[0m \x9b31m"
    a = j.start_attempt(evil, "demo")
    j.finish_attempt(a, Outcome.FAILED, layer=Layer.APP, summary=evil, first_error={"label": evil})
    for argv in (["history", "--demo"], ["history", "--demo", "--markdown"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "red" in out, repr(out)
