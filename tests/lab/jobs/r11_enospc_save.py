"""A trainer whose checkpoint save fails with ENOSPC (tests/test_redteam_r11_enospc_save_lab.py).

``python3 r11_enospc_save.py GATE`` prints ``step N loss X`` every 50 ms until GATE exists (or for
20 steps when GATE is ``-``), then saves a checkpoint through frames shaped like ``torch.save``'s
(``save`` → ``_open_zipfile_writer`` → ``write_record``), where the write raises ``OSError: [Errno
28] No space left on device`` as the kernel's ENOSPC reads in Python (raised here: the disk itself
has room, as it often has again by the time anyone looks: the half-written checkpoint is removed).
"""

import errno
import os
import sys
import time

gate = sys.argv[1]


def write_record(name: str, data: bytes) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _open_zipfile_writer(path: str) -> None:
    write_record(f"{os.path.basename(path)}/data.pkl", b"\0" * 1024)


def save(obj: object, path: str) -> None:
    _open_zipfile_writer(path)


def main() -> None:
    step = 0
    while (step < 20) if gate == "-" else not os.path.exists(gate):
        step += 1
        print(f"step {step} loss {1.0 / step:.4f}", flush=True)
        time.sleep(0.05)
    print(f"saving checkpoint to ckpt/step-{step}.pt", flush=True)
    save({"step": step}, f"ckpt/step-{step}.pt")


if __name__ == "__main__":
    main()
