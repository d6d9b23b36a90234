"""GPUs through ``nvidia-smi``: one probe command, a parser that never raises, NA values.

Values are read with :func:`parse_value`: ``[N/A]``, ``[Not Supported]``,
``[Insufficient Permissions]`` and anything unreadable become :class:`NaType` values (``N/A`` in
text, ``nan`` in arithmetic, falsy, never raising), keeping the reason.  Failures of nvidia-smi
itself become :class:`~cockpit.core.layers.Finding` objects in layer ``gpu`` (``container`` when
the binary is missing from the container, or the container cannot write a temp file).

==================  ===========================================================================
module              what lives there
==================  ===========================================================================
:mod:`.values`      :class:`NaType`, :data:`NA`, :func:`is_na`, :func:`parse_value`
:mod:`.command`     the queried fields (:data:`GPU_FIELDS`, :data:`APP_FIELDS`) and
                    :func:`gpu_query_command`
:mod:`.fallback`    :class:`GpuProbe`: asks again without the fields an older driver refuses,
                    and remembers the set that works
:mod:`.model`       :class:`GPU`, :class:`GPUProcess`, :class:`GPUSnapshot`
:mod:`.parse`       :func:`parse_gpu_output`
:mod:`.findings`    what a failed query or a lost GPU means
:mod:`.memory`      :func:`unaccounted_memory`: GPU memory held by processes that are gone
:mod:`.procmap`     each listed pid's ``/proc`` entry read where nvidia-smi ran (NSpid, cgroup,
                    pid namespace), and the ``/dev/nvidia*`` fd scan
:mod:`.owners`      :func:`map_processes`: host pids placed in the container, and the findings
                    for memory held by a dead pid, a zombie, or outside the container
:mod:`.perprocess`  :class:`ProcessProbe`: the host query, or the fallbacks, per refresh
==================  ===========================================================================
"""

from __future__ import annotations

from .command import APP_FIELDS, GPU_FIELDS, GpuField, core_fields, gpu_query_command
from .fallback import GpuProbe, Runner
from .follow import GpuFollower, merge_sample
from .memory import unaccounted_memory
from .model import GPU, GPUProcess, GPUSnapshot, jsonable
from .owners import FD_SCAN, HOST_QUERY, TARGET_QUERY, apply_fdscan, map_processes, memory_by_container_pid
from .parse import NOT_QUERIED, parse_gpu_output
from .perprocess import ProcessProbe
from .procmap import PidInfo, PidTable, container_of_cgroup, fdscan_command, parse_fdscan, parse_proc_sections
from .values import NA, NaType, is_na, parse_value

__all__ = [
    "GpuFollower",
    "merge_sample",
    "NaType",
    "NA",
    "is_na",
    "parse_value",
    "GpuField",
    "GPU_FIELDS",
    "APP_FIELDS",
    "gpu_query_command",
    "core_fields",
    "GpuProbe",
    "Runner",
    "jsonable",
    "NOT_QUERIED",
    "GPU",
    "GPUProcess",
    "GPUSnapshot",
    "parse_gpu_output",
    "unaccounted_memory",
    "ProcessProbe",
    "map_processes",
    "apply_fdscan",
    "memory_by_container_pid",
    "HOST_QUERY",
    "TARGET_QUERY",
    "FD_SCAN",
    "PidInfo",
    "PidTable",
    "parse_proc_sections",
    "parse_fdscan",
    "fdscan_command",
    "container_of_cgroup",
]
