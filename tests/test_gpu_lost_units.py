"""The words of a GPU fault under a running job, from real nvidia-smi captures, and the fate's news of it."""

from __future__ import annotations

from pathlib import Path

from cockpit.core.actions.gpufault import _lost_row, _said, gpu_note
from cockpit.core.fate_record import Fate, fate_text, same_fate
from cockpit.core.layers import Finding, Layer, Severity

CAPTURES = Path(__file__).parent / "fixtures" / "gpu"


def _capture(name: str, part: str) -> str:
    """One query's output in a capture (``@@cockpit-gpu <part>`` up to the next marker)."""
    text = (CAPTURES / name).read_text()
    body = text.split(f"@@cockpit-gpu {part}\n", 1)[1]
    return body.split("@@cockpit-gpu", 1)[0]


def test_the_lost_gpus_line_is_quoted_not_the_working_gpus_row_before_it():
    out = _capture("lost_one_of_two_rc15.txt", "query-gpu")  # GPU 0's row, then GPU 1 lost (exit 15)
    assert _said(out) == "Unable to determine the device handle for GPU0000:19:00.0: Unknown Error"


def test_a_row_whose_values_read_gpu_is_lost_names_its_index_and_bus_id():
    f = _lost_row("1, 00000000:19:00.0, [GPU is lost], [GPU is lost], [GPU is lost]")
    assert f is not None and (f.layer, f.kind, f.severity) == (Layer.GPU, "gpu-lost", Severity.WARNING), f
    assert f.summary == "GPU 1 (00000000:19:00.0) is lost now: nvidia-smi reads its values as [GPU is lost]"
    assert f.subject["index"] == 1 and f.subject["bus_id"] == "00000000:19:00.0"


def test_the_note_says_the_next_steps_may_fail_while_it_runs_and_not_once_it_is_gone():
    f = Finding(Layer.GPU, "gpu-lost", "GPU 0000:19:00.0 is lost now", "", Severity.WARNING)
    assert gpu_note([f]) == ("a GPU fault while the job runs: GPU 0000:19:00.0 is lost now; the job still runs, but its next steps "
                             "may fail or hang if it uses this GPU (cockpit cannot tell which GPUs it uses)")
    assert gpu_note([f], running=False) == "a GPU fault in the job's window: GPU 0000:19:00.0 is lost now"
    assert gpu_note([f, f]).startswith("2 GPU faults while the job runs: ")
    assert gpu_note([]) == ""


def test_a_gpu_fault_under_a_running_job_is_news_and_is_shown():
    plain, hurt = Fate("running", None, "pid 7"), Fate("running", "gpu", "pid 7; a GPU fault while the job runs: GPU 0 is lost now")
    assert same_fate(plain, Fate("running", None, "pid 8")) and not same_fate(plain, hurt) and not same_fate(None, plain)
    assert same_fate(Fate("stalled", "app"), Fate("stalled", "gpu"))  # a stall's layer changing is not news here (as before)
    assert fate_text(plain) == "running"
    assert fate_text(hurt) == "running, but a gpu fault: pid 7; a GPU fault while the job runs: GPU 0 is lost now"
    assert fate_text(hurt, short=True) == "running, but a gpu fault"
