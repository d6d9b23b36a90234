"""The metric parser's shape templates (cockpit.core.metrics.shapes): a line of a known shape is read
by its template, and every reading is the one the general forms give, whatever the digits."""

from __future__ import annotations

import math
import random
import re

from cockpit.core.actions.nonfinite import NonFiniteWatch
from cockpit.core.metrics import MetricParser
from cockpit.core.metrics.parse import Reading
from cockpit.core.metrics.shapes import ShapeCache, shape, template

BASES = [
    "step 12 | loss 2.3456 | lr 3.000e-04 | grad_norm 1.234 | tokens/s 123456 | mem 61.3GiB | elapsed 1.23s",
    "iter 5/100 loss=0.5 acc 99%",
    "rank0 step 5 loss 1.5",
    "layer12_loss 3.5 step 7",
    "epoch 3 step 10 loss nan",
    "a" + "1" * 46 + " 5 loss 2",  # a key of 48 characters: one digit more and it is no key
    "ab" + "9" * 45 + "c 3 loss 1",
    "loss1 2 step 3",
    "step 1e5 loss 2",
    "x1y2 3 loss 4 step 5",
    "train/loss: 1.5, step: 20",
    "step 10 time 0.25s tok/s 5100 loss 1.0",
    "global_step 3 loss -inf",
    "step 5 step 6 loss 1 loss 2",
    "w1 1 w1 2 loss 3",
    "[2024-01-01 12:00:00] step 100 loss 2.5 it/s 3.4",
    "step .5 loss +1.e3",
    "W0114 01:23:45.123000 140210 torch/_dynamo/convert_frame.py:844] hit cache_size_limit (8) at step 5: grad norm 9.1",
    "Epoch 0:  12%|█▏        | 120/1000 [00:30<03:40, 4.00it/s, loss=1.83]",
    "{'loss': 1.83, 'grad_norm': 0.9, 'epoch': 0.12}",
]


def _reference() -> MetricParser:
    p = MetricParser()
    p.shapes = ShapeCache(lambda s: None)  # never a template: the general forms on every line
    return p


def _key(r: Reading | None) -> object:
    if r is None:
        return None
    return (sorted((k, repr(v)) for k, v in r.values.items()), repr(r.step), r.total, r.bar)


def _mutate(rng: random.Random, s: str) -> str:
    def digits(_: re.Match[str]) -> str:
        n = rng.choice([1, 1, 2, 3, 5, 40, 50])
        if rng.random() < 0.03:
            return "9" * 400  # a step of 1e400: not finite
        return "".join(rng.choice("0123456789") for _ in range(n))
    return re.sub(r"[0-9]+", digits, s)


def test_templates_read_every_line_as_the_general_forms_do() -> None:
    rng = random.Random(7)
    fast, ref = MetricParser(), _reference()
    used = 0
    for _ in range(5_000):
        base = rng.choice(BASES)
        line = base if rng.random() < 0.2 else _mutate(rng, base)
        form = fast.shapes.get(shape(line))
        used += form is not None and form.match(line) is not None
        assert _key(fast.parse(line)) == _key(ref.parse(line)), line
    assert used > 2_500  # most lines were read by a template, not by the general forms


def test_a_template_matches_only_digits_changed_and_keeps_a_key_words_length() -> None:
    line = "rank12 step 5 loss 1.25"
    pat = template(line, [(12, 13)])
    assert pat is not None
    m = pat.fullmatch("rank34 step 123456 loss 9.5")
    assert m is not None and m.group(1) == "123456"
    assert pat.fullmatch("rank3 step 5 loss 1.25") is None  # a key word keeps its digits' length
    assert pat.fullmatch("rank12 step x loss 1.25") is None
    assert pat.fullmatch("rank12 step 5 loss 1.25 ") is None
    assert template(line, [(5, 13)]) is None  # a span that cuts a digit run ("12")


def test_values_are_decided_again_on_every_line() -> None:
    p = MetricParser()
    for i in range(1, 5):
        p.parse(f"step {i} loss 1e5")
    assert p.shapes.get(shape("step 5 loss 1e5")) is not None
    r = p.parse("step 7 loss 1e999")
    assert r is not None and r.step == 7.0 and math.isinf(r.values["loss"])
    r = p.parse("step 1e999 loss 2e0")  # a step that is not finite is no step
    assert r is not None and r.step is None and r.values == {"loss": 2.0}


def test_nan_after_many_lines_of_a_template_is_caught() -> None:
    watch = NonFiniteWatch()
    for i in range(1, 200):
        watch.line(i, f"INFO step {i} | loss {1 + 1 / i:.4f} | lr 3.0e-04")
    assert watch.first is None
    watch.line(200, "INFO step 200 | loss nan | lr 3.0e-04")
    watch.line(201, "INFO step 201 | loss nan | lr 3.0e-04")
    assert watch.first is not None and watch.first.line_no == 200 and watch.first.step == 200.0
    assert watch.count == 2
