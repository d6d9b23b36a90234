"""``[[targets]]`` and ``[[groups]]`` in the config: inheritance, selection, and errors that name
the file, the key and the fix.  A single ``[target]`` keeps working unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.core.config import ConfigError, parse_config

BASE = '''
[target]
host = "10.1.2.6"
user = "root"
runtime = "pct"
[job]
command = "python3 train.py"
workdir = "/workspace"
log = "/workspace/train-{attempt}.log"
'''
TWO = BASE + '''
[[targets]]
name = "train"
container = 200

[[targets]]
name = "eval"
container = 201
host = "10.1.2.7"
[targets.job]
command = "python3 eval.py"

[[groups]]
name = "both"
targets = ["train", "eval"]
'''


def test_targets_inherit_and_override():
    cfg = parse_config(TWO, path=Path("/tmp/x/cockpit.toml"))
    assert cfg.selected == "train" and cfg.target_names == ["train", "eval"]
    assert (cfg.target.host, cfg.target.user, cfg.target.container, cfg.job.command) == ("10.1.2.6", "root", 200, "python3 train.py")
    ev = cfg.for_target("eval")
    assert (ev.target.host, ev.target.user, ev.target.container) == ("10.1.2.7", "root", 201)
    assert ev.job.command == "python3 eval.py" and ev.job.workdir == "/workspace"  # the rest of [job] inherited
    assert ev.display_name == "eval" and ev.for_target("train").target.container == 200
    assert cfg.journal_path != ev.journal_path and ev.journal_path.parts[-3:] == ("targets", "eval", "journal.jsonl")
    assert cfg.group_members("both") == ["train", "eval"]


def test_a_single_target_is_unchanged():
    cfg = parse_config(BASE.replace('runtime = "pct"', 'runtime = "pct"\ncontainer = 200'))
    assert cfg.selected is None and cfg.targets == [] and cfg.target_names == ["10.1.2.6"]
    assert cfg.journal_path.parts[-2:] == (".cockpit", "journal.jsonl")
    assert cfg.for_target("10.1.2.6") is cfg


@pytest.mark.parametrize(("text", "key", "words"), [
    (TWO.replace('name = "eval"', 'name = "train"'), "targets[1].name", "names two targets"),
    (TWO.replace('targets = ["train", "eval"]', 'targets = ["train", "evl"]'), "groups[0].targets[1]", "did you mean 'eval'"),
    (TWO.replace("container = 201", "containr = 201"), "targets[1].containr", "did you mean 'container'"),
    (TWO.replace('name = "eval"', 'name = "../eval"'), "targets[1].name", "names a directory"),
    (TWO.replace("container = 201", ""), "target.container", "is required"),
    (BASE.replace('runtime = "pct"', 'runtime = "pct"\ncontainer = 200') + '[[groups]]\nname = "g"\ntargets = ["a"]\n', "groups", "needs [[targets]]"),
])
def test_errors_name_the_key_and_the_fix(text, key, words):
    with pytest.raises(ConfigError) as e:
        parse_config(text)
    assert e.value.key == key and words in str(e.value), str(e.value)


def test_unknown_target_and_group_names_say_which_exist():
    cfg = parse_config(TWO)
    with pytest.raises(ConfigError, match="did you mean 'eval'.*known targets: train, eval"):
        cfg.for_target("evl")
    with pytest.raises(ConfigError, match="known groups: both"):
        cfg.group_members("all-nodes")
