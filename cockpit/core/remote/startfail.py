"""Why a shell inside the target could not start, or died: the layer, a message and a hint."""

from __future__ import annotations

from ..layers import Layer
from .runtime import CONTAINER_KINDS, ENGINE_KINDS

__all__ = ["classify_start_failure"]


def classify_start_failure(exit_code: int | None, stderr: str, *, runtime: str) -> tuple[Layer, str, str]:
    """Map why a shell inside the target could not start (or died) onto a layer, message, hint.

    The texts are the real tools' (``pct``; the Docker CLI and daemon; Podman): a missing or
    stopped container, an engine the SSH user may not talk to, a tool that is not installed are
    all the host's doing, never the job's.
    """
    text = stderr.strip()
    low = text.lower()
    tool = runtime if runtime in ENGINE_KINDS else "pct"
    if "does not exist" in low and "configuration file" in low or "no such container" in low or "no such object" in low \
            or "no container with name or id" in low:
        return (Layer.HOST, f"container missing: {text}", f"check [target] container; `{tool} {'list' if tool == 'pct' else 'ps -a'}` on the host shows them")
    if "not running" in low or "container state improper" in low:
        return (Layer.HOST, f"container not running: {text}", f"start it (`{tool} start …`) or {'reboot' if tool == 'pct' else 'restart'} it from cockpit")
    if "permission denied while trying to connect to the docker daemon" in low:
        return (Layer.HOST, f"docker refused the SSH user: {text}",
                "add the SSH user to the docker group on the host (then log in again), or connect as root")
    if "cannot connect to the docker daemon" in low or "cannot connect to podman" in low:
        return (Layer.HOST, f"the container engine is not answering: {text}", "start it on the host (systemctl start docker / podman.socket)")
    if "command not found" in low and tool in low or (runtime in CONTAINER_KINDS and exit_code == 127 and tool in low):
        other = "Proxmox host" if tool == "pct" else f"host with {tool}"
        return (Layer.HOST, f"{tool} not found on the host: {text}", f"is this a {other}? set [target] runtime = \"none\" for a plain host")
    if exit_code in (126, 127):
        return (Layer.CONTAINER, f"no usable /bin/sh inside the target (exit {exit_code}): {text}", "the container image needs a POSIX shell")
    inside = runtime in CONTAINER_KINDS
    where = "container" if inside else "host"
    msg = f"the {where} shell exited (exit {exit_code})" + (f": {text}" if text else "")
    return (Layer.CONTAINER if inside else Layer.HOST, msg, "it was killed or the container stopped; cockpit rebuilds it on the next command")
