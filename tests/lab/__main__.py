"""``python -m tests.lab up [--port N] [--dir DIR] [--container ID ...] [--no-reap ID ...]``

Starts the lab (sshd + containers), prints a cockpit.toml for it and the ssh command line, and
waits until Ctrl-C, then cleans everything up.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys

from .sshd import Lab, LabError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.lab", description="cockpit's SSH + Proxmox lab")
    sub = p.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start the lab and wait until Ctrl-C")
    up.add_argument("--port", type=int, default=0, help="sshd port (default: a free one)")
    up.add_argument("--dir", help="lab directory (default: a new one under /var/tmp)")
    up.add_argument("--keep", action="store_true", help="keep the lab directory afterwards")
    up.add_argument("--container", type=int, action="append", help="reaping containers to create (default: 200)")
    up.add_argument("--no-reap", type=int, action="append", default=[],
                    help="containers whose PID 1 never reaps orphans (the seed's zombie)")
    up.add_argument("--config", help="also write the cockpit config to this file")
    args = p.parse_args(argv)

    lab = Lab(args.dir, port=args.port or None, keep=args.keep)
    try:
        lab.start()
        for ctid in args.container or ([] if args.no_reap else [200]):
            lab.add_container(ctid)
        for ctid in args.no_reap:
            lab.add_container(ctid, reaping_init=False)
        first = (args.container or args.no_reap or [200])[0]
        # the config's deploy source holds one file, as the tests' lab_config writes it: an attempt
        # with nothing to deploy is a config failure (untested), not the loop this lab is for
        src = lab.dir / "src"
        src.mkdir(exist_ok=True)
        if not any(src.iterdir()):
            (src / "train.py").write_text("print('the code under test')\n")
        text = lab.config_toml(target={"container": first})
        if args.config:
            lab.write_config(args.config, target={"container": first})
        print(f"# cockpit lab at {lab.dir} (sshd on {lab.host}:{lab.port}, containers {lab.container_ids()})")
        print(f"# ssh: {shlex.join(lab.ssh_argv())}")
        print(f"# pct: {shlex.join(lab.ssh_argv(f'pct exec {first} -- /bin/sh -c ps'))}")
        if args.config:
            print(f"# written to {args.config}")
        print(text, flush=True)
        print("# Ctrl-C stops the lab", file=sys.stderr, flush=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            signal.pause()
    except LabError as e:
        print(f"lab: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        lab.close()


if __name__ == "__main__":
    sys.exit(main())
