"""Where the job runs, behind one interface (:class:`~.base.Runtime`), chosen once per target.

``[target] runtime`` names one: ``"pct"`` (:mod:`.pct`), ``"docker"`` and ``"podman"``
(:mod:`.engine`), ``"none"`` (:mod:`.host`), ``"slurm"`` (:mod:`.slurm`).
:func:`runtime_for` makes it from the config; the engine hands it to the transport, where every
action finds it (``ctx.transport.runtime``).  A new runtime is one module that subclasses
:class:`~.common.BaseRuntime` and calls :func:`register` (see ``docs/runtimes.md``).
"""

from __future__ import annotations

from typing import Any

from ..remote import Transport, make_transport
from .base import JobNodes, Runtime, Scheduler
from .engine import EngineRuntime
from .host import HostRuntime
from .pct import PctRuntime
from .registry import UnknownRuntime, register, registered, runtime_for
from .slurm import SlurmRuntime

__all__ = ["Runtime", "Scheduler", "JobNodes", "register", "registered", "runtime_for", "transport_for", "UnknownRuntime",
           "HostRuntime", "PctRuntime", "EngineRuntime", "SlurmRuntime"]

register("pct", PctRuntime.from_config, words=PctRuntime.start_words)
register("docker", EngineRuntime.docker, words=EngineRuntime("docker").start_words)
register("podman", EngineRuntime.podman, words=EngineRuntime("podman").start_words)
register("none", HostRuntime.from_config, words=HostRuntime.start_words)
register("slurm", SlurmRuntime.from_config, words=SlurmRuntime.start_words)


def transport_for(cfg: Any) -> Transport:
    """The transport a config describes, reaching into the target through its runtime."""
    return make_transport(cfg, runtime_for(cfg))
