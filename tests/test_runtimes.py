"""The runtimes behind one interface: nobody outside ``cockpit/core/runtimes/`` asks which runtime
it has (an AST check over the package), a new runtime is one module (a toy runtime registered by
``tests/lab/toy_runtime.py`` runs a real attempt on the lab's sshd), and the registry's answers."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cockpit.core.config import ConfigError, parse_config
from cockpit.core.layers import Layer, Outcome
from cockpit.core.runtimes import (
    EngineRuntime,
    HostRuntime,
    PctRuntime,
    SlurmRuntime,
    UnknownRuntime,
    register,
    registered,
    runtime_for,
)

ROOT = Path(__file__).resolve().parent.parent / "cockpit"

#: the names ``[target] runtime`` takes (and a toy's, so a check against it is caught too)
RUNTIME_NAMES = frozenset({"pct", "docker", "podman", "none", "slurm", "toy"})

#: files still holding a check at this change's end, each with who owns the fix (kept empty when
#: possible: an entry here is a debt, not a licence)
ALLOWED: dict[str, str] = {}

#: folders whose runtime names are data, not a chosen runtime's kind: discovery lists the candidate
#: targets a host offers (the host, its pct and engine containers) before any config exists
DATA_DIRS = ("core/runtimes/", "demo/project/", "core/discover/", "cli/discover")

# -- (a) no runtime-kind check outside core/runtimes -------------------------------------------


def _names_runtime(node: ast.AST) -> bool:
    """The expression reads a runtime's name: ``….runtime``, ``….kind``, ``runtime``, ``kind``, ``rt``."""
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in ("runtime", "kind"):
            return True
        if isinstance(n, ast.Name) and n.id in ("runtime", "kind", "rt"):
            return True
    return False


def _runtime_literal(node: ast.AST) -> bool:
    """A runtime's name as a literal, or a tuple/list/set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in RUNTIME_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_runtime_literal(e) for e in node.elts)
    return False


#: a membership table of runtime names: ``CONTAINER_KINDS``, ``ENGINE_KINDS``, ``RUNTIME_KINDS``…
KINDS_TABLE = re.compile(r"^(CONTAINER|ENGINE|RUNTIME|SCHEDULER)S?_(KINDS|NAMES|TYPES)$")


def _kinds_table(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(KINDS_TABLE.match(name))


def kind_checks(source: str) -> list[tuple[int, str]]:
    """Every comparison of a runtime's name in ``source``: (line, the expression)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        literal = any(_runtime_literal(s) for s in sides)
        named = any(_names_runtime(s) for s in sides if not _runtime_literal(s))
        table = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(_kinds_table(s) for s in node.comparators)
        if (literal and named) or table:
            out.append((node.lineno, ast.unparse(node)))
    return out


@pytest.mark.parametrize("snippet", [
    'if cfg.target.runtime == "slurm": pass',
    'x = rt.kind in ("docker", "podman")',
    'x = "pct" != self.cfg.target.runtime',
    'x = runtime in CONTAINER_KINDS',
    'x = t.runtime not in ("pct", "docker", "podman")',
    'x = getattr(runtime, "kind", "") == "slurm"',
])
def test_the_check_catches_each_shape_of_a_kind_check(snippet):
    assert kind_checks(snippet), snippet


@pytest.mark.parametrize("snippet", [
    'x = mark.kind == "warning"',
    'x = rt.restart_word == "reboot"',
    'x = RUNTIME_SHAPES[cfg.target.runtime].container is None',
    'x = f.kind == "xid"',
])
def test_the_check_leaves_other_comparisons_alone(snippet):
    assert not kind_checks(snippet), snippet


def test_no_runtime_kind_check_outside_core_runtimes():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(DATA_DIRS) or rel in ALLOWED:
            continue
        found += [f"cockpit/{rel}:{line}: {text}" for line, text in kind_checks(path.read_text())]
    assert not found, "ask the runtime instead:\n" + "\n".join(found)


def test_the_allow_list_holds_only_files_that_still_check():
    stale = [rel for rel in ALLOWED if (ROOT / rel).exists() and not kind_checks((ROOT / rel).read_text())]
    assert not stale, f"no longer checks the kind: drop from ALLOWED: {stale}"


# -- (c) the registry ---------------------------------------------------------------------------


def _cfg(runtime: str, container: Any = None) -> Any:
    target = SimpleNamespace(runtime=runtime, container=container, pct="pct", docker="docker", podman="podman")
    return SimpleNamespace(target=target, job=SimpleNamespace(workdir="/work"), slurm=SimpleNamespace(node_local_cache=False))


def test_each_built_in_name_picks_its_runtime():
    assert set(registered()) >= {"pct", "docker", "podman", "none", "slurm"}
    assert isinstance(runtime_for(_cfg("pct", 200)), PctRuntime)
    docker, podman = runtime_for(_cfg("docker", "trainer")), runtime_for(_cfg("podman", "trainer"))
    assert isinstance(docker, EngineRuntime) and docker.tool == "docker" and podman.tool == "podman"
    assert isinstance(runtime_for(_cfg("none")), HostRuntime)
    slurm = runtime_for(_cfg("slurm"))
    assert isinstance(slurm, SlurmRuntime) and slurm.scheduler is not None and slurm.job_nodes is not None


def test_an_unknown_runtime_is_a_clear_error():
    with pytest.raises(UnknownRuntime) as err:
        runtime_for(_cfg("kubernetes"))
    text = str(err.value)
    assert "'kubernetes'" in text and "'pct'" in text and "'slurm'" in text


def test_register_refuses_a_nameless_runtime():
    with pytest.raises(ValueError):
        register("", lambda cfg: HostRuntime())


def test_the_config_refuses_an_unregistered_runtime_and_takes_a_registered_one():
    with pytest.raises(ConfigError) as err:
        parse_config('[target]\nhost = "h"\nruntime = "nomad"\n')
    assert "nomad" in str(err.value)
    register("nomad", lambda cfg: HostRuntime())
    cfg = parse_config('[target]\nhost = "h"\nruntime = "nomad"\n')
    assert isinstance(runtime_for(cfg), HostRuntime)
    with pytest.raises(ConfigError):  # its shape (the default) takes no container
        parse_config('[target]\nhost = "h"\nruntime = "nomad"\ncontainer = 3\n')


def test_what_each_runtime_answers_instead_of_its_name():
    pct, docker, host, slurm = PctRuntime(200), EngineRuntime("docker", "t"), HostRuntime(), SlurmRuntime()
    assert pct.can_reboot and docker.can_reboot and not host.can_reboot and not slurm.can_reboot
    assert host.reboot_refusal and not pct.reboot_refusal
    assert pct.reads_host_kmsg and not docker.reads_host_kmsg and host.kmsg_refusal
    assert pct.gpu_host_container == 200 and docker.gpu_host_container is None
    assert docker.zombie_engine == "docker" and pct.zombie_engine is None
    assert not slurm.looks_for_strays and slurm.strays_skip and host.looks_for_strays
    assert not slurm.local_scratch and host.local_scratch and not slurm.gpu_stream
    assert pct.command_layer is Layer.CONTAINER and host.command_layer is Layer.HOST
    cfg = _cfg("none")
    assert pct.lock_identity(cfg) == "200" and host.lock_identity(cfg) == "/work" == slurm.lock_identity(cfg)


def test_the_interactive_shell_is_the_one_ssh_argv_and_the_runtime_entry(tmp_path):
    cfg = parse_config('[target]\nhost = "gpu1"\nruntime = "docker"\ncontainer = "trainer"\n[ssh]\nforward_agent = true\n')
    argv, cwd = runtime_for(cfg).interactive_argv(cfg, {})
    assert argv[:5] == ["ssh", "-t", "-A", "-o", "StrictHostKeyChecking=yes"] and argv[5] == "gpu1" and cwd is None
    assert shlex.split(argv[6])[:4] == ["docker", "exec", "-it", "trainer"]


# -- (b) a toy runtime, one module, driven by the real engine ---------------------------------


@pytest.mark.lab
async def test_a_toy_runtime_in_one_module_runs_a_real_attempt(lab, lab_config, engines, tmp_path):
    from tests.lab import toy_runtime

    work = Path(lab.workspace(200)) / "toy"
    work.mkdir(parents=True, exist_ok=True)
    script = ('echo "toy env: COCKPIT_TOY=${COCKPIT_TOY:-unset}"; i=0; '
              'while [ $i -lt 400 ]; do echo "step $i"; i=$((i+1)); sleep 0.1; done')
    cfg = lab_config(target={"name": "toy", "runtime": "toy", "container": None}, gpu=None,
                     job={"command": f"sh -c {shlex.quote(script)}", "workdir": str(work), "log": f"{work}/train-{{attempt}}.log",
                          "stop_timeout": 3, "dump_before_stop": False},
                     deploy={"dest": f"{work}/src"}, cache={"paths": []},
                     journal={"path": str(tmp_path / "journal.jsonl")})
    eng = engines(cfg)
    assert isinstance(eng.runtime, toy_runtime.ToyRuntime) and eng.transport.runtime is eng.runtime
    res = await eng.attempt("through the toy runtime")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log = Path(cfg.log_path(res.attempt)).read_text()
    assert "toy env: COCKPIT_TOY=1" in log, log[:500]
    probe = await eng.transport.run("echo ${COCKPIT_TOY:-unset}", timeout=10)
    assert probe.text.strip() == "1"


async def test_the_toy_runtime_enters_through_its_own_shell_on_the_local_transport():
    from cockpit.core.remote.local import LocalTransport
    from tests.lab.toy_runtime import ToyRuntime

    tr = LocalTransport(ToyRuntime())
    try:
        res = await tr.run("echo toy=${COCKPIT_TOY:-unset}", timeout=10)  # the persistent session
        assert res.text.strip() == "toy=1", res.text
        lines = [line async for line in tr.stream_lines("echo toy=${COCKPIT_TOY:-unset}", timeout=10)]  # a wrapped command
        assert [b.strip() for b in lines] == [b"toy=1"], lines
    finally:
        await tr.close()
