"""Observation parsers: text in, typed data and :class:`~cockpit.core.layers.Finding` out.

Each probe module exposes the exact remote command to run (built with ``shlex.quote`` from config
values) and a parser that never raises:

=============  ==============================================  =====================================
module         command                                         parser
=============  ==============================================  =====================================
``procs``      :data:`PS_COMMAND` (in the container)           :func:`parse_ps`, :func:`analyse`
``gpu``        :func:`gpu_query_command` (container or host)   :func:`parse_gpu_output`
``logs``       :func:`log_probe_command` / state ``command``   :meth:`LogFollowerState.apply`
``kmsg``       :func:`kmsg_command` (on the host)              :func:`parse_kmsg`
``signatures`` (none: classifies log lines)                    :class:`Classifier`
=============  ==============================================  =====================================

Nothing here imports textual or rich, or touches the network.
"""

from .gpu import (
    GPU,
    GPU_FIELDS,
    NA,
    GPUProcess,
    GPUSnapshot,
    NaType,
    gpu_query_command,
    is_na,
    parse_gpu_output,
    unaccounted_memory,
)
from .kmsg import KmsgReport, kmsg_command, oom_killed, parse_kmsg, xid_meaning
from .logs import LogEvent, LogFollowerState, LogRing, LogUpdate, log_probe_command, sanitize
from .procs import PS_COMMAND, Proc, ProcTree, analyse, parse_ps, ps_command, ps_probe_findings
from .signatures import BUILTIN, Classifier, Match, Signature, load_signatures

__all__ = [
    "GPU",
    "GPU_FIELDS",
    "NA",
    "GPUProcess",
    "GPUSnapshot",
    "NaType",
    "gpu_query_command",
    "is_na",
    "parse_gpu_output",
    "unaccounted_memory",
    "KmsgReport",
    "kmsg_command",
    "oom_killed",
    "parse_kmsg",
    "xid_meaning",
    "LogEvent",
    "LogFollowerState",
    "LogRing",
    "LogUpdate",
    "log_probe_command",
    "sanitize",
    "PS_COMMAND",
    "Proc",
    "ProcTree",
    "analyse",
    "parse_ps",
    "ps_command",
    "ps_probe_findings",
    "BUILTIN",
    "Classifier",
    "Match",
    "Signature",
    "load_signatures",
]
