"""signatures: the built-in table, user signatures, and the incremental classifier."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.core.layers import Layer, Severity
from cockpit.core.probes.signatures import (
    BUILTIN,
    Classifier,
    Match,
    Signature,
    _derive_keywords,
    classify_lines,
    load_signatures,
    unknown_signature_ids,
)

FIX = Path(__file__).parent / "fixtures" / "logs"


def lines_of(name: str) -> list[str]:
    return (FIX / name).read_text(encoding="utf-8").splitlines()


def run(lines: list[str], c: Classifier | None = None) -> tuple[Classifier, list[Match]]:
    c = c or Classifier()
    out: list[Match] = []
    for line in lines:
        out.extend(c.feed(line))
    out.extend(c.flush())
    return c, out


# -- the seed: FX/dynamo race in three drafter threads ------------------------------------------


def test_seed_fx_crash_in_three_threads() -> None:
    lines = lines_of("seed_fx_threads.log")
    c, out = run(lines)
    assert [(m.kind, m.thread, m.update) for m in out] == [
        ("fx-dynamo-race", "drafter-0", False),
        ("fx-dynamo-race", "drafter-1", False),
        ("fx-dynamo-race", "drafter-2", False),
    ]
    first, final = c.first_error, c.final_error
    assert first is not None and final is not None
    assert first.layer is Layer.APP and first.severity is Severity.ERROR
    assert first.label.startswith("FX traced a dynamo-optimized function")
    assert first.thread == "drafter-0" and final.thread == "drafter-2"
    # the traceback: from the thread header through the frames to the exception and its message
    start = lines.index("Exception in thread drafter-0:")
    exc = lines.index("RuntimeError: Detected that you are using FX to symbolically trace")
    assert first.traceback_start == start + 1
    assert first.line_no == exc + 1 and first.line == lines[exc]
    assert list(first.traceback) == lines[start : exc + 2]
    assert first.traceback[-1] == "a dynamo-optimized function. This is not supported at the moment."
    assert "[2025-01-14 01:23:44] step 0 main: waiting for drafters" not in first.traceback
    assert first.exceptions == ("RuntimeError: Detected that you are using FX to symbolically trace",)
    assert final.traceback[0] == "Exception in thread drafter-2:" and final.line_no > first.line_no
    assert c.counts == {"fx-dynamo-race": 3}
    assert len(c.errors) == 3
    f = final.to_finding()
    assert f.layer is Layer.APP and f.kind == "fx-dynamo-race" and "drafter-2" in f.summary
    assert f.subject["traceback"][0] == "Exception in thread drafter-2:"


def test_interleaved_thread_tracebacks_are_both_reported() -> None:
    lines = [
        "Exception in thread drafter-0:",
        "Traceback (most recent call last):",
        "Exception in thread drafter-1:",
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in run',
        '  File "b.py", line 2, in run',
        "    raise RuntimeError(",
        "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function.",
        '  File "a.py", line 9, in run',
        "KeyError: 'x'",
    ]
    c, out = run(lines)
    assert sorted(m.thread for m in out) == ["drafter-0", "drafter-1"]
    assert {m.kind for m in out} == {"fx-dynamo-race", "python-traceback"}
    assert all(m.traceback[0].startswith("Exception in thread") for m in out)


# -- chains, prefixes, upgrades ---------------------------------------------------------------


def test_chained_exceptions_are_one_error() -> None:
    lines = lines_of("chained.log")
    c, out = run(lines)
    assert [(m.label, m.update) for m in out] == [
        ("KeyError: 'shard-00042'", False),
        ("RuntimeError: cannot load shard-00042", True),
        ("SystemExit: data pipeline failed", True),
    ]
    assert len({m.chain_id for m in out}) == 1
    e = c.first_error
    assert e is c.final_error or e == c.final_error
    assert e.exceptions == ("KeyError: 'shard-00042'", "RuntimeError: cannot load shard-00042", "SystemExit: data pipeline failed")
    assert e.traceback[0] == "Traceback (most recent call last):" and e.traceback[-1] == "SystemExit: data pipeline failed"
    assert "During handling of the above exception, another exception occurred:" in e.traceback
    assert "The above exception was the direct cause of the following exception:" in e.traceback
    assert "[2025-02-01 10:00:01] cleanup: closing writers" not in e.traceback
    assert e.traceback_start == 2 and e.line_no == lines.index("SystemExit: data pipeline failed") + 1
    assert len(c.errors) == 1


def test_torchrun_rank_prefixes() -> None:
    c, out = run(lines_of("torchrun_ranks.log"))
    by_kind = {m.kind: m for m in out}
    oom = by_kind["cuda-oom"]
    assert oom.layer is Layer.GPU and all(line.startswith("[rank0]: ") for line in oom.traceback)
    assert len(oom.traceback) == 6
    nccl = by_kind["nccl-error"]
    assert all(line.startswith("[rank1]: ") for line in nccl.traceback) and len(nccl.traceback) == 6
    assert by_kind["torchrun-child-failed"].severity is Severity.WARNING
    assert c.first_error.kind == "cuda-oom" and c.final_error.kind == "nccl-error"


def test_backend_compiler_failed_upgraded_by_its_cause() -> None:
    c, out = run(lines_of("backend_compiler_failed.log"))
    assert [(m.kind, m.update) for m in out] == [("dynamo-backend-failed", False), ("fx-dynamo-race", True)]
    e = c.final_error
    assert e.kind == "fx-dynamo-race" and e.line.startswith("RuntimeError: Detected")
    assert e.traceback[-1].startswith("RuntimeError: Detected") and "step 13 loss 3.20" not in e.traceback


def test_incomplete_traceback_on_flush() -> None:
    c = Classifier()
    for line in ["step 1", "Traceback (most recent call last):", '  File "x.py", line 3, in f', "    g()"]:
        assert c.feed(line) == []
    out = c.flush()
    assert [(m.kind, m.severity) for m in out] == [("python-traceback-incomplete", Severity.WARNING)]
    assert c.first_error is None


def test_exception_ignored_is_a_warning() -> None:
    c, out = run(
        [
            "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>",
            "Traceback (most recent call last):",
            '  File "dataloader.py", line 1479, in __del__',
            "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_shutdown'",
        ]
    )
    assert [(m.kind, m.severity) for m in out] == [("python-traceback", Severity.WARNING)]
    assert c.first_error is None


def test_syntax_error_traceback() -> None:
    c, out = run(
        [
            "Traceback (most recent call last):",
            '  File "/workspace/train.py", line 12',
            "    def f(:",
            "          ^",
            "SyntaxError: invalid syntax",
        ]
    )
    assert [(m.kind, m.label, m.layer) for m in out] == [("syntax-error", "SyntaxError in the deployed code", Layer.APP)]


def test_stray_lines_inside_traceback_are_classified_alone() -> None:
    c, out = run(
        [
            "Traceback (most recent call last):",
            '  File "x.py", line 3, in f',
            "Killed",
            "    g()",
            "ValueError: boom",
        ]
    )
    assert [m.kind for m in out] == ["killed", "python-traceback"]
    assert out[1].traceback == ("Traceback (most recent call last):", '  File "x.py", line 3, in f', "    g()", "ValueError: boom")


def test_log_lines_are_not_mistaken_for_exceptions() -> None:
    c = Classifier()
    c.feed("Traceback (most recent call last):")
    assert c.feed("INFO: step 5 loss 2.0") == []
    assert c.feed("WARNING:root:slow") == []
    out = c.feed("ValueError: x")
    assert out and out[0].label == "ValueError: x"


# -- single-line signatures ------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, kind, layer, label",
    [
        ("Killed", "killed", Layer.PROCESS, None),
        ("bash: line 1: 91451 Killed                  python3 train.py", "killed", Layer.PROCESS, None),
        (
            "[rank0]:[E1014 01:23:45.678 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600046 milliseconds before timing out.",
            "nccl-timeout",
            Layer.APP,
            None,
        ),
        ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error", "nccl-error", Layer.APP, None),
        ("Fatal Python error: Segmentation fault", "segfault", Layer.APP, None),
        ("terminate called after throwing an instance of 'c10::Error'", "cpp-terminate", Layer.APP, "C++ exception escaped: c10::Error"),
        ("ModuleNotFoundError: No module named 'flash_attn'", "module-not-found", Layer.APP, "missing module flash_attn"),
        ("ImportError: cannot import name 'flex_attention' from 'torch.nn.attention'", "import-error", Layer.APP, None),
        ("OSError: [Errno 28] No space left on device", "disk-full", Layer.CONTAINER, None),
        ("RuntimeError: can't start new thread", "resource-limit", Layer.CONTAINER, None),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda-illegal-access", Layer.GPU, None),
        ("RuntimeError: CUDA error: device-side assert triggered", "cuda-assert", Layer.APP, None),
        ("RuntimeError: CUDA error: unspecified launch failure", "cuda-error", Layer.GPU, None),
        ("RuntimeError: No CUDA GPUs are available", "cuda-no-device", Layer.GPU, None),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "cuda-oom", Layer.GPU, "CUDA out of memory"),
        ("torch._inductor.exc.InductorError: LoweringException: AssertionError", "inductor-error", Layer.APP, None),
        ("torch._dynamo.exc.Unsupported: call_function BuiltinVariable", "dynamo-error", Layer.APP, "torch.compile (dynamo) error: Unsupported"),
        ("IndentationError: unexpected indent", "syntax-error", Layer.APP, "IndentationError in the deployed code"),
    ],
)
def test_single_line_signatures(line: str, kind: str, layer: Layer, label: str | None) -> None:
    c = Classifier()
    out = c.feed(line)
    assert [(m.kind, m.layer) for m in out] == [(kind, layer)]
    if label:
        assert out[0].label == label
    assert out[0].line_no == 1 and out[0].traceback == ()


@pytest.mark.parametrize(
    "line",
    [
        "[2025-01-14 01:23:45] step 1200/50000 loss=2.3411 lr=3.0e-04 grad_norm=0.88 tok/s=48211",
        "UserWarning: TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled.",
        "  warnings.warn(",
        "epoch 3 done; killed 0 stragglers",  # lowercase 'killed'
        "",
        "Killed 3 stale workers and restarted",
    ],
)
def test_ordinary_lines_do_not_match(line: str) -> None:
    assert Classifier().feed(line) == []


def test_trailing_newline_is_ignored() -> None:
    out = Classifier().feed("Killed\n")
    assert out and out[0].line == "Killed"


# -- user signatures ----------------------------------------------------------------------------


def test_user_signatures() -> None:
    user = load_signatures(
        [
            {"pattern": r"loss is nan at step (?P<step>\d+)", "layer": "app", "label": "loss diverged at step {step}",
             "advice": "lower the learning rate"},
            {"pattern": r"shard \d+ missing", "layer": "container", "label": "data shard missing", "severity": "warning",
             "ignore_case": True},
            {"pattern": r"Detected that you are using FX", "layer": "APP", "label": "our FX race", "kind": "fx-ours"},
        ]
    )
    assert user[0].keywords == ("loss is nan at step ",) and user[0].source == "config" and user[0].priority == 100
    assert user[1].keywords == (" missing",) and user[1].severity is Severity.WARNING
    c = Classifier(user=user)
    m = c.feed("[10:00] loss is nan at step 1234")
    assert m[0].label == "loss diverged at step 1234" and m[0].advice == "lower the learning rate"
    assert c.feed("SHARD 17 MISSING")[0].kind == "user"
    # a user signature outranks the built-in one inside a traceback
    _, out = run(lines_of("seed_fx_threads.log"), c)
    assert {m.kind for m in out} == {"fx-ours"}
    assert c.first_error.kind == "user"  # the nan line came first


@pytest.mark.parametrize(
    "items, message",
    [
        ([{"pattern": "ok", "layer": "app", "label": "x"}, {"pattern": "bad(", "layer": "app", "label": "y"}],
         "signatures[1].pattern: invalid regular expression 'bad('"),
        ([{"pattern": "x+", "layer": "gpuu", "label": "y"}], "signatures[0].layer: 'gpuu' is not a layer (did you mean 'gpu'?"),
        ([{"patern": "x", "layer": "app", "label": "y"}], "signatures[0].patern: unknown key (did you mean 'pattern'?)"),
        ([{"pattern": "abc", "layer": "app"}], "signatures[0].label: missing"),
        ([{"pattern": "a*", "layer": "app", "label": "y"}], "signatures[0].pattern: 'a*' matches the empty string"),
        ([{"pattern": "", "layer": "app", "label": "y"}], "signatures[0].pattern: empty pattern"),
        (["nope"], "signatures[0]: expected a table"),
        ([{"pattern": 3, "layer": "app", "label": "y"}], "signatures[0].pattern: expected a string"),
        ([{"pattern": "abc", "layer": "app", "label": "y", "severity": "fatal"}], "signatures[0].severity: 'fatal' is not one of"),
        ([{"pattern": "abc", "layer": "app", "label": "y", "priority": "high"}], "signatures[0].priority: expected an integer"),
        ({"pattern": "abc"}, "signatures: expected a list of tables"),
    ],
)
def test_bad_user_signatures(items, message: str) -> None:
    with pytest.raises(ValueError) as ei:
        load_signatures(items)
    assert message in str(ei.value)


def test_load_signatures_none_and_empty() -> None:
    assert load_signatures(None) == [] and load_signatures([]) == []


@pytest.mark.parametrize(
    "pattern, flags, expected",
    [
        (r"^\s*Killed\s*$", 0, ("Killed",)),
        (r"OutOfMemoryError|CUDA out of memory", 0, ("OutOfMemoryError", "CUDA out of memory")),
        (r"(?i)nan loss", 0, ("nan loss",)),
        (r"NaN Loss", 2, ("nan loss",)),  # re.IGNORECASE
        (r"\d+\.\d+", 0, None),
        (r"ab", 0, None),
        (r"foo(bar)+baz", 0, ("foo",)),
        (r"x*ERROR_[A-Z]+", 0, ("ERROR_",)),
        (r"(?:abc|d)xyz", 0, ("xyz",)),
    ],
)
def test_keyword_derivation(pattern: str, flags: int, expected) -> None:
    assert _derive_keywords(pattern, flags) == expected


def test_signature_without_keywords_runs_on_every_line() -> None:
    sig = Signature(r"\bE\d{3}\b", Layer.APP, "error code", source="config")
    assert sig.keywords == ()
    c = Classifier(user=[sig])
    assert [m.kind for m in c.feed("step 3 E042 happened")] == ["log-error"]


def test_builtin_table_is_sane() -> None:
    kinds = [s.kind for s in BUILTIN]
    assert len(kinds) == len(set(kinds))
    for s in BUILTIN:
        assert s.keywords, s.kind  # every built-in is prefiltered
        assert s.advice and s.label
        assert s.regex.search("") is None


def test_history_is_bounded_but_first_error_kept() -> None:
    c = Classifier(max_matches=5)
    for i in range(50):
        c.feed(f"RuntimeError: CUDA error: unspecified launch failure {i}")
    assert len(c.matches) == 5
    assert c.first_error.line.endswith(" 0") and c.final_error.line.endswith(" 49")
    assert c.counts == {"cuda-error": 50}


def test_classify_lines_helper() -> None:
    c = classify_lines(["ok", "Killed"])
    assert c.final_error.kind == "killed"


def test_step_lines_are_never_matches() -> None:
    # the classifier's speed on such lines is measured in bench/bench_classifier.py, not asserted here
    c = Classifier()
    for i in range(20_000):
        c.feed(f"[2025-01-14 01:23:45] step {i}/50000 loss={2.0 + i % 7 / 10:.4f} lr=3.0e-04 tok/s=48211")
    assert not c.matches and c.error_count == 0 and c.first_error is None


# -- ignored signatures, dead threads, error count ----------------------------------------------


def test_dead_threads_and_error_count() -> None:
    c, _ = run(lines_of("seed_fx_threads.log"))
    dead = c.dead_threads()
    assert [(m.thread, m.kind) for m in dead] == [(f"drafter-{i}", "fx-dynamo-race") for i in range(3)]
    assert dead[0] == c.first_error and c.error_count == 3
    c, out = run(lines_of("chained.log"))
    assert len(out) == 3 and c.error_count == 1 and c.dead_threads() == []  # updates are one error
    c, _ = run(["Killed", "Killed"])
    assert c.error_count == 2


def test_ignore_drops_matches_of_those_ids() -> None:
    c = Classifier(ignore=frozenset({"killed", "fx-dynamo-race", "no-such-id"}))
    _, out = run(["Killed", *lines_of("seed_fx_threads.log"), "RuntimeError: CUDA error: unspecified launch failure"], c)
    assert [m.kind for m in out] == ["cuda-error"]  # the FX tracebacks are dropped whole, not made generic
    assert c.first_error is not None and c.first_error.kind == "cuda-error" and c.final_error == c.first_error
    assert [m.kind for m in c.errors] == ["cuda-error"] and c.error_count == 1 and c.dead_threads() == []
    assert Classifier(ignore={"python-traceback"}).feed_many(lines_of("chained.log")) == []


def test_a_chain_that_turns_into_an_ignored_signature_is_withdrawn() -> None:
    c = Classifier(ignore=frozenset({"fx-dynamo-race"}))
    assert c.feed("Killed")[0].kind == "killed"
    c.feed("Traceback (most recent call last):")
    c.feed('  File "x.py", line 1, in f')
    assert [m.kind for m in c.feed("RuntimeError: compile failed:")] == ["python-traceback"]
    assert c.final_error is not None and c.final_error.kind == "python-traceback" and c.error_count == 2
    assert c.feed("Detected that you are using FX to symbolically trace") == []  # the message decides: ignored
    assert c.first_error is not None and c.first_error.kind == "killed" and c.final_error == c.first_error
    assert c.error_count == 1 and [m.kind for m in c.errors] == ["killed"]


def test_an_error_chain_that_turns_into_a_warning_is_no_error() -> None:
    c, out = run([
        "Traceback (most recent call last):", '  File "x.py", line 1, in f', "ValueError: x", "",
        "The above exception was the direct cause of the following exception:", "",
        "Traceback (most recent call last):", '  File "y.py", line 2, in g',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    ])
    assert [(m.kind, m.severity) for m in out] == [("python-traceback", Severity.ERROR),
                                                   ("torchrun-child-failed", Severity.WARNING)]
    assert c.first_error is None and c.final_error is None and c.errors == [] and c.error_count == 0


def test_unknown_signature_ids() -> None:
    user = load_signatures([{"pattern": "x+y", "layer": "app", "label": "z", "kind": "mine"}])
    ids = ["killed", "kiled", "mine", "python-traceback", "python-traceback-incomplete", "kiled"]
    assert unknown_signature_ids(ids, user) == ["kiled"]
    assert unknown_signature_ids(["mine"]) == ["mine"]
    assert Classifier(ignore=frozenset({"kiled"})).feed("Killed")[0].kind == "killed"


def test_numpy_naming_the_array_the_code_asked_for_is_the_code_and_a_bare_memory_error_the_container() -> None:
    # ``np.zeros((1000000, 1000000))`` is a shape computed wrong far more often than a container too
    # small: numpy says the size and shape; a bare MemoryError (ulimit -v, memory.max) says neither
    head = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>', "    x = np.zeros((n, n))"]
    numpy = classify_lines(head + ["numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.28 TiB for an array "
                                   "with shape (1000000, 1000000) and data type float64"]).first_error
    assert numpy is not None and numpy.signature is not None
    assert (numpy.signature.kind, numpy.signature.layer) == ("numpy-array-memory", Layer.APP)
    assert "7.28 TiB" in numpy.label and "(1000000, 1000000)" in numpy.label, numpy.label
    bare = classify_lines([*head, "MemoryError"]).first_error
    assert bare is not None and bare.signature is not None
    assert (bare.signature.kind, bare.signature.layer) == ("memory-error", Layer.CONTAINER)
