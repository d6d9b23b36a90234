"""``cockpit serve``: the TUI in a browser for a teammate, always read-only and redacted.

textual-serve runs ``cockpit --share`` (the screen-sharing mode: read-only, secrets hidden on
every pane) once per browser tab and relays its terminal over a WebSocket.  It has no
authentication of its own, so this puts one in front: a random token (``secrets.token_urlsafe``,
128 bits) that the page (``/?token=…``) and its WebSocket (``/ws/TOKEN``) must carry; every other
request but textual-serve's static files (its JavaScript and CSS, no data) gets ``403``.  It binds
127.0.0.1 by default: a teammate reaches it through their own SSH tunnel
(``ssh -L 8521:127.0.0.1:8521 you@this-box``), so nothing is exposed to the network unless
``--host`` says so.  The page builds its URLs from the address the browser used (the tunnel's
``localhost:8521``, not the server's idea of itself).
"""

from __future__ import annotations

import argparse
import hmac
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any

from .args import port_number

__all__ = ["add_parser", "cmd_serve", "serve_command", "DEFAULT_PORT"]

DEFAULT_PORT = 8521


def add_parser(sub: Any, common: Any) -> None:
    s = sub.add_parser("serve", help="the TUI in a browser for a teammate: read-only, secrets hidden, 127.0.0.1 and a token by default")
    common(s)
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: reach it through an SSH tunnel)")
    s.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    s.add_argument("--token", default=None, help=argparse.SUPPRESS)  # tests; a random one otherwise
    s.set_defaults(func=cmd_serve)


def serve_command(args: argparse.Namespace, cfg: Any) -> str:
    """The command each browser tab runs: this cockpit, ``--share``, and the very config this
    serve resolved (its absolute path, so the tab cannot find another file from another working
    directory or environment), or ``--demo`` for the built-in one; the same target."""
    argv = [sys.executable, "-m", "cockpit", "--share"]
    argv += ["--config", str(Path(cfg.path).absolute())] if cfg.path is not None else ["--demo"]
    if getattr(args, "target", None):
        argv += ["--target", args.target]
    return shlex.join(argv)


def cmd_serve(args: argparse.Namespace, cfg: Any) -> int:
    try:
        from textual_serve.server import Server
    except ImportError:
        print("cockpit: serve needs textual-serve: pip install 'cockpit[serve]' (or pip install textual-serve)", file=sys.stderr)
        return 2
    why = _cannot_listen(args.host, args.port)
    if why:  # said before any URL is printed, never as a traceback from the server
        print(f"cockpit serve: {why}\n  fix: choose another --port or --host (an address of this machine)", file=sys.stderr)
        return 2
    token = args.token or secrets.token_urlsafe(16)
    server = _server_class(Server)(serve_command(args, cfg), host=args.host, port=args.port, title=f"cockpit · {cfg.display_name} (read-only)")
    server.token = token
    url = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}/?token={token}"
    where = f"config {Path(cfg.path).absolute()}" if cfg.path is not None else "the built-in demo"
    print(f"cockpit serve: {cfg.display_name} ({where}), read-only, secrets hidden\n  open: {url}", flush=True)
    if args.host in ("127.0.0.1", "localhost", "::1"):
        print(f"  a teammate: ssh -L {args.port}:127.0.0.1:{args.port} {_whoami()}, then open the URL above", flush=True)
    else:
        print(f"  listening on {args.host}: anyone who can reach it needs the token", flush=True)
    server.serve()
    return 0


def _cannot_listen(host: str, port: int) -> str | None:
    """Why serve could not listen on ``host:port`` (an unknown name, a port in use or not allowed),
    found by binding each of its addresses once, as the server will; None when it can."""
    import socket

    try:
        addrs = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        return f"--host {host!r} is not an address of this machine ({getattr(e, 'strerror', None) or e})"
    for family, kind, proto, _name, addr in addrs:
        try:
            with socket.socket(family, kind, proto) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
                s.bind(addr)
        except OSError as e:
            return f"cannot listen on {host}:{port}: {e.strerror or e}"
    return None


def _whoami() -> str:
    import getpass
    import socket

    try:
        return f"{getpass.getuser()}@{socket.getfqdn()}"
    except (KeyError, OSError):
        return "this-machine"


def _server_class(base: Any) -> Any:
    """textual-serve's Server with the token check and URLs taken from the browser's address."""
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web

    class TokenServer(base):  # type: ignore[misc]
        token = ""

        def initialize_logging(self) -> None:  # its INFO lines would print the token-bearing requests
            import logging

            logging.basicConfig(level=logging.WARNING)

        async def on_startup(self, app: web.Application) -> None:
            return None  # cmd_serve said where to go

        async def _make_app(self) -> web.Application:
            # textual-serve's routes, with the WebSocket under its token (its page appends
            # "?width=…" to the socket URL, so the token cannot be a query there) and no
            # directory listing of the static files
            app = web.Application(middlewares=[self._check_token])
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes([
                web.get("/", self._index, name="index"),
                web.get("/ws/{token}", self.handle_websocket, name="websocket"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, name="static"),
            ])
            app.on_shutdown.append(self.on_shutdown)
            return app

        def _token_ok(self, given: str) -> bool:
            return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

        @web.middleware
        async def _check_token(self, request: web.Request, handler: Any) -> Any:
            if request.path.startswith("/static/"):
                return await handler(request)  # textual-serve's JavaScript and CSS: no data
            if request.path.startswith("/ws/"):
                given = request.path[len("/ws/"):]
            else:
                given = request.query.get("token", "")
            if not self._token_ok(given):
                return web.Response(status=403, text="cockpit serve: this URL needs its token (printed when serve started)\n")
            return await handler(request)

        @aiohttp_jinja2.template("app_index.html")
        async def _index(self, request: web.Request) -> dict[str, Any]:
            origin = f"{request.scheme}://{request.host}"
            ws = ("wss://" if request.scheme == "https" else "ws://") + request.host + f"/ws/{self.token}"
            return {"font_size": 16, "app_websocket_url": ws, "config": {"static": {"url": f"{origin}/static/"}},
                    "application": {"name": self.title}}

    return TokenServer
