"""``cockpit serve`` in a real headless Chromium (Debian's package), driven over the DevTools
protocol: the page needs its token, loads, shows the four panes through textual-serve's
WebSocket, keys reach the app (``?`` opens the help) and no action key acts (read-only: no
attempt is recorded).

The terminal is drawn on a canvas (xterm.js), so the test reads what the app sent: a script
added before the page loads records every WebSocket frame the page receives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.lab.util import WaitTimeout, await_for, free_port, wait_for

pytest.importorskip("textual_serve", reason="cockpit serve needs textual-serve (pip install 'cockpit[serve]')")
aiohttp = pytest.importorskip("aiohttp")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/test installs Debian's chromium package)")

RECORDER = """
(() => {
  window.__rx = "";
  const dec = new TextDecoder();
  const Real = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Real(...args);
    ws.addEventListener("message", (ev) => {
      if (ev.data instanceof ArrayBuffer) { window.__rx += dec.decode(ev.data, {stream: true}); }
      else if (typeof ev.data === "string") { window.__rx += ev.data; }
    });
    return ws;
  };
  window.WebSocket.prototype = Real.prototype;
  Object.assign(window.WebSocket, Real);
})();
"""
_ESC = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


def _plain(raw: str) -> str:
    return _ESC.sub("", raw)


class CDP:
    """The smallest DevTools-protocol client: call(method, **params) over one page's WebSocket."""

    def __init__(self, ws: object) -> None:
        self.ws = ws
        self.n = 0

    async def call(self, method: str, **params: object) -> dict:
        self.n += 1
        mine = self.n
        await self.ws.send_json({"id": mine, "method": method, "params": params})  # type: ignore[attr-defined]
        while True:
            msg = await self.ws.receive_json(timeout=30)  # type: ignore[attr-defined]
            if msg.get("id") == mine:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    async def screen(self) -> str:
        r = await self.call("Runtime.evaluate", expression="window.__rx || ''", returnByValue=True)
        return _plain(r.get("result", {}).get("value", ""))

    async def key(self, text: str) -> None:
        if text == "Escape":  # a named key: its key code, no text (xterm sends ESC for keyCode 27)
            await self.call("Input.dispatchKeyEvent", type="rawKeyDown", key="Escape", code="Escape",
                            windowsVirtualKeyCode=27, nativeVirtualKeyCode=27)
        else:
            await self.call("Input.dispatchKeyEvent", type="keyDown", key=text, text=text, unmodifiedText=text)
        await self.call("Input.dispatchKeyEvent", type="keyUp", key=text)


@pytest.fixture
def served(tmp_path):
    """``cockpit serve --demo`` on a free port with a known token, HOME in tmp_path."""
    port, token = free_port(), "t0ken-for-the-test"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "cockpit", "serve", "--demo", "--port", str(port), "--token", token],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
                            start_new_session=True)  # its apps too are ended with its group at the end

    def up() -> bool:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/static/css/xterm.css", timeout=1).read()
            return True
        except OSError:
            return False

    wait_for(up, 30, "cockpit serve listening")
    yield port, token, tmp_path
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    with contextlib.suppress(ProcessLookupError):  # an app the server started and left behind
        os.killpg(proc.pid, signal.SIGKILL)


def test_without_the_token_nothing_but_static_files(served):
    port, token, _ = served
    for path in ("/", "/?token=wrong", "/ws/wrong", f"/?token={token}x"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5)
        assert e.value.code == 403, path
    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={token}", timeout=5).read().decode()
    assert f'data-session-websocket-url="ws://127.0.0.1:{port}/ws/{token}"' in page


async def test_the_page_shows_the_panes_and_no_action_key_acts(served, tmp_path):
    port, token, home = served
    chrome = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--remote-debugging-port=0", f"--user-data-dir={tmp_path / 'chrome'}",
                               "--window-size=1400,900", "about:blank"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        devtools = None
        t0 = time.monotonic()
        assert chrome.stderr is not None
        while devtools is None and time.monotonic() - t0 < 30:
            line = await asyncio.to_thread(chrome.stderr.readline)
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                devtools = m.group(1)
            assert line or chrome.poll() is None, "chromium exited"
        assert devtools, "chromium printed no DevTools address"
        http = "http://" + devtools.split("/")[2]
        async with aiohttp.ClientSession() as s:
            pages = await (await s.get(f"{http}/json/list")).json()
            page = next(p for p in pages if p["type"] == "page")
            async with s.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                cdp = CDP(ws)
                await cdp.call("Page.enable")
                await cdp.call("Page.addScriptToEvaluateOnNewDocument", source=RECORDER)
                await cdp.call("Page.navigate", url=f"http://127.0.0.1:{port}/?token={token}")
                titles = ("processes [1]", "log [2]", "GPUs [3]", "attempts [4]")
                screen = await await_for(lambda: _has(cdp, (*titles, "READ-ONLY")), 60, "the four panes in the browser")
                assert "SHARED" in screen  # --share: read-only and redacted
                await cdp.call("Runtime.evaluate", expression="document.querySelector('.xterm-helper-textarea')?.focus()")
                # a key that is not an action works: the help opens (keys do reach the app)
                await cdp.key("?")
                await await_for(lambda: _has(cdp, ("cockpit help",)), 30, "the help screen")
                mark = len(await cdp.screen())
                await cdp.key("Escape")  # closed once the panes are drawn again (a loaded machine is slow to)
                await await_for(lambda: _after(cdp, mark, "processes [1]"), 30, "the help to close")
                before = len(await cdp.screen())
                # the action keys: attempt, deploy, stop, reboot; then the help again as a marker
                for k in ("t", "D", "S", "R"):
                    await cdp.key(k)
                # drawn again, the help may reach the terminal in pieces (only the cells that differ
                # from the frame before are sent): matched without spaces, by either of two phrases
                seen: dict[str, str] = {"tail": ""}

                async def help_again() -> str | None:
                    seen["tail"] = (await cdp.screen())[before:]
                    return await _after_any(cdp, before, ("cockpit help", "every action is disabled"))

                # On a machine loaded by the rest of the suite a key sent while the page is busy can
                # be lost on its way through xterm.js; `?` toggles the help and the stream keeps every
                # frame, so pressing it again can only make the help show (never hide a showing).
                after = None
                for _ in range(3):
                    await cdp.key("?")
                    try:
                        after = await await_for(help_again, 20, "the help again")
                        break
                    except WaitTimeout:
                        continue
                assert after is not None, f"the help again, after the action keys; the terminal got: {seen['tail'][-1500:]!r}"
                prompts = ("What does this attempt test?", "Reboot the container?", "Stop the job?", "Relaunch the job?")
                assert not [p for p in prompts if p in after], after[-2000:]  # no action's prompt or confirm opened
    finally:
        chrome.terminate()
        try:
            chrome.wait(10)
        except subprocess.TimeoutExpired:
            chrome.kill()
    journals = list(Path(home).rglob("journal.jsonl"))
    attempts = [json.loads(x) for j in journals for x in j.read_text().splitlines() if x.strip()]
    assert not [e for e in attempts if e.get("event") == "start"], attempts  # nothing was attempted


async def _has(cdp: CDP, words: tuple[str, ...]) -> str | None:
    screen = await cdp.screen()
    return screen if all(w in screen for w in words) else None


async def _after_any(cdp: CDP, start: int, words: tuple[str, ...]) -> str | None:
    tail = (await cdp.screen())[start:]
    compact = tail.replace(" ", "")
    return tail if any(w.replace(" ", "") in compact for w in words) else None


async def _after(cdp: CDP, start: int, word: str) -> str | None:
    tail = (await cdp.screen())[start:]
    return tail if word in tail else None
