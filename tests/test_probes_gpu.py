"""gpu: NA values, the nvidia-smi probe, its parser and the memory checks."""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from cockpit.core.layers import Layer, Severity
from cockpit.core.probes.gpu import (
    APP_FIELDS,
    GPU,
    GPU_FIELDS,
    NA,
    NOT_QUERIED,
    GpuProbe,
    GPUProcess,
    GPUSnapshot,
    NaType,
    core_fields,
    gpu_query_command,
    is_na,
    parse_gpu_output,
    parse_value,
    unaccounted_memory,
)

FIX = Path(__file__).parent / "fixtures" / "gpu"


def load(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


# -- NA ----------------------------------------------------------------------------------------


def test_na_behaves_like_a_missing_number() -> None:
    na = NaType("[Not Supported]")
    assert str(na) == "N/A" and repr(na) == "NA('[Not Supported]')" and na.reason == "[Not Supported]"
    assert not na and na == NA and na != 0 and hash(na) == hash(NA)
    assert math.isnan(float(na))
    for v in (na + 1, 1 + na, na - 2.5, 3 * na, na / 2, 2 / na, na // 1, na % 3, na**2, -na, abs(na)):
        assert math.isnan(v)
    assert not (na < 1) and not (na > 1) and not (na <= na) and not (1 < na)
    assert f"{na:>7.1f}|{na:<5}|{na}" == "    N/A|N/A  |N/A"
    assert round(na, 1) is na
    assert sum([1, 2, 3]) + na != 6  # nan
    with pytest.raises(TypeError):
        na + "x"  # noqa: B018 - str arithmetic is not silently accepted


@pytest.mark.parametrize(
    "text, kind, expected",
    [
        ("97", int, 97),
        (" 512.34 ", float, 512.34),
        ("700.00", float, 700.0),
        ("81559", int, 81559),
        ("12.0", int, 12),
        ("P0", str, "P0"),
        ("[N/A]", int, NA),
        ("[Not Supported]", float, NA),
        ("[Insufficient Permissions]", str, NA),
        ("N/A", int, NA),
        ("", int, NA),
        ("abc", int, NA),
        ("nan", float, NA),
        ("inf", int, NA),
    ],
)
def test_parse_value(text: str, kind: type, expected: object) -> None:
    v = parse_value(text, kind)
    assert v == expected and type(v) is type(expected)


def test_parse_value_keeps_reason() -> None:
    assert parse_value("[Insufficient Permissions]", int).reason == "[Insufficient Permissions]"
    assert parse_value("abc", int).reason.startswith("unparseable")


def test_field_tables_document_exact_nvidia_smi_fields() -> None:
    import inspect

    assert [f.attr for f in GPU_FIELDS] == [n for n in GPU.__dataclass_fields__ if n != "node"]  # node: where, not a field
    assert [f.attr for f in APP_FIELDS] == list(GPUProcess.__dataclass_fields__)[:4]
    gpu_src, proc_src = inspect.getsource(GPU), inspect.getsource(GPUProcess)
    for f in GPU_FIELDS:
        assert f.doc and f"``{f.query}``" in gpu_src  # each attribute's docstring names its field
    for f in APP_FIELDS:
        assert f.doc and f"``{f.query}``" in proc_src


# -- parsing fixtures ---------------------------------------------------------------------------

OK_CASES = {
    # file: (gpus, processes, names, a bracketed field (attr, gpu index, reason) or None)
    "h100x4_550_ok.txt": (4, 3, "NVIDIA H100 80GB HBM3", ("fan_pct", 0, "[N/A]")),
    "a100_470_mig.txt": (2, 2, "NVIDIA A100-SXM4-40GB", ("utilization_pct", 0, "[N/A]")),
    "rtx4090_550.txt": (1, 1, "NVIDIA GeForce RTX 4090", ("mig_mode", 0, "[N/A]")),
    "t4_470_container.txt": (1, 1, "Tesla T4", ("fan_pct", 0, "[N/A]")),
    "grid_a100d_535.txt": (1, 0, "GRID A100D-40C", ("utilization_pct", 0, "[Not Supported]")),
    "bare_query_535.txt": (1, 0, "NVIDIA A100 80GB PCIe", ("ecc_uncorrected", 0, "[Insufficient Permissions]")),
}


@pytest.mark.parametrize("name", sorted(OK_CASES))
def test_ok_outputs(name: str) -> None:
    n_gpus, n_procs, gpu_name, na = OK_CASES[name]
    snap = parse_gpu_output(load(name), "", 0, collected_at=123.0)
    assert snap.ok and snap.error is None and snap.findings == [] and snap.unparsed == []
    assert len(snap.gpus) == n_gpus and len(snap.processes) == n_procs
    assert all(g.name == gpu_name for g in snap.gpus)
    attr, idx, reason = na
    v = getattr(snap.gpus[idx], attr)
    assert is_na(v) and v.reason == reason
    assert snap.collected_at == 123.0
    json.dumps(snap.to_dict())  # JSON-able


def test_h100_values() -> None:
    snap = parse_gpu_output(load("h100x4_550_ok.txt"))
    g = snap.gpus[0]
    assert (g.index, g.utilization_pct, g.memory_used_mib, g.memory_total_mib) == (0, 97, 71234, 81559)
    assert (g.temperature_c, g.power_draw_w, g.power_limit_w, g.mig_mode, g.ecc_uncorrected) == (64, 512.34, 700.0, "Disabled", 0)
    assert g.memory_free_mib == 81559 - 71234 and round(g.memory_pct) == 87
    assert g.bus_id == "00000000:18:00.0" and g.driver_version == "550.90.07" and g.pstate == "P0"
    p = snap.processes[2]
    assert (p.pid, p.used_memory_mib, p.gpu_index) == (91451, 65000, 2) and is_na(p.process_name)
    assert snap.exit_codes == {"query-gpu": 0, "compute-apps": 0}


def test_mig_process_memory_is_na() -> None:
    snap = parse_gpu_output(load("a100_470_mig.txt"))
    assert is_na(snap.processes[0].used_memory_mib) and snap.gpus[0].mig_mode == "Enabled"
    assert is_na(snap.gpus[0].memory_pct) is False  # memory is known even under MIG


def test_process_name_with_commas() -> None:
    snap = parse_gpu_output(load("rtx4090_550.txt"))
    p = snap.processes[0]
    assert p.process_name == "/home/ml/venv, with comma/bin/python3" and p.used_memory_mib == 22094


def test_round_trip_dict() -> None:
    snap = parse_gpu_output(load("grid_a100d_535.txt"))
    g = GPU.from_dict(json.loads(json.dumps(snap.gpus[0].to_dict())))
    assert g == snap.gpus[0] and g.utilization_pct.reason == "[Not Supported]"
    p = GPUProcess(pid=1, process_name=NaType("[Not Found]"), used_memory_mib=3, gpu_uuid="GPU-x")
    assert GPUProcess.from_dict(p.to_dict()).process_name.reason == "[Not Found]"


FAIL_CASES = {
    # file: (kind, layer, severity, text that must be in the summary)
    "driver_not_loaded_rc9.txt": ("driver-not-loaded", Layer.GPU, Severity.ERROR, "couldn't communicate with the NVIDIA driver"),
    "nvml_missing_rc12.txt": ("nvml-missing", Layer.GPU, Severity.ERROR, "couldn't find libnvidia-ml.so"),
    "version_mismatch_rc18.txt": ("nvml-mismatch", Layer.GPU, Severity.ERROR, "Driver/library version mismatch"),
    "lost_one_of_two_rc15.txt": ("gpu-lost", Layer.GPU, Severity.ERROR, "0000:19:00.0"),
    "lost_value_rc0.txt": ("gpu-lost", Layer.GPU, Severity.ERROR, "[GPU is lost]"),
    "timeout.txt": ("gpu-timeout", Layer.GPU, Severity.ERROR, "did not answer within 5s"),
    "stuck.txt": ("gpu-stuck", Layer.GPU, Severity.ERROR, "ignores SIGKILL"),
    "not_found_rc127.txt": ("not-found", Layer.CONTAINER, Severity.ERROR, "nvidia-smi: not found"),
    "no_devices_rc6.txt": ("no-devices", Layer.GPU, Severity.ERROR, "No devices were found"),
    "nvml_unknown_rc255.txt": ("nvml-unknown", Layer.GPU, Severity.ERROR, "Failed to initialize NVML: Unknown Error"),
    "invalid_field_rc2.txt": ("query-unsupported", Layer.GPU, Severity.WARNING, "is not a valid field"),
    "notmp.txt": ("tmp-unwritable", Layer.CONTAINER, Severity.ERROR, "temp file"),
}


@pytest.mark.parametrize("name", sorted(FAIL_CASES))
def test_failures_become_findings(name: str) -> None:
    kind, layer, sev, text = FAIL_CASES[name]
    snap = parse_gpu_output(load(name), "", 0, timeout_s=5)
    assert [f.kind for f in snap.findings] == [kind]
    f = snap.findings[0]
    assert f.layer is layer and f.severity is sev and text in f.summary and f.advice
    if sev is Severity.ERROR:
        assert snap.error == f.summary
    else:
        assert snap.error is None


def test_lost_gpu_keeps_the_healthy_one() -> None:
    snap = parse_gpu_output(load("lost_one_of_two_rc15.txt"))
    assert len(snap.gpus) == 1 and snap.gpus[0].index == 0
    assert snap.findings[0].subject["bus_id"] == "0000:19:00.0"


@pytest.mark.parametrize(
    "stdout, stderr, code, kind",
    [
        # a bare query (no frames): stdout and exit code are nvidia-smi's
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "", 9, "driver-not-loaded"),
        ("", "bash: line 1: nvidia-smi: command not found", 127, "not-found"),
        ("", "", 124, "gpu-timeout"),
        ("", "", 255, "nvidia-smi-failed"),
        # the probe died inside a frame
        ("@@cockpit-gpu query-gpu\n0, NVIDIA H100", "Connection closed", 255, "probe-cut"),
        ("", "ssh: connect to host: Connection refused", 255, "nvidia-smi-failed"),
    ],
)
def test_unframed_and_cut_outputs(stdout: str, stderr: str, code: int, kind: str) -> None:
    snap = parse_gpu_output(stdout, stderr, code)
    assert kind in [f.kind for f in snap.findings]


def test_compute_apps_failure_is_a_warning() -> None:
    out = load("h100x4_550_ok.txt").rsplit("@@cockpit-gpu compute-apps", 1)[0]
    out += "@@cockpit-gpu compute-apps\nFailed to initialize NVML: Unknown Error\n@@cockpit-gpu rc 255\n"
    snap = parse_gpu_output(out)
    assert len(snap.gpus) == 4 and snap.error is None
    assert snap.findings[0].severity is Severity.WARNING and snap.findings[0].summary.startswith("process list unavailable")


# -- memory held by the dead ----------------------------------------------------------------------


def test_unaccounted_memory() -> None:
    snap = parse_gpu_output(load("h100x4_550_ok.txt"))
    f = unaccounted_memory(snap, {48213, 48290, 1})
    assert [(x.kind, x.subject["pid"]) for x in f] == [("gpu-memory-dead-pid", 91451)]
    assert f[0].layer is Layer.GPU and "dead process" in f[0].summary and "65000 MiB" in f[0].summary
    # a zombie counts as dead even when "live"
    f = unaccounted_memory(snap, {48213, 48290, 91451}, zombie_pids=[91451])
    assert [x.kind for x in f] == ["gpu-memory-zombie"]
    # host pids unknown: only zombies are checked
    assert unaccounted_memory(snap, None) == []
    assert [x.kind for x in unaccounted_memory(snap, None, [48213])] == ["gpu-memory-zombie"]


def test_unlisted_memory_is_info() -> None:
    snap = parse_gpu_output(load("grid_a100d_535.txt"))
    f = unaccounted_memory(snap, set())
    assert [(x.kind, x.severity) for x in f] == [("gpu-memory-unlisted", Severity.INFO)]
    # MIG: per-process memory unknown, nothing is claimed
    assert unaccounted_memory(parse_gpu_output(load("a100_470_mig.txt")), {2211, 2298}) == []


def test_snapshot_defaults() -> None:
    s = GPUSnapshot()
    assert s.ok and s.gpus == [] and s.collected_at > 0


# -- the command, run for real against fake nvidia-smi scripts -----------------------------------

FAKE_OK = """#!/bin/sh
case "$1" in
--query-gpu=*) echo "0, NVIDIA H100 80GB HBM3, GPU-5f2c, 00000000:18:00.0, 550.90.07, P0, 64, 97, 45, 71234, 81559, 512.34, 700.00, [N/A], Disabled, 0";;
--query-compute-apps=*) echo "48213, /usr/bin/python3, 71234, GPU-5f2c";;
esac
"""
FAKE_DRIVER = """#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
exit 9
"""
FAKE_HANG = "#!/bin/sh\nexec sleep 30\n"


def _fake(tmp_path: Path, name: str, body: str) -> str:
    p = tmp_path / name
    p.write_text(body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


SHELLS = [["sh", "-c"]] + ([["busybox", "sh", "-c"]] if shutil.which("busybox") else [])


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_command_end_to_end(tmp_path: Path, shell: list[str]) -> None:
    cases = [
        (_fake(tmp_path, "ok", FAKE_OK), [], 1),
        (_fake(tmp_path, "nodrv", FAKE_DRIVER), ["driver-not-loaded"], 0),
        (_fake(tmp_path, "hang", FAKE_HANG), ["gpu-timeout"], 0),
        (str(tmp_path / "missing"), ["not-found"], 0),
    ]
    for smi, kinds, n in cases:
        r = subprocess.run(shell + [gpu_query_command(smi, timeout=0.3)], capture_output=True, timeout=20)
        assert r.returncode == 0
        snap = parse_gpu_output(r.stdout, r.stderr, r.returncode, timeout_s=0.3)
        assert [f.kind for f in snap.findings] == kinds, (smi, r.stdout)
        assert len(snap.gpus) == n
    assert not [f for f in os.listdir(os.environ.get("TMPDIR", "/tmp")) if f.startswith(".cockpit-gpu")]


def test_command_quotes_the_binary() -> None:
    cmd = gpu_query_command("/opt/nv bin/nvidia-smi; rm -rf /", timeout=2)
    assert "'/opt/nv bin/nvidia-smi; rm -rf /'" in cmd
    assert "--query-gpu=" + ",".join(f.query for f in GPU_FIELDS) in cmd
    assert "--query-compute-apps=pid,process_name,used_memory,gpu_uuid" in cmd
    assert "--format=csv,noheader,nounits" in cmd


# -- an older driver: fields it does not know -------------------------------------------------------

LAB_SMI = str(Path(__file__).parent / "lab" / "bin" / "nvidia-smi")


def _runner(calls: list[str], unknown: str = "", smi_env: dict[str, str] | None = None):
    """Runs each probe command for real under sh, with the lab's nvidia-smi emulator told which
    fields its driver does not know."""
    env = {**os.environ, "LAB_NVIDIA_SMI_UNKNOWN_FIELDS": unknown, **(smi_env or {})}

    async def run(cmd: str) -> tuple[bytes, bytes, int | None]:
        calls.append(cmd)
        p = await asyncio.create_subprocess_exec("sh", "-c", cmd, stdout=asyncio.subprocess.PIPE,
                                                 stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await p.communicate()
        return out, err, p.returncode

    return run


def test_emulator_refuses_like_an_older_driver() -> None:
    env = {**os.environ, "LAB_NVIDIA_SMI_UNKNOWN_FIELDS": "mig.mode.current"}
    r = subprocess.run([LAB_SMI, "--query-gpu=index,name,mig.mode.current", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True, env=env, timeout=20)
    # what a real R418 driver prints for a field newer than itself: stdout, a blank line, exit 2
    assert (r.returncode, r.stdout, r.stderr) == (2, 'Field "mig.mode.current" is not a valid field to query.\n\n', "")
    r = subprocess.run([LAB_SMI, "--query-gpu=index,name", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True, env=env, timeout=20)
    assert r.returncode == 0 and r.stdout.startswith("0, NVIDIA H100")


def test_frame_header_names_the_columns() -> None:
    out = ("@@cockpit-gpu query-gpu index,name,uuid,memory.used,memory.total\n"
           "0, Tesla V100-SXM2-16GB, GPU-aa, 1200, 16160\n@@cockpit-gpu rc 0\n"
           "@@cockpit-gpu compute-apps pid,process_name,used_memory,gpu_uuid\n"
           "77, /usr/bin/python3, 1100, GPU-aa\n@@cockpit-gpu rc 0\n")
    snap = parse_gpu_output(out)
    assert snap.ok and snap.findings == [] and snap.unparsed == []
    g = snap.gpus[0]
    assert (g.index, g.name, g.memory_used_mib, g.memory_total_mib) == (0, "Tesla V100-SXM2-16GB", 1200, 16160)
    for attr in ("mig_mode", "ecc_uncorrected", "power_draw_w", "temperature_c"):
        v = getattr(g, attr)
        assert is_na(v) and v.reason == NOT_QUERIED and f"{v}" == "N/A"
    assert snap.processes[0].gpu_index == 0 and snap.processes[0].used_memory_mib == 1100
    assert GPU.from_dict(json.loads(json.dumps(g.to_dict()))) == g


async def test_unknown_field_is_left_out_and_remembered() -> None:
    calls: list[str] = []
    probe = GpuProbe(LAB_SMI)
    run = _runner(calls, "mig.mode.current")
    snap = await probe.run(run, 5)
    assert len(calls) == 2 and "mig.mode.current" in calls[0] and "mig.mode.current" not in calls[1]
    assert snap.ok and snap.error is None and len(snap.gpus) == 1
    g = snap.gpus[0]
    # the pane has its values; the one unknown field reads N/A, never a number
    assert (g.name, g.memory_total_mib, g.temperature_c, g.power_draw_w, g.ecc_uncorrected) == ("NVIDIA H100 80GB HBM3", 81559, 34, 69.85, 0)
    assert is_na(g.mig_mode) and g.mig_mode.reason == NOT_QUERIED
    # one info finding says so; no warning about an unsupported query remains
    assert [(f.kind, f.severity) for f in snap.findings] == [("gpu-fields-unknown", Severity.INFO)]
    assert "driver 550.54.15" in snap.findings[0].summary and "mig.mode.current" in snap.findings[0].summary
    # remembered for the session: the next refresh asks only what the driver knows, once
    calls.clear()
    snap = await probe.run(run, 5)
    assert len(calls) == 1 and snap.ok and len(snap.gpus) == 1 and [f.kind for f in snap.findings] == ["gpu-fields-unknown"]


async def test_several_unknown_fields_one_at_a_time() -> None:
    calls: list[str] = []
    probe = GpuProbe(LAB_SMI)
    snap = await probe.run(_runner(calls, "mig.mode.current,ecc.errors.uncorrected.volatile.total,fan.speed"), 5)
    assert len(calls) == 4 and snap.ok and snap.gpus[0].utilization_pct == 0 and snap.gpus[0].pstate == "P0"
    assert sorted(probe.left_out["query-gpu"]) == ["ecc.errors.uncorrected.volatile.total", "fan.speed", "mig.mode.current"]


async def test_a_refused_core_field_or_no_name_falls_back_to_the_core_set(tmp_path: Path) -> None:
    # no field named: straight to the core set
    smi = _fake(tmp_path, "old", """#!/bin/sh
case "$1" in
*mig.mode.current*|*driver_version*) echo "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."; exit 2;;
--query-gpu=*) echo "0, Tesla P100, GPU-1, 00000000:04:00.0, 30, 40, 100, 16280, 31.5";;
esac
""")
    calls: list[str] = []
    probe = GpuProbe(smi)
    snap = await probe.run(_runner(calls), 5)
    assert len(calls) == 2 and snap.ok and snap.gpus[0].memory_total_mib == 16280 and snap.gpus[0].power_draw_w == 31.5
    assert probe.fields["query-gpu"] == core_fields(GPU_FIELDS)
    # a core field refused: nothing better to ask, so the warning stays and the probe stops
    calls.clear()
    probe = GpuProbe(LAB_SMI)
    snap = await probe.run(_runner(calls, "memory.used"), 5)
    assert len(calls) == 2 and snap.gpus == [] and [f.kind for f in snap.findings] == ["query-unsupported"]


async def test_driver_failures_are_not_retried() -> None:
    calls: list[str] = []
    snap = await GpuProbe(str(Path("/nonexistent/nvidia-smi"))).run(_runner(calls), 1)
    assert len(calls) == 1 and [f.kind for f in snap.findings] == ["not-found"]


@pytest.mark.lab
async def test_old_driver_in_the_lab_keeps_the_gpu_pane_filled(lab, lab_config) -> None:
    from cockpit.core.engine import Engine

    lab.set_gpu_state("normal", driver_version="470.57.02",
                      unknown_fields=["mig.mode.current", "ecc.errors.uncorrected.volatile.total"])
    eng = Engine(lab_config())
    sent: list[str] = []
    real_run = eng.transport.run

    async def counting_run(cmd: str, **kw):  # a spy on the real SSH transport: counts the GPU queries
        if "--query-gpu" in cmd:
            sent.append(cmd)
        return await real_run(cmd, **kw)

    eng.transport.run = counting_run  # type: ignore[method-assign]
    try:
        view = await eng.observer.refresh_gpu()
        assert view.error is None and view.snapshot is not None, view.to_dict()
        g = view.snapshot.gpus[0]
        assert (g.name, g.driver_version, g.memory_total_mib) == ("NVIDIA H100 80GB HBM3", "470.57.02", 81559)
        assert is_na(g.mig_mode) and is_na(g.ecc_uncorrected) and f"{g.mig_mode}" == "N/A"
        assert len(sent) == 3
        d = view.to_dict()
        assert d["gpus"][0]["mig_mode"] == NOT_QUERIED and [f["kind"] for f in d["findings"]] == ["gpu-fields-unknown"]
        assert not [f for f in eng.observer.findings() if f.layer is Layer.GPU and f.severity is not Severity.INFO]
        sent.clear()
        view = await eng.observer.refresh_gpu()
        assert len(sent) == 1 and view.snapshot is not None and view.snapshot.gpus[0].memory_total_mib == 81559
    finally:
        await eng.close()
