"""NVIDIA Xid codes: what each means, how bad it is, and what to do (:data:`XID_MEANINGS`)."""

from __future__ import annotations

from ...layers import Severity

__all__ = ["XID_MEANINGS", "xid_meaning"]

#: Xid → (short meaning, severity, advice).  From NVIDIA's Xid catalogue, condensed.
XID_MEANINGS: dict[int, tuple[str, Severity, str]] = {
    8: (
        'GPU stopped processing (timeout)',
        Severity.ERROR,
        'Usually a hung kernel in the app; restart it. If it repeats without an app cause, reset the GPU.',
    ),
    13: (
        'graphics engine exception (illegal access in a kernel)',
        Severity.ERROR,
        "Usually the app's kernel read out of bounds (or a driver bug): rerun with CUDA_LAUNCH_BLOCKING=1 "
        'and compute-sanitizer.',
    ),
    31: (
        'GPU memory page fault (illegal address)',
        Severity.ERROR,
        'Usually the app accessed an invalid address (use-after-free, bad index); rarely the driver. '
        'Restart the process.',
    ),
    32: (
        'invalid or corrupted push buffer stream',
        Severity.ERROR,
        'Driver or hardware (PCIe) problem: check the PCIe link and update the driver.',
    ),
    38: (
        'driver firmware error',
        Severity.ERROR,
        'Reset the GPU or reboot the host; update the driver.',
    ),
    43: (
        'GPU stopped processing (the app hit a fault)',
        Severity.WARNING,
        'The faulting process was stopped; the GPU keeps working. Fix or restart the app.',
    ),
    44: (
        'graphics engine fault during context switch',
        Severity.ERROR,
        'Reset the GPU or reboot the host.',
    ),
    45: (
        'preemptive cleanup after a previous error (a process was killed)',
        Severity.INFO,
        'Follows a killed or crashed GPU process; look at the earlier Xid or kill.',
    ),
    48: (
        'double-bit ECC error (uncorrectable memory error)',
        Severity.ERROR,
        'Hardware memory error: reset the GPU (pages get retired/rows remapped); if it repeats, replace '
        'the board.',
    ),
    61: (
        'internal micro-controller breakpoint/warning',
        Severity.ERROR,
        'Reset the GPU or reboot the host; update the driver.',
    ),
    62: (
        'internal micro-controller halt',
        Severity.ERROR,
        'Reset the GPU or reboot the host; update the driver.',
    ),
    63: (
        'ECC page retirement or row remapping recorded',
        Severity.WARNING,
        'A memory page was retired / a row remapped; a GPU reset applies it. Watch the count.',
    ),
    64: (
        'ECC page retirement or row remapping failed',
        Severity.ERROR,
        'Remapping failed: reset the GPU; if it repeats, the board needs service.',
    ),
    68: (
        'video decoder (NVDEC) exception',
        Severity.WARNING,
        'A decoder fault: restart the app; update the driver.',
    ),
    69: (
        'graphics engine class error',
        Severity.ERROR,
        'Restart the app; if it repeats, reset the GPU.',
    ),
    74: (
        'NVLink error',
        Severity.ERROR,
        'NVLink problem between GPUs: check nvidia-smi nvlink -s; reset the GPUs or reboot; may need '
        'service.',
    ),
    79: (
        'GPU has fallen off the bus',
        Severity.ERROR,
        'The GPU is gone from PCIe: reboot the host; if it recurs, check power, cooling and seating.',
    ),
    92: (
        'high single-bit ECC error rate',
        Severity.WARNING,
        'Memory is degrading: plan a GPU reset and watch the ECC counters.',
    ),
    94: (
        'contained ECC error (the affected app was stopped)',
        Severity.ERROR,
        'Only the affected process is hit: restart the app; reset the GPU when convenient to remap.',
    ),
    95: (
        'uncontained ECC error',
        Severity.ERROR,
        'Every process on the GPU is affected: reset the GPU (or reboot the host).',
    ),
    109: (
        'context switch timeout',
        Severity.ERROR,
        'A kernel ran too long or the GPU hung: restart the app; reset the GPU if it repeats.',
    ),
    119: (
        'GSP RPC timeout (GPU firmware did not answer)',
        Severity.ERROR,
        'The GPU firmware hung: reset the GPU or reboot the host; updating the driver often helps.',
    ),
    120: (
        'GSP error',
        Severity.ERROR,
        'GPU firmware error: reset the GPU or reboot the host; update the driver.',
    ),
    154: (
        'GPU recovery action changed (reset or reboot required)',
        Severity.ERROR,
        'The driver asks for a GPU reset or node reboot: do what nvidia-smi -q reports as the recovery '
        'action.',
    ),
}


def xid_meaning(xid: int) -> str:
    """The Xid's short meaning, or a pointer to NVIDIA's catalogue."""
    m = XID_MEANINGS.get(xid)
    return m[0] if m else "see NVIDIA's Xid catalogue"
