"""Why a shell inside the target could not start, or died: the layer, a message and a hint.

The words differ per runtime (the host tool, whether the shell runs in a container, how the
host lists its containers): each runtime hands its :class:`StartWords` over (and registers them
under its name in :data:`START_WORDS`, for a caller that has only the name).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layers import Layer

__all__ = ["classify_start_failure", "StartWords", "START_WORDS"]


@dataclass(frozen=True)
class StartWords:
    """What a start failure says about one runtime."""

    #: the host tool whose "command not found" is the host's fault
    tool: str = "pct"
    #: the shell runs inside a container (else on the host)
    inside: bool = False
    #: the host command that lists the containers
    list_command: str = "pct list"
    #: "reboot" (Proxmox) or "restart" (docker, podman)
    restart_word: str = "reboot"
    #: what the host must be for the tool to exist ("Proxmox host", "host with docker")
    host_kind: str = "Proxmox host"


#: a runtime's name → its words (filled by :mod:`cockpit.core.runtimes` as runtimes register)
START_WORDS: dict[str, StartWords] = {}


def classify_start_failure(exit_code: int | None, stderr: str, *, runtime: str | StartWords) -> tuple[Layer, str, str]:
    """Map why a shell inside the target could not start (or died) onto a layer, message, hint.

    The texts are the real tools' (``pct``; the Docker CLI and daemon; Podman): a missing or
    stopped container, an engine the SSH user may not talk to, a tool that is not installed are
    all the host's doing, never the job's.  ``runtime``: the runtime's words, or its name.
    """
    w = runtime if isinstance(runtime, StartWords) else START_WORDS.get(runtime, StartWords())
    text = stderr.strip()
    low = text.lower()
    tool = w.tool
    if "does not exist" in low and "configuration file" in low or "no such container" in low or "no such object" in low \
            or "no container with name or id" in low:
        return (Layer.HOST, f"container missing: {text}", f"check [target] container; `{w.list_command}` on the host shows them")
    if "not running" in low or "container state improper" in low:
        return (Layer.HOST, f"container not running: {text}", f"start it (`{tool} start …`) or {w.restart_word} it from cockpit")
    if "permission denied while trying to connect to the docker daemon" in low:
        return (Layer.HOST, f"docker refused the SSH user: {text}",
                "add the SSH user to the docker group on the host (then log in again), or connect as root")
    if "cannot connect to the docker daemon" in low or "cannot connect to podman" in low:
        return (Layer.HOST, f"the container engine is not answering: {text}", "start it on the host (systemctl start docker / podman.socket)")
    if "command not found" in low and tool in low or (w.inside and exit_code == 127 and tool in low):
        return (Layer.HOST, f"{tool} not found on the host: {text}", f"is this a {w.host_kind}? set [target] runtime = \"none\" for a plain host")
    if exit_code in (126, 127):
        return (Layer.CONTAINER, f"no usable /bin/sh inside the target (exit {exit_code}): {text}", "the container image needs a POSIX shell")
    where = "container" if w.inside else "host"
    msg = f"the {where} shell exited (exit {exit_code})" + (f": {text}" if text else "")
    return (Layer.CONTAINER if w.inside else Layer.HOST, msg, "it was killed or the container stopped; cockpit rebuilds it on the next command")
