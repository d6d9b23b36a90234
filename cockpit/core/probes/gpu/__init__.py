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
==================  ===========================================================================
"""

from __future__ import annotations

from .command import APP_FIELDS, GPU_FIELDS, GpuField, core_fields, gpu_query_command
from .fallback import GpuProbe
from .memory import unaccounted_memory
from .model import GPU, GPUProcess, GPUSnapshot
from .parse import NOT_QUERIED, parse_gpu_output
from .values import NA, NaType, is_na, parse_value

__all__ = [
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
    "NOT_QUERIED",
    "GPU",
    "GPUProcess",
    "GPUSnapshot",
    "parse_gpu_output",
    "unaccounted_memory",
]
