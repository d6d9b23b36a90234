"""Notifications that reach you (issue 17): the ``[notify] command`` is a real script that gets the
event's JSON on stdin, the webhook is a real HTTP server on 127.0.0.1; rate limiting, collapsing,
redaction, failures said once, never a crash, nothing in read-only mode; and in the lab a passed
job that later dies notifies through the engine, headless as in the TUI."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.config import Config, ConfigError, load_config, parse_config
from cockpit.core.engine import AttemptResult, Engine
from cockpit.core.events import ActionFinished, FateChanged
from cockpit.core.fate import Fate
from cockpit.core.layers import Layer, Outcome, Stage, Status, Verdict
from cockpit.core.notify import Notifier
from tests.lab.util import await_for

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "T0AAA/B0BBB/xoxSECRETwebhookTOKEN42"
ENV_SECRET = "hf_notify_secret_value_9"
SCHEMA_KEYS = {"schema", "event", "text", "target", "attempt", "outcome", "layer", "summary", "first_error", "error", "fate",
               "note", "trigger", "duration_s", "at", "at_iso", "suppressed", "cockpit_version"}


# -- real parts: a script that records its stdin, an HTTP server that records its requests ----------

def recorder(tmp: Path) -> tuple[list[str], Path]:
    """A real executable script that appends what it read on stdin (and its COCKPIT_* env) to a file."""
    script, out = tmp / "notify-rec", tmp / "got.jsonl"
    script.write_text(f"#!{sys.executable}\n"
                      "import json, os, sys\n"
                      "data = sys.stdin.read()\n"
                      "with open(sys.argv[1], 'a') as f:\n"
                      "    f.write(json.dumps({'stdin': data, 'event': os.environ.get('COCKPIT_EVENT'),\n"
                      "                        'text': os.environ.get('COCKPIT_TEXT'), 'cwd': os.getcwd()}) + '\\n')\n")
    script.chmod(0o755)
    return [str(script), str(out)], out


def received(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


class Hook:
    """A webhook receiver: a real HTTP server on 127.0.0.1 in a thread."""

    def __init__(self, status: int = 200, reply: bytes = b"ok") -> None:
        self.requests: list[dict[str, Any]] = []
        self.status, self.reply = status, reply

    def __enter__(self) -> Hook:
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hook.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                self.send_response(hook.status)
                self.send_header("Content-Length", str(len(hook.reply)))
                self.end_headers()
                self.wfile.write(hook.reply)

            def log_message(self, *args: Any) -> None:  # its access log would print the token
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/services/{TOKEN}"

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_cfg(tmp: Path, notify: str = "", name: str = "box") -> Config:
    (tmp / "ws").mkdir(exist_ok=True)
    path = tmp / "cockpit.toml"
    path.write_text(f"""
[target]
name = "{name}"
transport = "local"
[job]
workdir = "{tmp}/ws"
log = "{tmp}/ws/train-{{attempt}}.log"
[job.env]
HF_TOKEN = "{ENV_SECRET}"
[journal]
path = "{tmp}/j/journal.jsonl"
[gpu]
enabled = false
[loop]
bell = false
tmux = false
[notify]
{notify}
""")
    return load_config(path)


def toml_list(argv: list[str]) -> str:
    return "[" + ", ".join(json.dumps(a) for a in argv) + "]"


def verdict_event(attempt: int, line: str = "RuntimeError: boom", outcome: Outcome = Outcome.FAILED) -> ActionFinished:
    v = Verdict("attempt")
    if outcome is Outcome.FAILED:
        v.add(Stage("verify: progress", Status.FAIL, Layer.APP, "the job crashed"))
    else:
        v.add(Stage("verify: settled", Status.OK, Layer.APP, "settled"))
    v.finish()
    fe = {"label": "FX/dynamo race", "line": line, "layer": "app"} if outcome is Outcome.FAILED else None
    return ActionFinished("attempt", v, AttemptResult(attempt, outcome, v, fe), 12.345, "on-save")


@pytest.fixture
async def engine_for():
    made: list[Engine] = []

    def make(cfg: Config) -> Engine:
        e = Engine(cfg)
        made.append(e)
        return e

    yield make
    for e in made:
        await e.close()


# -- the command --------------------------------------------------------------------------------------

async def test_the_command_gets_the_event_as_json_on_stdin(tmp_path, engine_for):
    argv, out = recorder(tmp_path)
    cfg = make_cfg(tmp_path, f"command = {toml_list(argv)}")
    eng = engine_for(cfg)
    a = eng.journal.start_attempt("serialise the first compile", "box")
    n = Notifier(cfg, terminal=False)
    n.attach(eng)  # through the one door: the engine's events
    t0 = time.monotonic()
    eng.publish(verdict_event(a, f"RuntimeError: auth failed for {ENV_SECRET}\x1b[31m"))
    assert time.monotonic() - t0 < 0.5  # publishing never waits for the command
    got = await await_for(lambda: received(out), timeout=10)
    p = json.loads(got[0]["stdin"])
    assert set(p) == SCHEMA_KEYS
    assert p["schema"] == 1 and p["event"] == "verdict" and got[0]["event"] == "verdict"
    assert (p["target"], p["attempt"], p["outcome"], p["layer"]) == ("box", a, "failed", "app")
    assert p["first_error"] == "FX/dynamo race" and p["error"] == "RuntimeError: auth failed for ***"
    assert p["note"] == "serialise the first compile" and p["trigger"] == "on-save" and p["duration_s"] == 12.35
    assert p["fate"] is None and p["suppressed"] == 0 and p["cockpit_version"]
    assert p["text"] == f"cockpit [box]: attempt {a} FAILED (app): RuntimeError: auth failed for ***" == got[0]["text"]
    assert abs(p["at"] - time.time()) < 60 and p["at_iso"].endswith("Z")
    assert ENV_SECRET not in got[0]["stdin"] and "\x1b" not in got[0]["stdin"]
    assert got[0]["cwd"] == str(tmp_path)  # run here, in the config file's directory, not on the target
    await n.drain()


async def test_a_shell_string_command_runs_in_the_config_directory_with_cockpit_text(tmp_path, engine_for):
    cfg = make_cfg(tmp_path, """command = 'printf "%s|%s" "$COCKPIT_EVENT" "$COCKPIT_TEXT" > said.txt; cat > event.json'""")
    eng = engine_for(cfg)
    Notifier(cfg, terminal=False).attach(eng)
    fate = Fate("died", "app", "exited with code 1: RuntimeError: loss is NaN", time.time(), 252.0, "step 90")
    eng.publish(FateChanged(7, fate, "passed"))
    said = await await_for(lambda: (tmp_path / "event.json").exists() and (tmp_path / "said.txt").read_text(), timeout=10)
    assert said == "died|cockpit [box]: attempt 7 passed → died (app) after 4m12s: exited with code 1: RuntimeError: loss is NaN"
    p = await await_for(lambda: (tmp_path / "event.json").read_text().strip() and json.loads((tmp_path / "event.json").read_text()))
    assert p["event"] == "died" and p["outcome"] == "passed" and p["layer"] == "app"
    assert p["fate"] == {"state": "died", "layer": "app", "cause": "exited with code 1: RuntimeError: loss is NaN",
                         "after_s": 252.0, "last_progress": "step 90"}
    assert p["error"] == "exited with code 1: RuntimeError: loss is NaN" and p["trigger"] is None


async def test_a_failing_or_hanging_command_is_said_once_and_never_crashes(tmp_path, engine_for):
    cfg = make_cfg(tmp_path, 'command = "echo $$ > pid; echo cannot reach the desktop >&2; exit 3"\ntimeout = 5')
    eng = engine_for(cfg)
    said: list[str] = []
    n = Notifier(cfg, terminal=False, report=said.append)
    n.attach(eng)
    eng.publish(verdict_event(1))
    eng.publish(verdict_event(2))
    await n.drain()
    assert len(said) == 1 and "notify command failed: exit code 3: cannot reach the desktop" in said[0], said
    assert len(n.sent) == 2 and len(n.errors) == 1

    hang = make_cfg(tmp_path, 'command = "echo $$ > pid; exec sleep 30"\ntimeout = 0.5')
    said.clear()
    (tmp_path / "pid").unlink()
    n = Notifier(hang, terminal=False, report=said.append)
    n.attach(engine_for(hang))
    t0 = time.monotonic()
    n(verdict_event(3))
    assert time.monotonic() - t0 < 0.5
    await n.drain()
    assert said and "still running after 0.5s: killed" in said[0]
    pid = int((tmp_path / "pid").read_text())
    await await_for(lambda: not Path(f"/proc/{pid}").exists(), timeout=5)


# -- the webhook ---------------------------------------------------------------------------------------

async def test_notifications_pass_the_configs_redactor_builtin_shapes_and_user_patterns(tmp_path, engine_for):
    with Hook() as hook:
        cfg = make_cfg(tmp_path, f'webhook = "{hook.url}"\n[redact]\npatterns = ["ticket-[0-9]{{6}}"]')
        eng = engine_for(cfg)
        a = eng.journal.start_attempt("see ticket-123456", "box")
        n = Notifier(cfg, terminal=False)
        n.attach(eng)
        eng.publish(verdict_event(a, "HTTPError 401 for hf_abcdefghijklmnopqrstuvwxyz0123456789"))
        reqs = await await_for(lambda: hook.requests, timeout=10)
        await n.drain()
    body = reqs[0]["body"].decode()
    assert "hf_abcdefghijklmnopqrstuvwxyz0123456789" not in body and "hf_***" in body
    assert "ticket-123456" not in body and "***" in json.loads(body)["note"]


async def test_the_webhook_gets_a_slack_compatible_body_and_the_url_never_leaks(tmp_path, engine_for, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    with Hook() as hook:
        cfg = make_cfg(tmp_path, f'webhook = "{hook.url}"')
        eng = engine_for(cfg)
        a = eng.journal.start_attempt(f"try the token {ENV_SECRET}", "box")
        n = Notifier(cfg, terminal=False)
        n.attach(eng)
        eng.publish(verdict_event(a, "RuntimeError: <!channel> & <http://evil|click> " + hook.url))
        reqs = await await_for(lambda: hook.requests, timeout=10)
        await n.drain()
    r = reqs[0]
    assert r["path"] == f"/services/{TOKEN}" and r["headers"]["Content-Type"] == "application/json"
    body = json.loads(r["body"])
    assert list(body)[0] == "text" and set(body) == SCHEMA_KEYS
    assert "&lt;!channel&gt; &amp; &lt;http://evil|click&gt;" in body["text"] and "<!channel>" not in body["text"]
    assert body["event"] == "verdict" and body["attempt"] == a and body["note"] == "try the token ***"
    assert TOKEN not in r["body"].decode() and "xoxSECRET" not in r["body"].decode()  # the URL in a log line is masked too
    assert f"http://127.0.0.1:{hook.server.server_address[1]}/***" in body["error"]
    err = capsys.readouterr()
    logged = "\n".join(rec.getMessage() for rec in caplog.records)
    for text in (err.out, err.err, logged):
        assert "xoxSECRET" not in text


async def test_a_webhook_error_or_an_unreachable_one_is_said_once_without_the_token(tmp_path, engine_for, caplog):
    caplog.set_level(logging.DEBUG)
    with Hook(status=403, reply=f"invalid token in /services/{TOKEN}".encode()) as hook:
        cfg = make_cfg(tmp_path, f'webhook = "{hook.url}"\ntimeout = 3')
        said: list[str] = []
        n = Notifier(cfg, terminal=False, report=said.append)
        n.attach(engine_for(cfg))
        for i in (1, 2, 3):
            n(verdict_event(i))
        await n.drain()
        assert len(hook.requests) == 3  # one POST per notification: no retries
    assert len(said) == 1 and "HTTP 403" in said[0] and "/***" in said[0], said
    url = f"http://127.0.0.1:{closed_port()}/services/{TOKEN}"
    cfg = make_cfg(tmp_path, f'webhook = "{url}"\ntimeout = 3')
    said2: list[str] = []
    n = Notifier(cfg, terminal=False, report=said2.append)
    n.attach(engine_for(cfg))
    n(verdict_event(1))
    n(verdict_event(2))
    await n.drain()
    assert len(said2) == 1 and "cannot reach it" in said2[0], said2
    logged = "\n".join(rec.getMessage() for rec in caplog.records)
    for text in (*said, *said2, logged):
        assert "xoxSECRET" not in text and TOKEN not in text


# -- rate limit, collapse, read-only ------------------------------------------------------------------

async def test_rate_limit_and_identical_events_collapsed(tmp_path, engine_for):
    argv, out = recorder(tmp_path)
    cfg = make_cfg(tmp_path, f"command = {toml_list(argv)}\nmax_per_minute = 2")
    now = [1000.0]
    n = Notifier(cfg, terminal=False, clock=lambda: now[0])
    n.attach(engine_for(cfg))
    n(verdict_event(1))
    n(verdict_event(1))  # the same verdict again: collapsed
    for i in (2, 3, 4, 5):
        n(verdict_event(i))
    await n.drain()
    assert [json.loads(g["stdin"])["attempt"] for g in received(out)] == [1, 2]
    assert n.collapsed == 1 and n.suppressed == 3
    now[0] += 61
    n(verdict_event(6))
    await n.drain()
    last = json.loads(received(out)[-1]["stdin"])
    assert last["attempt"] == 6 and last["suppressed"] == 3 and last["text"].endswith("(+3 more not sent: rate limit)")
    now[0] += 61
    n(verdict_event(1))  # the collapse lasts 10 minutes, not for ever: still collapsed here
    now[0] += 600
    n(verdict_event(1))
    # a job that stalls, resumes and stalls again (its cause says for how long) is told once
    n(FateChanged(6, Fate("stalled", "app", "no progress for 2m10s", 1.0), "passed"))
    n(FateChanged(6, Fate("stalled", "app", "no progress for 2m40s", 2.0), "passed"))
    await n.drain()
    assert [json.loads(g["stdin"])["attempt"] for g in received(out)] == [1, 2, 6, 1, 6]
    assert n.collapsed == 3


async def test_what_on_selects(tmp_path, engine_for):
    argv, out = recorder(tmp_path)
    cfg = make_cfg(tmp_path, f'command = {toml_list(argv)}\non = ["failed", "finished"]')
    n = Notifier(cfg, terminal=False)
    n.attach(engine_for(cfg))
    n(verdict_event(1, outcome=Outcome.PASSED))
    n(verdict_event(2))
    n(FateChanged(1, Fate("stalled", "app", "no progress for 3m", 1.0), "passed"))
    n(FateChanged(2, Fate("died", "app", "exit 1", 1.0), "failed"))  # a failed attempt's job dying is no news
    n(FateChanged(1, Fate("finished", None, "exited with code 0", 2.0), "passed"))
    await n.drain()
    sent = [json.loads(g["stdin"]) for g in received(out)]
    assert [(p["event"], p["attempt"]) for p in sent] == [("verdict", 2), ("finished", 1)]


async def test_nothing_in_read_only_mode(tmp_path, engine_for):
    argv, out = recorder(tmp_path)
    with Hook() as hook:
        cfg = make_cfg(tmp_path, f'command = {toml_list(argv)}\nwebhook = "{hook.url}"')
        eng = engine_for(cfg)
        n = Notifier(cfg, read_only=True, bell=lambda: pytest.fail("the bell rang in read-only mode"))
        n.attach(eng)
        eng.publish(verdict_event(1))
        eng.publish(FateChanged(1, Fate("died", "app", "exit 1", 1.0), "passed"))
        await n.drain()
        probe = Notifier(cfg, terminal=False)  # a second, writable notifier proves the channels work
        probe.attach(eng)
        eng.publish(verdict_event(2))
        await await_for(lambda: received(out) and hook.requests, timeout=10)
        await probe.drain()
    assert [json.loads(g["stdin"])["attempt"] for g in received(out)] == [2] and len(hook.requests) == 1
    assert not n.sent


async def test_the_tui_notifies_through_the_engine_and_not_in_read_only(tmp_path):
    from tests.test_ui_loop import SIZE, make_app

    for read_only in (False, True):
        d = tmp_path / ("ro" if read_only else "rw")
        d.mkdir()
        argv, out = recorder(d)
        app = make_app(d, read_only=read_only)
        app.cfg.notify.command = argv
        async with app.run_test(size=SIZE):
            app.engine.publish(FateChanged(3, Fate("died", "app", "RuntimeError: loss is NaN", time.time(), 10.0), "passed"))
            if not read_only:
                got = await await_for(lambda out=out: received(out), timeout=10)
                assert json.loads(got[0]["stdin"])["event"] == "died"
        assert read_only is bool(not received(out))


# -- config -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, key, words", [
    ('[notify]\nwebhok = "https://x"\n', "notify.webhok", "did you mean 'webhook'"),
    ('[notify]\non = ["verdit"]\n', "notify.on[0]", 'did you mean "verdict"'),
    ('[notify]\non = ["verdict", "exploded"]\n', "notify.on[1]", '"died"'),
    ('[notify]\nwebhook = "ftp://hooks.example/xoxSECRET"\n', "notify.webhook", "its scheme is 'ftp'"),
    ('[notify]\nwebhook = "hooks.slack.com/services/xoxSECRET"\n', "notify.webhook", "http:// or https://"),
    ('[notify]\nwebhook = "https://hooks.example:notaport/xoxSECRET"\n', "notify.webhook", "not an http(s) URL"),
    ('[notify]\ncommand = "  "\n', "notify.command", "empty"),
    ('[notify]\ncommand = []\n', "notify.command", "empty"),
    ('[notify]\ncommand = ["notify-send", 3]\n', "notify.command[1]", "string"),
    ('[notify]\ntimeout = 0\n', "notify.timeout", "greater than 0"),
    ('[notify]\nmax_per_minute = -1\n', "notify.max_per_minute", "0 or more"),
])
def test_config_errors_name_the_file_the_key_and_the_fix_and_never_the_token(tmp_path, text, key, words):
    p = tmp_path / "cockpit.toml"
    p.write_text('[target]\nhost = "x"\n' + text)
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    e = ei.value
    assert e.key == key and str(p) in e.message and words in e.message and e.fix, e.message
    assert "xoxSECRET" not in e.message


def test_defaults_and_check_config_masks_the_webhook(tmp_path, capsys):
    from cockpit.cli import main

    cfg = parse_config('[target]\nhost = "x"\n')
    assert cfg.notify.on == ["verdict", "died", "diverged", "vanished", "stalled"] and cfg.notify.command is None
    p = tmp_path / "cockpit.toml"
    p.write_text(f'[target]\nhost = "x"\n[notify]\nwebhook = "https://hooks.slack.com/services/{TOKEN}"\ncommand = ["notify-send", "cockpit"]\n')
    assert main(["check-config", "--config", str(p), "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["notify"]["webhook"] == "https://hooks.slack.com/***"
    assert "xoxSECRET" not in out.out + out.err


def test_the_sample_config_documents_notify():
    from cockpit.core.config import NotifyConfig, section_docs

    text = (ROOT / "sample_config.toml").read_text()
    assert "[notify]" in text
    for key in section_docs(NotifyConfig):
        assert f"\n{key} =" in text or f"# {key} =" in text, f"notify.{key} undocumented"


# -- the lab: a passed job that dies later notifies, headless and through the engine -----------------

def jobsim(lab: Any, *args: Any) -> str:
    return lab.jobsim_command(*[str(a) for a in args])


@pytest.mark.lab
async def test_a_passed_job_that_dies_later_notifies_the_command_and_the_webhook(lab, lab_config, engines, tmp_path):
    argv, out = recorder(tmp_path)
    go = f"{lab.workspace()}/late-crash.go"  # the crash waits for it: created once the attempt has passed
    lab.exec_in(200, f"rm -f {go}")
    with Hook() as hook:
        cfg = lab_config(job={"command": jobsim(lab, "--steps", 0, "--interval", 0.05, "--crash", "exc", "--crash-at", 40, "--go-file", go)},
                         notify={"command": argv, "webhook": hook.url})
        eng = engines(cfg)
        n = Notifier(cfg, terminal=False)
        n.attach(eng)
        res = await eng.attempt("late crash")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        lab.exec_in(200, f"touch {go}")
        got = await await_for(lambda: len(received(out)) >= 2 and received(out), timeout=20)
        await await_for(lambda: len(hook.requests) >= 2, timeout=10)
        await n.drain()
    events = [json.loads(g["stdin"]) for g in got]
    assert [e["event"] for e in events] == ["verdict", "died"]
    v, died = events
    assert v["outcome"] == "passed" and v["attempt"] == res.attempt and v["note"] == "late crash" and v["target"] == "lab"
    assert died["outcome"] == "passed" and died["layer"] == "app" and died["fate"]["state"] == "died"
    assert "loss is NaN" in died["error"] and died["fate"]["after_s"] > 1.0 and died["note"] == "late crash"
    assert died["text"].startswith(f"cockpit [lab]: attempt {res.attempt} passed → died (app) after ")
    bodies = [json.loads(r["body"]) for r in hook.requests]
    assert [b["event"] for b in bodies] == ["verdict", "died"] and "loss is NaN" in bodies[1]["text"]


@pytest.mark.lab
def test_headless_cockpit_attempt_notifies_before_it_exits(lab, lab_config, tmp_path):
    argv, out = recorder(tmp_path)
    cfg = lab_config(job={"command": jobsim(lab, "--steps", 0, "--interval", 0.05)}, notify={"command": argv})
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "cockpit", "attempt", "--config", str(cfg.path), "--note", "headless", "--json"],
                       env=env, capture_output=True, text=True, timeout=90)
    try:
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        got = received(out)  # no waiting: the process delivered before it exited
        assert len(got) == 1, got
        p = json.loads(got[0]["stdin"])
        assert (p["event"], p["outcome"], p["note"], p["trigger"]) == ("verdict", "passed", "headless", "cli")
    finally:
        subprocess.run([sys.executable, "-m", "cockpit", "stop", "--config", str(cfg.path)], env=env, capture_output=True, timeout=60)
