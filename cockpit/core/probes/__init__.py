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

from typing import TYPE_CHECKING

from ..lazyface import face_getattr

if TYPE_CHECKING:  # pragma: no cover - for the type checker: at run time each name loads on first use
    from .gpu import GPU, GPU_FIELDS, NA, GPUProcess, GPUSnapshot, NaType, gpu_query_command, is_na, parse_gpu_output, unaccounted_memory
    from .kmsg import KmsgReport, kmsg_command, oom_killed, parse_kmsg, xid_meaning
    from .logs import LogEvent, LogFollowerState, LogRing, LogUpdate, log_probe_command, sanitize
    from .procs import PS_COMMAND, Proc, ProcTree, analyse, parse_ps, ps_command, ps_probe_findings
    from .signatures import BUILTIN, Classifier, Match, Signature, load_signatures

#: this package's face: name → (module, attribute), imported on first use, so that importing one
#: module of the package (which runs this file first) never imports the others
_LAZY: dict[str, tuple[str, str]] = {
    "GPU": (".gpu", "GPU"),
    "GPU_FIELDS": (".gpu", "GPU_FIELDS"),
    "NA": (".gpu", "NA"),
    "GPUProcess": (".gpu", "GPUProcess"),
    "GPUSnapshot": (".gpu", "GPUSnapshot"),
    "NaType": (".gpu", "NaType"),
    "gpu_query_command": (".gpu", "gpu_query_command"),
    "is_na": (".gpu", "is_na"),
    "parse_gpu_output": (".gpu", "parse_gpu_output"),
    "unaccounted_memory": (".gpu", "unaccounted_memory"),
    "KmsgReport": (".kmsg", "KmsgReport"),
    "kmsg_command": (".kmsg", "kmsg_command"),
    "oom_killed": (".kmsg", "oom_killed"),
    "parse_kmsg": (".kmsg", "parse_kmsg"),
    "xid_meaning": (".kmsg", "xid_meaning"),
    "LogEvent": (".logs", "LogEvent"),
    "LogFollowerState": (".logs", "LogFollowerState"),
    "LogRing": (".logs", "LogRing"),
    "LogUpdate": (".logs", "LogUpdate"),
    "log_probe_command": (".logs", "log_probe_command"),
    "sanitize": (".logs", "sanitize"),
    "PS_COMMAND": (".procs", "PS_COMMAND"),
    "Proc": (".procs", "Proc"),
    "ProcTree": (".procs", "ProcTree"),
    "analyse": (".procs", "analyse"),
    "parse_ps": (".procs", "parse_ps"),
    "ps_command": (".procs", "ps_command"),
    "ps_probe_findings": (".procs", "ps_probe_findings"),
    "BUILTIN": (".signatures", "BUILTIN"),
    "Classifier": (".signatures", "Classifier"),
    "Match": (".signatures", "Match"),
    "Signature": (".signatures", "Signature"),
    "load_signatures": (".signatures", "load_signatures"),
}


__getattr__ = face_getattr(__name__, _LAZY, globals())


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
