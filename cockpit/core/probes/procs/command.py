"""The process-table probe: the ``sh`` command that lists the container's processes.

:func:`ps_command` tries procps ``ps`` first and falls back to reading ``/proc`` with a small shell
loop (busybox containers have no procps, and busybox ``ps`` knows none of the fields we need).  Its
output starts with a :data:`HEADER` line that says which of the two formats follows (see
:mod:`.parse` for both).
"""

from __future__ import annotations

__all__ = ["HEADER", "PS_FIELDS", "PS_PROCPS_COMMAND", "PS_PROC_COMMAND", "PS_COMMAND", "ps_command"]

#: ``ps -o`` fields, in output order: every fixed field first, the free-text ``args`` last.
PS_FIELDS = (
    "pid",  # process id
    "ppid",  # parent pid (0: the parent is outside this PID namespace, e.g. a `pct exec` session)
    "pgid",  # process group id
    "sid",  # session id
    "stat",  # state + flags: R S D Z T t X I, then < N L s l +
    "etimes",  # elapsed seconds since the process started
    "pcpu",  # %CPU averaged over the process lifetime
    "rss",  # resident set size, KiB
    "nlwp",  # number of threads
    "wchan:32",  # kernel function the process sleeps in ("-" when running)
    "user:32",  # user name (the numeric uid when it is wider than 32)
    "comm",  # executable name, at most 15 bytes, may contain spaces
    "args",  # full command line
)

#: The first word of the probe's header line (``@@cockpit-ps procps|proc|timeout N``).
HEADER = "@@cockpit-ps"

#: procps ``ps`` alone (no header line).
PS_PROCPS_COMMAND = "LC_ALL=C.UTF-8 ps -e -ww -o " + ",".join(f + "=" for f in PS_FIELDS)

#: The ``/proc`` reader for containers without procps (busybox, distroless); dash/ash compatible.
PS_PROC_COMMAND = (
    "read -r _cp_u _ </proc/uptime; echo \"@@uptime $_cp_u\"; "
    "echo \"@@conf $(getconf CLK_TCK 2>/dev/null || echo 100)\"; "
    "while IFS=: read -r _cp_n _ _cp_i _; do echo \"@@pw $_cp_i $_cp_n\"; done 2>/dev/null </etc/passwd; "
    "for _cp_d in /proc/[0-9]*; do "
    "_cp_s=; read -r _cp_s 2>/dev/null <\"$_cp_d/stat\" || [ -n \"$_cp_s\" ] || continue; "
    "_cp_id=; _cp_r=; _cp_t=; "
    "while read -r _cp_k _cp_v _; do case $_cp_k in Uid:) _cp_id=$_cp_v;; VmRSS:) _cp_r=$_cp_v;; "
    "Threads:) _cp_t=$_cp_v; break;; esac; done 2>/dev/null <\"$_cp_d/status\"; "
    "_cp_w=; read -r _cp_w 2>/dev/null <\"$_cp_d/wchan\"; "
    "_cp_c=$(tr '\\000\\n\\t' '   ' 2>/dev/null <\"$_cp_d/cmdline\"); "
    "printf 'P\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' \"$_cp_id\" \"$_cp_r\" \"$_cp_t\" \"$_cp_w\" \"$_cp_c\" \"$_cp_s\"; "
    "done"
)


def ps_command(timeout: float = 5) -> str:
    """The probe: procps ``ps`` if it works, else the ``/proc`` reader; a header says which.

    Run it through ``sh`` inside the container; exit status 0 in every case.  ``ps`` runs under
    ``timeout -s KILL``: reading ``/proc/PID/cmdline`` waits for the target's memory-map lock, so
    a process stuck in the kernel (the seed's ``Zl`` leader) can hang ``ps`` itself; the output is
    then the single line ``@@cockpit-ps timeout SECONDS`` (see :func:`~.findings.ps_probe_findings`),
    and the ``/proc`` reader is not tried (it would hang the same way).  The probe bounds its own
    blocking part, so it runs through the session without a watchdog (``run(..., cheap=True)``).
    Only when that first try fails is it asked whether this ``timeout`` accepts ``-s KILL``
    (busybox builds differ): if not, plain ``ps`` is tried, as without ``timeout``.
    """
    t = max(1, int(round(float(timeout))))
    ps = PS_PROCPS_COMMAND.replace("LC_ALL=C.UTF-8 ", "")
    return (
        f"_cp_o=$(LC_ALL=C.UTF-8 timeout -s KILL {t} {ps} 2>/dev/null); _cp_r=$?; "
        f"if [ $_cp_r -eq 0 ] && [ -n \"$_cp_o\" ]; then echo '{HEADER} procps'; printf '%s\\n' \"$_cp_o\"; "
        f"elif [ $_cp_r -eq 137 ] || [ $_cp_r -eq 124 ]; then echo '{HEADER} timeout {t}'; "
        f"elif ! timeout -s KILL 1 true 2>/dev/null && _cp_o=$(LC_ALL=C.UTF-8 {ps} 2>/dev/null) && [ -n \"$_cp_o\" ]; then "
        f"echo '{HEADER} procps'; printf '%s\\n' \"$_cp_o\"; "
        f"else echo '{HEADER} proc'; {PS_PROC_COMMAND}; fi"
    )


#: The exact command string :func:`ps_command` builds with its default deadline.
PS_COMMAND = ps_command()
