"""Metrics from log lines (issue 15): each built-in form and [metrics] pattern parsed to exact
values, the step resolved as a run logs it (HF dict lines at the bar's step, Lightning epochs,
evaluation bars left out), the bounded series, and malformed lines that never crash."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.core.config import ConfigError, parse_config
from cockpit.core.metrics import AttemptMetrics, MetricParser, Reading, Series, goal
from cockpit.core.metrics.report import at_steps
from tests.examples import examples

P = MetricParser()


@pytest.mark.parametrize("line, values, step, total, bar", [
    # key value text, the forms training scripts print
    ("step 120 loss 1.83 lr 3e-4 tok/s 5100", {"loss": 1.83, "lr": 3e-4, "tok/s": 5100.0}, 120, None, None),
    ("step=120 | loss=1.83", {"loss": 1.83}, 120, None, None),
    ("step: 120, loss: 1.83, acc: 0.5", {"loss": 1.83, "acc": 0.5}, 120, None, None),
    ("[rank0]: iter 7/700 train/loss 2.5e+00 time 0.25s", {"train/loss": 2.5, "time": 0.25}, 7, 700, None),
    ("2024-05-01 12:00:00,123 INFO step 5 loss 0.5", {"loss": 0.5}, 5, None, None),
    # dicts: HF Trainer (no step, an epoch), JSON lines, numpy-wrapped values
    ("{'loss': 1.83, 'step': 120}", {"loss": 1.83}, 120, None, None),
    ("{'loss': 2.0312, 'grad_norm': 1.234, 'learning_rate': 4.9e-05, 'epoch': 0.03}",
     {"loss": 2.0312, "grad_norm": 1.234, "learning_rate": 4.9e-05, "epoch": 0.03}, None, None, None),
    ('{"loss": 0.75, "global_step": 40, "eval_accuracy": 0.81}', {"loss": 0.75, "eval_accuracy": 0.81}, 40, None, None),
    ("{'grad_norm': np.float64(1.23), 'loss': 2.5}", {"grad_norm": 1.23, "loss": 2.5}, None, None, None),
    # progress bars: tqdm / HF (rate in it/s or s/it), Lightning (epoch, postfix)
    ("  12%|█▏        | 120/1000 [00:30<03:40,  4.00it/s]", {"it/s": 4.0}, None, None, (120, 1000, None)),
    (" 30%|███       | 3/10 [00:04<00:10,  1.50s/it]", {"it/s": 1 / 1.5}, None, None, (3, 10, None)),
    ("Epoch 2:  12%|█▏        | 120/1000 [00:30<03:40, 4.00it/s, v_num=0, loss=1.830, train_loss_step=1.83]",
     {"it/s": 4.0, "loss": 1.83, "train_loss_step": 1.83}, None, None, (120, 1000, 2)),
    ("train:  50%|█████     | 50/100 [00:10<00:10, 5100.00tok/s, loss=0.9]", {"tok/s": 5100.0, "loss": 0.9}, None, None, (50, 100, None)),
    # a bar rewritten with carriage returns, then HF's dict on the same line
    ("\r 10%|█ | 100/1000 [00:25<03:45, 4.00it/s]\r 12%|█▏ | 120/1000 [00:30<03:40, 4.00it/s]{'loss': 1.83, 'epoch': 0.12}",
     {"it/s": 4.0, "loss": 1.83, "epoch": 0.12}, None, None, (120, 1000, None)),
])
def test_each_builtin_form_gives_its_exact_values(line, values, step, total, bar):
    r = P.parse(line)
    assert r is not None, line
    assert r.values == pytest.approx(values, rel=1e-12) and list(r.values) == list(values)
    assert (r.step, r.total, r.bar) == (step, total, bar)


@pytest.mark.parametrize("line", [
    '  File "/workspace/train.py", line 331, in train_step',       # "line 331" is not a metric
    "[train] loaded shard 3/4",
    "Validation DataLoader 0:  50%|█████     | 5/10 [00:01<00:01,  4.00it/s]",  # not a training step
    "{'lr': 0.001, 'batch_size': 32, 'num_epochs': 10}",          # a config dump, not metrics
    "[rank0]:[W init.cpp:12] NCCL_DEBUG=INFO",
    "compiling graph 12 with mode=max-autotune",
    "",
])
def test_lines_without_metrics_give_nothing(line):
    assert P.parse(line) is None


def test_nan_and_inf_are_kept_as_values_and_the_step_stays():
    """A loss that turned NaN is the run's most important number (it diverged), not noise."""
    r = P.parse("RuntimeError: loss is NaN at step 1200 (loss nan, grad inf)")
    assert r is not None and r.step == 1200
    assert math.isnan(r.values["loss"]) and r.values["grad"] == math.inf


def test_the_user_pattern_comes_first_and_names_step_and_total():
    p = MetricParser(r"it (?P<step>\d+)/(?P<total>\d+) .*nll=(?P<nll>[0-9.e+-]+)", builtin=True)
    r = p.parse("it 40/900 | nll=3.25 | step 7 loss 9")
    assert (r.values, r.step, r.total) == ({"nll": 3.25}, 40.0, 900)
    assert p.parse("step 7 loss 9").values == {"loss": 9.0}  # the built-in forms still read the rest
    only = MetricParser(r"nll=(?P<nll>[0-9.]+)", builtin=False)
    assert only.parse("step 7 loss 9") is None and only.parse("x nll=1.5").values == {"nll": 1.5}
    assert only.keywords == ("nll=",)  # the prefilter: lines without it never reach the regex


@pytest.mark.parametrize("pattern, words", [
    ("step (", "not a valid regular expression"),
    (r"step (?P<step>\d+)", "no named group for a value"),
    (r"loss ([0-9.]+)", "no named group for a value"),
])
def test_a_bad_pattern_is_a_config_error_naming_file_key_and_fix(tmp_path, pattern, words):
    path = tmp_path / "cockpit.toml"
    with pytest.raises(ConfigError) as ei:
        parse_config(f"[target]\nhost = \"x\"\n[metrics]\npattern = '{pattern}'\n", path=path)
    e = ei.value
    assert e.key == "metrics.pattern" and words in e.problem and str(path) in e.message
    assert "named group" in e.fix  # the fix says how to write one


def test_metrics_config_keys():
    cfg = parse_config("[target]\nhost = \"x\"\n[metrics]\npattern = 'nll=(?P<nll>[0-9.]+)'\ntotal_steps = 5000\nbuiltin = false\n")
    assert (cfg.metrics.pattern, cfg.metrics.total_steps, cfg.metrics.builtin, cfg.metrics.max_points) == ("nll=(?P<nll>[0-9.]+)", 5000, False, 2000)
    with pytest.raises(ConfigError) as ei:
        parse_config("[target]\nhost = \"x\"\n[metrics]\ntotal_step = 5\n")
    assert "did you mean 'total_steps'" in ei.value.fix


def feed(m: AttemptMetrics, lines: list[str], t0: float = 1000.0, per_batch: int = 1) -> None:
    for i, line in enumerate(lines):
        r = P.parse(line)
        if r is not None:
            m.apply(i + 1, t0 + i // per_batch, r)


def test_hf_dict_lines_take_the_step_of_the_bar_before_them():
    m = AttemptMetrics(1)
    feed(m, [" 10%|█ | 100/1000 [00:25<03:45, 4.00it/s]",
             "{'loss': 2.0, 'learning_rate': 3e-05, 'epoch': 0.1}",
             " 20%|██ | 200/1000 [00:50<03:20, 4.00it/s]",
             "{'loss': 1.5, 'learning_rate': 2e-05, 'epoch': 0.2}",
             "  5%|▌ | 1/20 [00:00<00:05, 4.00it/s]",                         # an evaluation's bar: smaller total
             "{'eval_loss': 1.7, 'epoch': 0.2}"])
    assert list(zip(m.series["loss"].xs, m.series["loss"].ys, strict=True)) == [(100, 2.0), (200, 1.5)]
    assert m.series["eval_loss"].xs == [200] and m.series["it/s"].xs == [100, 200]
    assert m.progress == (200, 1000) and m.total() == 1000


def test_without_any_step_the_nth_reading_is_step_n():
    m = AttemptMetrics(1)
    feed(m, ["{'loss': 2.0, 'epoch': 0.1}", "noise", "{'loss': 1.0, 'epoch': 0.2}"])
    assert m.series["loss"].xs == [1, 2] and m.series["loss"].ys == [2.0, 1.0]


def test_lightning_epochs_and_a_restarted_bar_continue_the_step():
    m = AttemptMetrics(1)
    feed(m, ["Epoch 0: 100%|█| 100/100 [00:10<00:00, 10.0it/s, loss=2.0]",
             "Epoch 1:  50%|▌| 50/100 [00:05<00:05, 10.0it/s, loss=1.5]"])
    assert m.series["loss"].xs == [100, 150]
    plain = AttemptMetrics(2)
    feed(plain, ["90%|█| 90/100 [00:09<00:01, 10.0it/s, loss=2.0]", "10%|▏| 10/100 [00:01<00:09, 10.0it/s, loss=1.8]"])
    assert plain.series["loss"].xs == [90, 110]  # the same bar again: the next epoch


def test_rate_and_eta_from_the_batches():
    m = AttemptMetrics(1)
    # a backlog of 100 steps read at once, then one step per 0.5 s: 2 steps/s, not 100
    for i in range(1, 101):
        m.apply(i, 1000.0, Reading({"loss": 1.0}, float(i)))
    for k in range(1, 11):
        m.apply(100 + k, 1000.0 + 0.5 * k, Reading({"loss": 1.0}, float(100 + k), total=1000))
    assert m.rate() == pytest.approx(2.0)
    assert m.mean_rate() == pytest.approx(2.0)
    assert m.eta() == pytest.approx((1000 - 110) / 2.0)
    assert m.eta(configured=2000) == pytest.approx((2000 - 110) / 2.0)


def test_a_line_applied_once_even_when_read_again():
    m = AttemptMetrics(1)
    r = Reading({"loss": 1.0}, 1.0)
    assert m.apply(5, 1.0, r) and not m.apply(5, 2.0, r) and not m.apply(3, 2.0, r)
    assert m.series["loss"].count == 1


@pytest.mark.parametrize("name, want", [("loss", "min"), ("eval_loss", "min"), ("val/ppl", "min"), ("eval_accuracy", "max"),
                                        ("tok/s", "max"), ("it/s", "max"), ("train_samples_per_second", "max"), ("lr", None),
                                        ("epoch", None), ("grad_norm", None)])
def test_best_is_min_for_loss_like_and_max_for_accuracy_and_throughput(name, want):
    assert goal(name) == want


def test_a_long_series_stays_bounded_and_keeps_first_last_and_best():
    s = Series("loss", cap=200)
    n = 50_000
    for i in range(n):
        y = 10.0 - i / n + (0.5 if i % 7 == 0 else 0.0)
        if i == 31_337:
            y = -5.0  # one spike down: the best
        s.add(float(i), y)
    assert len(s.xs) <= 201 and s.count == n
    assert (s.xs[0], s.ys[0]) == (0.0, 10.5) and (s.xs[-1], s.ys[-1]) == s.last == (n - 1, 10.0 - (n - 1) / n)
    assert s.best == (31_337.0, -5.0) and (31_337.0 in s.xs)
    assert s.xs == sorted(s.xs)
    gaps = [b - a for a, b in zip(s.xs, s.xs[1:], strict=False)]
    assert max(gaps) <= 4 * (n / 200)  # old and new parts thinned alike, no hole


def test_at_steps_matches_logged_steps_and_says_delta():
    a, b = Series("loss"), Series("loss")
    for i in range(1, 101):
        a.add(float(i), 3.0 - i / 100)
        if i <= 60:
            b.add(float(i), 2.5 - i / 100)
    rows = at_steps(a, b, 5)
    assert [r["step"] for r in rows] == [1, 16, 31, 45, 60]
    assert rows[0] == {"step": 1, "a": 2.99, "b": 2.49, "delta": -0.5, "exact": True}


LINE = st.text(alphabet=st.sampled_from(list("step loss=:{}'\"%|/[]<>,. 0123456789e-+_Epoch\r\x1bnaif█\t")), max_size=200)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(LINE, st.text(max_size=300)))
def test_malformed_lines_never_crash_and_give_finite_values(line):
    r = P.parse(line)
    if r is not None:
        assert all(isinstance(v, float) and math.isfinite(v) for v in r.values.values())
        assert r.step is None or math.isfinite(r.step)
        m = AttemptMetrics(1)
        m.apply(1, 1.0, r)
        m.apply(2, 2.0, Reading.from_record(r.to_record()))
