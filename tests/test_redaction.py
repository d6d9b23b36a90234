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
