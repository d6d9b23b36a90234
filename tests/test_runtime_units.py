"""The container runtimes' command lines, status words and error texts (pct, docker, podman),
and the config checks that go with them."""

from __future__ import annotations

import pytest

from cockpit.core.config import ConfigError, parse_config
from cockpit.core.layers import Layer
from cockpit.core.probes.procs.zombies import engine_advice
from cockpit.core.remote.session import classify_start_failure
from cockpit.core.runtimes import EngineRuntime, PctRuntime


def test_engine_command_lines_are_quoted_and_use_exec_i():
    rt = EngineRuntime("docker", "trainer; rm -rf /", "/opt/my docker")
    assert rt.shell() == "'/opt/my docker' exec -i 'trainer; rm -rf /' /bin/sh"
    assert rt.wrap("echo $HOME") == "'/opt/my docker' exec -i 'trainer; rm -rf /' /bin/sh -c 'echo $HOME'"
    assert rt.restart_command() == "'/opt/my docker' restart 'trainer; rm -rf /'"
    assert rt.status_command() == "'/opt/my docker' inspect --format '{{.State.Status}}' 'trainer; rm -rf /'"
    pod = EngineRuntime("podman", "evalbox")
    assert pod.restart_command() == "podman restart evalbox" and pod.restart_word == "restart"
    assert pod.in_container and pod.start_hint() == "podman start evalbox"
    pct = PctRuntime(200)
    assert pct.restart_command() == "pct reboot 200" and pct.restart_word == "reboot"
    assert pct.status_command() == "pct status 200"
    assert "(exited)" in pod.stopped_detail("exited\n") and pct.stopped_detail("status: stopped\n") == "container 200 is stopped"


@pytest.mark.parametrize(("kind", "out", "want"), [
    ("pct", "status: running\n", "running"), ("pct", "status: stopped\n", "stopped"), ("pct", "", None),
    ("docker", "running\n", "running"), ("docker", "exited\n", "stopped"), ("podman", "created\n", "stopped"),
    ("docker", "Error: No such object: x\n", None),
])
def test_status_words(kind, out, want):
    rt = PctRuntime(200) if kind == "pct" else EngineRuntime(kind, "x")
    assert rt.parse_status(out) == want


@pytest.mark.parametrize(("kind", "code", "text", "layer", "words"), [
    ("docker", 1, "Error response from daemon: No such container: trainer", Layer.HOST, ("container missing", "docker ps -a")),
    ("docker", 1, "Error response from daemon: container 0f3a… is not running", Layer.HOST, ("not running", "docker start")),
    ("podman", 125, 'Error: no container with name or ID "trainer" found: no such container', Layer.HOST, ("container missing", "podman ps -a")),
    ("podman", 125, "Error: can only create exec sessions on running containers: container state improper", Layer.HOST, ("not running", "podman start")),
    ("docker", 1, "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get …", Layer.HOST, ("refused", "docker group")),
    ("docker", 1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?", Layer.HOST, ("not answering", "systemctl start")),
    ("docker", 127, "bash: line 1: docker: command not found", Layer.HOST, ("docker not found", "runtime = \"none\"")),
    ("pct", 255, "Configuration file 'nodes/pve/lxc/200.conf' does not exist", Layer.HOST, ("container missing", "pct list")),
    ("docker", 137, "", Layer.CONTAINER, ("container shell exited", "rebuilds")),
])
def test_real_error_texts_map_to_the_host_with_a_fix(kind, code, text, layer, words):
    got_layer, msg, hint = classify_start_failure(code, text, runtime=kind)
    assert got_layer is layer
    assert words[0] in msg and words[1] in hint, (msg, hint)


def test_zombie_advice_for_an_engine_says_restart_and_init():
    advice = ("PID 1 (sleep infinity) is not an init and never reaps orphans: zombies pile up until the container "
              "reboots. Reboot it, and run the job under an init (systemd, tini, dumb-init).")
    got = engine_advice(advice, "docker")
    assert "until the container restarts" in got and "Restart it" in got and "docker run --init" in got
    assert "reboot" not in got.lower()


BASE = '[target]\nhost = "gpu"\n'


@pytest.mark.parametrize(("extra", "key", "words"), [
    ('runtime = "docker"\n', "target.container", "docker ps -a"),
    ('runtime = "pct"\ncontainer = "trainer"\n', "target.container", "not a Proxmox container id"),
    ('runtime = "podman"\ncontainer = "-rm"\n', "target.container", "container name or ID"),
    ('runtime = "none"\ncontainer = "trainer"\n', "target.runtime", "\"docker\""),
    ('runtime = "dokcer"\ncontainer = "trainer"\n', "target.runtime", "did you mean \"docker\""),
])
def test_config_errors_name_the_key_and_the_fix(extra, key, words):
    with pytest.raises(ConfigError) as e:
        parse_config(BASE + extra)
    assert e.value.key == key and words in str(e.value), str(e.value)


def test_a_numeric_docker_name_is_kept_as_a_name():
    cfg = parse_config(BASE + 'runtime = "docker"\ncontainer = 200\n')
    assert cfg.target.container == "200"
