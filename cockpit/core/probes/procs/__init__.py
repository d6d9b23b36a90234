"""The process table inside the target: one probe command, a tolerant parser, a tree, findings.

The probe (:data:`PS_COMMAND`) runs through ``sh`` inside the container and prints either procps
``ps`` output or records read from ``/proc``, behind a header line that says which; :func:`parse_ps`
reads both and never raises; :func:`analyse` turns the processes into findings.

==================  ===========================================================================
module              what lives there
==================  ===========================================================================
:mod:`.command`     the probe command (:func:`ps_command`, :data:`PS_COMMAND`, the ps fields)
:mod:`.tree`        :class:`Proc` (one process) and :class:`ProcTree` (processes linked by ppid)
:mod:`.parse`       :func:`parse_ps` and the two format readers
:mod:`.zombies`     zombie findings and whether PID 1 reaps orphans (:func:`pid1_reaps`)
:mod:`.findings`    :func:`analyse` (zombies, ``D`` states, the job) and :func:`ps_probe_findings`
:mod:`.own`         :func:`own_processes`: cockpit's own session shell and probes, hidden and never counted
==================  ===========================================================================
"""

from __future__ import annotations

from ..text import fmt_age
from .command import PS_COMMAND, PS_FIELDS, PS_PROC_COMMAND, PS_PROCPS_COMMAND, ps_command
from .findings import analyse, job_members, ps_probe_findings
from .own import own_processes
from .parse import parse_proc_records, parse_procps, parse_ps
from .tree import Proc, ProcTree
from .zombies import INIT_REAPS, pid1_reaps

__all__ = [
    "PS_FIELDS",
    "PS_PROCPS_COMMAND",
    "PS_PROC_COMMAND",
    "PS_COMMAND",
    "ps_command",
    "Proc",
    "ProcTree",
    "parse_ps",
    "ps_probe_findings",
    "parse_procps",
    "parse_proc_records",
    "job_members",
    "own_processes",
    "pid1_reaps",
    "INIT_REAPS",
    "analyse",
    "fmt_age",
]
