"""Secrets stay out of the journal, diffs, snapshots and exports (issue 10): the redactor's rules,
with real-looking secrets that must go and look-alikes that must stay (false positives destroy
evidence), and each place it is applied."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from cockpit.core.actions.job import redact_evidence
from cockpit.core.config import ConfigError, parse_config
from cockpit.core.layers import Evidence
from cockpit.core.redact import LineRedactor, Redactor, secret_env_name

HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"

#: (text, the part that must not survive)
SECRETS = [
    (f"login with {HF} ok", HF[3:]),
    ("using AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("ASIAY34FZKBOKMUTVV7A session", "Y34FZKBOKMUTVV7A"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3"),
    ("curl -H 'Authorization: token 0123456789abcdef0123456789abcdef01234567' https://api", "0123456789abcdef"),
    ("retrying with Bearer abcDEF0123456789xyzXYZ", "abcDEF0123456789"),
    ("git clone https://ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@github.com/o/r", "ABCDEFGHIJKLMNOP"),
    ("GITHUB_PAT github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "11ABCDEFG0123456789"),
    ("openai.AuthenticationError: Incorrect API key provided: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34", "Ab12Cd34Ef56"),
    ("slack token xoxb-1234567890-abcdefghij", "1234567890-abcdefghij"),
    ("wandb: WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef"),
    ("export HF_TOKEN=somethingelse12345", "somethingelse12345"),
    ("db password: hunter2", "hunter2"),
    ("config {'api_key': 'abcdefgh12345678', 'lr': 0.1}", "abcdefgh12345678"),
    ('{"client_secret": "xyz"}', '"xyz"'),
    ("python train.py --hf-token someToken123456 --lr 3e-4", "someToken123456"),
    ("python train.py --api-key=zzzzzzzzzz12", "zzzzzzzzzz12"),
    ("connecting to postgres://admin:Pa55w0rd@db:5432/x", "Pa55w0rd"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75vXt\nqS1k9lWfZ\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA75vXt"),
    ("GET https://host/dl?token=abcdef123456&x=1", "abcdef123456"),
    ('PASSWORD="my secret pw" ./run', "my secret pw"),
]

#: look-alikes that are evidence and must come back unchanged
KEEP = [
    "step 1200/5000 loss=1.83 lr=3e-4 grad_norm=0.91",
    "commit a3f9c2e1b4d5f6a7b8c9d0e1f2a3b4c5d6e7f8a9",
    "/workspace/.cache/huggingface/hub/models--meta-llama--Llama-2-7b/snapshots/8cca527612d856d7d32bd94f8103728d614eb852/config.json",
    "KEY_DIM=128 key_dim: 128 step 1024",
    "max_tokens=512 num_tokens: 4096 TOKENIZERS_PARALLELISM=false tokenizer_path=/models/tok pad_token_id=0 tokens/s: 1234.5",
    "password_file=/run/secrets/db secret_name=my-secret --password-file /run/pw --token-path /x",
    "https://huggingface.co/meta-llama/Llama-2-7b ssh://git@github.com/org/repo http://[::1]:8080/x@y",
    "hf_hub_download HF_HOME=/root/.cache/huggingface HF_TOKEN=$HF_TOKEN --hf-token ${HF_TOKEN}",
    "sk-learn task-0123456789abcdefghijkl risk-adjusted",
    "ASIAN-PACIFIC AKIAL",
    "Bearer of bad news",
    "api_key: None token: null password: ''",
    "-----BEGIN CERTIFICATE-----",
    "run_id=8f14e45f-ceea-467f-a9b5-3d2c1b0a9e8f",
    "eos token: 50256 pad_token: <pad> bos_token=<s>",
    "    api_key = args.api_key",
    '    token = os.environ["HF_TOKEN"]',
    "[rank0]: RuntimeError: CUDA error: out of memory on cuda:0",
    "HF_TOKEN=*** hf_*** sk-*** Authorization: Bearer ***",
]


@pytest.mark.parametrize("text, secret", SECRETS, ids=[s[:30] for s, _ in SECRETS])
def test_real_looking_secrets_are_hidden_with_a_hint(text, secret):
    out = Redactor()(text)
    assert secret not in out and "***" in out, out
    assert Redactor()(out) == out  # twice is once


@pytest.mark.parametrize("text", KEEP, ids=[s[:30] for s in KEEP])
def test_look_alikes_are_evidence_and_stay(text):
    assert Redactor()(text) == text


def test_hints_say_what_was_hidden():
    red = Redactor()
    assert red(f"tok {HF}") == "tok hf_***"
    assert red("AKIAIOSFODNN7EXAMPLE") == "AKIA***"
    assert red("HF_TOKEN=abcdefghijkl") == "HF_TOKEN=***"
    assert red("https://bob:pw123456@host/x") == "https://bob:***@host/x"


def test_which_env_names_are_secret():
    secret = ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "GITHUBTOKEN", "DB_PASSWORD", "DB_PASS", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY",
              "APIKEY", "SSH_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "HF_AUTH", "MY_SECRET_THING"]
    plain = ["KEY_DIM", "PWD", "AUTHOR", "BYPASS_CACHE", "TORCHINDUCTOR_CACHE_DIR", "PYTHONUNBUFFERED", "KEYS_DIR", "HF_HOME"]
    assert [n for n in secret if not secret_env_name(n)] == []
    assert [n for n in plain if secret_env_name(n)] == []


def test_env_values_hidden_in_every_quoting_and_short_or_numeric_values_only_as_pairs():
    red = Redactor({"HF_TOKEN": "tok-0123456789", "DB_PASSWORD": "it's s3cret", "MY_SECRET": "1024", "KEY_DIM": "abcdefgh"})
    out = red("env 'HF_TOKEN=tok-0123456789' 'DB_PASSWORD=it'\"'\"'s s3cret' MY_SECRET=1024 KEY_DIM=abcdefgh; "
              "echo tok-0123456789 'it'\"'\"'s s3cret'; step 1024")
    assert "tok-0123456789" not in out and "s3cret" not in out
    assert "HF_TOKEN=***" in out and "DB_PASSWORD=***" in out and "MY_SECRET=***" in out
    assert out.endswith("step 1024") and "KEY_DIM=abcdefgh" in out  # a number is not hidden everywhere; KEY_DIM is no secret


def test_secret_named_values_are_hidden_and_the_rest_kept():
    env = {"HF_TOKEN": "hf_abcdefghijklmnop", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG", "TORCHINDUCTOR_CACHE_DIR": "/tmp/ind"}
    cmd = ("cd /w && env 'HF_TOKEN=hf_abcdefghijklmnop' 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG' "
           "TORCHINDUCTOR_CACHE_DIR=/tmp/ind setsid -f /bin/sh -c …")
    ev = redact_evidence(Evidence(command=cmd, exit_code=1, output="token hf_abcdefghijklmnop rejected"), env)
    assert "hf_abcdefghijklmnop" not in ev.command + ev.output and "wJalrXUtnFEMI" not in ev.command
    assert "HF_TOKEN=***" in ev.command and "/tmp/ind" in ev.command and ev.exit_code == 1


def test_user_patterns_and_a_secret_group_and_builtin_off():
    red = Redactor(patterns=[r"corp-[0-9a-f]{8}", r"internal_id=(?P<secret>\w+)"], builtin=False)
    assert red("key corp-0a1b2c3d, internal_id=alice7 hf_AbCdEfGhIjKlMnOpQrStUvWx") == \
        "key ***, internal_id=*** hf_AbCdEfGhIjKlMnOpQrStUvWx"


@pytest.mark.parametrize("pattern, words", [("(bad", "not a valid regular expression"), ("a*", "matches the empty string")])
def test_a_bad_user_pattern_is_a_config_error_naming_file_key_and_fix(tmp_path, pattern, words):
    p = tmp_path / "cockpit.toml"
    p.write_text(f'[target]\nhost = "x"\n[redact]\npatterns = ["ok", {json.dumps(pattern)}]\n')
    from cockpit.core.config import load_config

    with pytest.raises(ConfigError) as ei:
        load_config(p)
    e = ei.value
    assert e.path == str(p) and e.key == "redact.patterns" and f"[1] {pattern!r}" in e.problem and words in e.problem
    assert "regular expressions" in e.fix and "corp-[0-9a-f]{32}" in e.fix
    cfg = parse_config('[target]\nhost = "x"\n[redact]\npatterns = ["corp-\\\\d+"]\nbuiltin = false\n')
    assert cfg.redact.patterns == ["corp-\\d+"] and cfg.redact.builtin is False


def test_a_private_key_in_a_log_stream_is_hidden_line_by_line():
    lr = LineRedactor(Redactor())
    lines = ["loading", "-----BEGIN OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "AAAAMwAAAAtzc2gtZW",
             "-----END OPENSSH PRIVATE KEY-----", "step 1"]
    out = [lr(x) for x in lines]
    assert out[0] == "loading" and out[-1] == "step 1" and out[2] == out[3] == "***"
    assert not any("b3BlbnNz" in x or "AAAAMw" in x for x in out)


def test_the_journal_is_redacted_on_disk_except_the_paths_that_find_the_job(tmp_path):
    from cockpit.core.journal import Journal

    j = Journal(tmp_path / ".cockpit" / "journal.jsonl", Redactor({"HF_TOKEN": "tok-0123456789"}, ["corp-[0-9]{4}"]))
    a = j.start_attempt(f"try with {HF} and corp-1234", "lab")
    j.record_job(a, {"pid": 7, "pgid": 7, "command": "train --token tok-0123456789", "log_path": "/w/corp-1234/train-1.log"})
    data = j.path.read_text()
    assert HF[3:] not in data and "tok-0123456789" not in data and "hf_***" in data
    assert j.get(a).job["log_path"] == "/w/corp-1234/train-1.log"  # verbatim: a later cockpit must find the job
    assert j.get(a).job["command"] == "train --token ***"
    assert stat.S_IMODE(j.path.stat().st_mode) == 0o600 and stat.S_IMODE(j.path.parent.stat().st_mode) == 0o700


def test_snapshots_and_diffs_hold_no_secret_and_say_when_only_a_secret_changed(tmp_path):
    from cockpit.core.changes import read_diff, record_attempt_changes
    from cockpit.core.journal import Journal

    src = tmp_path / "src"
    src.mkdir()
    train = src / "train.py"
    j = Journal(tmp_path / ".cockpit" / "journal.jsonl", Redactor())
    train.write_text(f'TOKEN = "{HF}"\nsteps = 10\n')
    record_attempt_changes(j, 1, src)
    train.write_text(f'TOKEN = "{HF}"\nsteps = 20\n')
    d2 = record_attempt_changes(j, 2, src)
    train.write_text('TOKEN = "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa987654"\nsteps = 20\n')
    d3 = record_attempt_changes(j, 3, src)
    jd = j.path.parent
    stored = b"".join(p.read_bytes() for p in jd.rglob("*") if p.is_file() and p != j.path)
    assert HF[3:].encode() not in stored and b"ZyXwVuTsRq" not in stored
    diff2 = read_diff(jd, 2) or ""
    assert "+steps = 20" in diff2 and HF[3:] not in diff2
    assert d3["changes"][0]["detail"] == "changed only in redacted text (a secret)", d3
    assert d2["added"] == 1 and d2["removed"] == 1
    for p in jd.rglob("*"):
        want = 0o700 if p.is_dir() else 0o600
        assert stat.S_IMODE(p.stat().st_mode) == want, (p, oct(p.stat().st_mode))


def _raw_journal(path: Path, *events: dict) -> None:
    """A journal as an older cockpit wrote it: no redaction at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"v": 1, "ts": 1733130000.0 + i, **ev}) + "\n" for i, ev in enumerate(events)))


def test_history_exports_redact_an_older_journal_by_default(tmp_path, capsys):
    from cockpit.cli import main

    conf = tmp_path / "cockpit.toml"
    conf.write_text(f'[target]\nname = "lab"\ntransport = "local"\n[job]\nworkdir = "{tmp_path}"\n[job.env]\nDB_PASSWORD = "s3cret-pw-42"\n'
                    f'[journal]\npath = "{tmp_path}/journal.jsonl"\n[redact]\npatterns = ["corp-[0-9]{{4}}"]\n')
    _raw_journal(tmp_path / "journal.jsonl",
                 {"event": "attempt_started", "attempt": 1, "note": f"with {HF} corp-1234", "target": "lab"},
                 {"event": "stage", "attempt": 1, "action": "launch", "stage": {
                     "name": "spawn", "status": "fail", "layer": "process", "detail": "login failed: password s3cret-pw-42",
                     "evidence": {"command": "env 'DB_PASSWORD=s3cret-pw-42' python train.py", "exit_code": 1, "output": ""}}},
                 {"event": "attempt_finished", "attempt": 1, "outcome": "untested", "layer": "process",
                  "summary": "spawn failed: s3cret-pw-42", "first_error": {"label": f"401 for {HF}"}})
    for fmt in (["--markdown"], ["--json"], []):
        assert main(["history", "-c", str(conf), *fmt]) == 0
        out = capsys.readouterr().out
        assert HF[3:] not in out and "s3cret-pw-42" not in out and "corp-1234" not in out, (fmt, out)
        assert "***" in out
    assert main(["history", "-c", str(conf), "--json", "--no-redact"]) == 0
    out = capsys.readouterr().out
    assert "s3cret-pw-42" in out and HF in out


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
