"""The two ways a notification leaves cockpit: a local command and a webhook.

Both return None on success, else one line saying why not; neither raises, neither retries.

* :func:`run_command` runs ``[notify] command`` **on this machine** (never on the target): a
  string through ``/bin/sh -c``, an array as argv, in the config file's directory, in its own
  process group, with the event's JSON on stdin and ``COCKPIT_EVENT`` / ``COCKPIT_TEXT`` in its
  environment.  Past ``timeout`` its whole process group is killed.
* :func:`post_webhook` POSTs a JSON body with urllib (in a thread: it never blocks the event loop),
  follows no redirect, and never puts the URL into what it returns: errors name the masked URL
  (``https://hooks.slack.com/***``) only.  A ``user:password@`` in the URL is taken out of it and
  sent as an ``Authorization: Basic`` header (:func:`split_userinfo`): urllib would otherwise look
  up ``user:password@host`` as a host name ("Name or service not known").
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ... import __version__
from .payload import mask_url
from .terminal import one_line

__all__ = ["run_command", "post_webhook", "scrub_url", "split_userinfo"]


async def run_command(command: str | list[str], payload: Mapping[str, Any], *, timeout: float, cwd: Path | None = None) -> str | None:
    """Run the notify command with ``payload`` as JSON on stdin (see the module doc)."""
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    env = dict(os.environ, COCKPIT_EVENT=str(payload.get("event") or ""), COCKPIT_TEXT=str(payload.get("text") or ""))
    data = (json.dumps(payload, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.PIPE, cwd=str(cwd) if cwd else None, env=env,
                                                    start_new_session=True)
    except OSError as e:
        return f"cannot start {argv[0]!r}: {e.strerror or e}"
    try:
        _, err = await asyncio.wait_for(proc.communicate(data), timeout)
    except (asyncio.TimeoutError, asyncio.CancelledError) as e:
        _kill_group(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        if isinstance(e, asyncio.CancelledError):
            raise
        return f"still running after {timeout:g}s: killed"
    if proc.returncode != 0:
        tail = one_line(err.decode("utf-8", "replace").strip().splitlines()[-1] if err.strip() else "", 200)
        how = f"killed by signal {-proc.returncode}" if proc.returncode is not None and proc.returncode < 0 else f"exit code {proc.returncode}"
        return how + (f": {tail}" if tail else "")
    return None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a place to resend the body (and the token) to."""

    def redirect_request(self, *args: Any, **kw: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def split_userinfo(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@``, and the ``Authorization`` header that carries them
    instead (``Basic base64(user:password)``, percent-escapes decoded as RFC 3986 asks), or None
    when the URL has no userinfo."""
    u = urlsplit(url)
    userinfo, at, hostport = u.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit((u.scheme, hostport, u.path, u.query, u.fragment)), f"Basic {token}"


def scrub_url(text: str, url: str) -> str:
    """``text`` with the webhook URL, and its path and query (the token), and its userinfo
    (the password) replaced by the masked URL or ``***``."""
    if not url:
        return text
    text = text.replace(url, mask_url(url))
    try:
        u = urlsplit(url)
        bare, _ = split_userinfo(url)
    except ValueError:
        return text
    text = text.replace(bare, mask_url(url))
    userinfo = u.netloc.rpartition("@")[0]
    if userinfo:
        text = text.replace(userinfo + "@", "***@")
    for part in (u.path + (f"?{u.query}" if u.query else ""), u.path, u.query):
        if len(part) >= 8:
            text = text.replace(part, "/***")
    for secret in {u.password or "", unquote(u.password or "")}:
        if len(secret) >= 8:  # shorter: too likely to be a word of the text itself
            text = text.replace(secret, "***")
    return text


def _post(url: str, body: bytes, timeout: float) -> str | None:
    headers = {"Content-Type": "application/json", "User-Agent": f"cockpit/{__version__}"}
    try:
        url, auth = split_userinfo(url)
    except ValueError as e:
        return f"ValueError: {e}"
    if auth:
        headers["Authorization"] = auth
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with _OPENER.open(req, timeout=timeout) as r:
            r.read(4096)
            return None
    except urllib.error.HTTPError as e:
        try:
            said = one_line(e.read(512).decode("utf-8", "replace"), 120)
        except OSError:
            said = ""
        what = "a redirect (not followed)" if 300 <= e.code < 400 else (e.reason or "")
        return f"HTTP {e.code} {what}".rstrip() + (f": {said}" if said else "")
    except urllib.error.URLError as e:
        return f"cannot reach it: {e.reason}"
    except TimeoutError:
        return f"no answer within {timeout:g}s"
    except (OSError, ValueError) as e:  # a reset connection, a malformed URL or header
        return f"{type(e).__name__}: {e}"


async def post_webhook(url: str, body: Mapping[str, Any], *, timeout: float) -> str | None:
    """POST ``body`` as JSON to ``url`` (see the module doc); the reason of a failure never holds the URL."""
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    try:
        # urllib's timeout is per socket operation: the whole POST is bounded here too
        err = await asyncio.wait_for(asyncio.to_thread(_post, url, data, timeout), timeout + 1)
    except asyncio.TimeoutError:
        err = f"no answer within {timeout:g}s"
    return None if err is None else scrub_url(err, url)
