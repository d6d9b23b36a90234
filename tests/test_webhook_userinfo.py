"""A webhook URL with ``user:password@``: the userinfo leaves the URL and travels as an
``Authorization: Basic`` header (urllib took ``user:password@127.0.0.1`` for a host name and
failed with "Name or service not known"), and it is masked wherever the URL is shown."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.config import ConfigError, parse_config
from cockpit.core.notify.hooks import post_webhook, scrub_url

USER, PASSWORD = "alice", "s3cr@t pw-123"
QUOTED = "s3cr%40t%20pw-123"  # the password as the URL must spell it


class Receiver:
    """A real HTTP server on 127.0.0.1 that records each POST (its path and headers)."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = status

    def __enter__(self) -> Receiver:
        rec = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                rec.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = b"no" if rec.status >= 400 else b"ok"
                self.send_response(rec.status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, userinfo: str = f"{USER}:{QUOTED}") -> str:
        return f"http://{userinfo}@127.0.0.1:{self.port}/hooks/T0KEN-abcdef123"

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


async def test_userinfo_is_sent_as_basic_auth_to_the_bare_host() -> None:
    with Receiver() as hook:
        err = await post_webhook(hook.url(), {"text": "verdict"}, timeout=5)
    assert err is None, err
    r = hook.requests[0]
    want = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert r["headers"]["Authorization"] == want
    assert r["headers"]["Host"] == f"127.0.0.1:{hook.port}" and r["path"] == "/hooks/T0KEN-abcdef123"
    assert json.loads(r["body"]) == {"text": "verdict"}


async def test_a_user_without_a_password_and_no_userinfo_at_all() -> None:
    with Receiver() as hook:
        assert await post_webhook(hook.url("bot"), {"text": "x"}, timeout=5) is None
        assert await post_webhook(f"http://127.0.0.1:{hook.port}/plain", {"text": "y"}, timeout=5) is None
    first, second = hook.requests
    assert first["headers"]["Authorization"] == "Basic " + base64.b64encode(b"bot:").decode()
    assert "Authorization" not in second["headers"] and second["path"] == "/plain"


async def test_an_error_answer_never_shows_the_userinfo() -> None:
    with Receiver(status=401) as hook:
        err = await post_webhook(hook.url(), {"text": "x"}, timeout=5)
    assert err is not None and err.startswith("HTTP 401")
    assert USER not in err and "s3cr" not in err and "T0KEN" not in err
    said = scrub_url(f"posting to {hook.url()} failed; auth {USER}:{QUOTED}@ was refused", hook.url())
    assert "s3cr" not in said and f"http://127.0.0.1:{hook.port}/***" in said


def test_check_config_masks_the_userinfo(tmp_path: Path) -> None:
    with Receiver() as hook:
        url = hook.url()
    p = tmp_path / "cockpit.toml"
    p.write_text(f'[target]\nhost = "gpu1"\n[notify]\nwebhook = "{url}"\n')
    r = subprocess.run([sys.executable, "-m", "cockpit", "check-config", "--json", "--config", str(p)],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["notify"]["webhook"] == f"http://127.0.0.1:{hook.port}/***"
    out = r.stdout + r.stderr
    assert USER not in out and "s3cr" not in out and "T0KEN" not in out


@pytest.mark.parametrize("url", ["https://hooks.example/a b", "https://hooks.example/x\ty", "https://u:p\x1b]2;x\x07@hooks.example/"])
def test_a_webhook_with_a_space_or_control_character_is_refused_without_echoing_it(url: str) -> None:
    text = '[target]\nhost = "gpu1"\n[notify]\nwebhook = ' + json.dumps(url) + "\n"
    with pytest.raises(ConfigError) as ei:
        parse_config(text)
    assert ei.value.key == "notify.webhook" and "hooks.example" not in ei.value.message and "\x1b" not in ei.value.message
