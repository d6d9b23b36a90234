"""The shell text of the framed session: its bootstrap and one frame per command, in three modes.

:class:`~.session.FramedSession` writes these to its long-lived ``sh`` and reads the answers; this
module only builds them (and parses a header), so the cost of each piece of shell can be read here.

Modes
-----
``WATCHED`` (the default)
    ``timeout -k 1 T sh -c CMD`` with stdout and stderr in scratch files, then their lengths
    (``wc -c``, only for a file that is not empty) and their bytes (``head -c``, idem).
``CHEAP``
    a subshell of the session shell (one fork, no exec): stdout into a variable sent with
    ``${#var}`` as its length, stderr into a scratch file; cockpit keeps the deadline.
``INLINE``
    no fork at all: the command runs in the session shell itself, as the body of a function whose
    stdout and stderr go to scratch files that are read back with the ``read`` built-in.

Where a frame's time goes (dash 0.5.12 on the 2-core test VM, each piece timed alone in a loop of
2000; the lab's container has a tmpfs ``/tmp``)::

    a fork of the session shell, $( ... ) or ( ... )           300-500 us
    fork + exec of a small tool (wc -c, head -c, timeout)      1000-1500 us each
    a redirect that creates or truncates an empty file          ~15 us
    the same on a file with data, tmpfs                         ~18 us
    the same on a file with data, ext4 (auto_da_alloc flushes)  ~370 us
    [ -s FILE ], a printf of a header, an assignment            5-10 us
    printf '%.33554432s' of a short string (no allocation, strace) ~5 us, like plain '%s'
    IFS= read -r line, per byte (dash reads one byte per read(2)) ~0.6 us
    a bare `echo` written to the shell and read back over SSH  ~400-550 us (the floor; asyncssh
        sends an SSH_MSG_IGNORE before every data packet: two socket sends per write, ~0.2 ms)

So a ``CHEAP`` frame is the floor plus one fork (and the Python side: one deadline per frame, not
one per read); separate ``printf``s cost nothing measurable (the reader takes what has arrived).
The huge printf precision is not a cost.  A ``WATCHED`` frame paid two ``wc`` and two ``head``
even for empty output: now only for a stream that has bytes.  An ``INLINE`` frame pays no fork:
the floor plus ~50 us of shell (its three redirects ~20 us, reading back two empty files ~25 us),
plus ~0.6 us per byte of output; past ~500 bytes a fork would be cheaper,
which is why ``INLINE`` is for tiny answers (``kill -0``, one ``read`` of ``/proc/PID/stat``).
Its scratch files live on ``/dev/shm`` when it is writable: on a disk ``/tmp`` (ext4, as in most
LXC containers) truncating a file that has data forces a writeback, ~370 us per frame.  (A job's
``/dev/shm`` is shared with it: what an inline command prints stays there until the next frame.)

The ``INLINE`` contract (the caller's side): the command cannot block (shell built-ins, reads of
``/proc``), prints little text (a NUL byte is dropped; stdout and stderr are each cut at
:data:`INLINE_MAX` bytes, at the end of the line that crosses it, with a mark), and leaves the session shell as it found it:
no ``exec``, ``cd``, ``set``, ``trap``, ``umask``, ``alias``, no redirection of the shell's own
fds, and no variables named ``__ck*``; its own variables are best declared ``local`` (they would
persist otherwise).  ``exit N`` is turned into ``return N`` (an alias defined around the function
body, honoured by dash and by bash as ``sh``, i.e. in POSIX mode); where aliases are not expanded an
``exit`` ends the session, which is then reported and rebuilt like any other death.  Past its
deadline the session is abandoned and rebuilt like a ``cheap`` one's, but nothing kills the old
shell: over SSH it ends when it next writes to the closed channel, so an inline command that
never ends (a contract breach) keeps that shell running.
"""

from __future__ import annotations

import enum
import re
import shlex

from .lines import OUTPUT_MAX

__all__ = ["Mode", "BOOTSTRAP", "INLINE_MAX", "HEADER", "GO", "READY", "frame"]

#: the most bytes of an inline command's stdout (and of its stderr) that are read back (at a line end)
INLINE_MAX = 8 << 10

HEADER = re.compile(rb"^@@cockpit (\d+) (-?\d+) (\d+) (\d+)( cut)?$")
GO = re.compile(rb"^@@cockpit-go (\d+)$")
READY = b"@@cockpit-ready"


class Mode(enum.Enum):
    WATCHED = "watched"
    CHEAP = "cheap"
    INLINE = "inline"


BOOTSTRAP = (
    # private scratch dirs: __ck_d for captured output, __ck_i (a tmpfs when one is writable) for
    # inline frames; the session's stdout carries only frames
    "umask 077; "
    "__ck_d=$(mktemp -d /tmp/.cockpit-s.XXXXXX 2>/dev/null) || { __ck_d=/tmp/.cockpit-s.$$; mkdir -p \"$__ck_d\"; }; "
    "__ck_i=$(mktemp -d /dev/shm/.cockpit-i.XXXXXX 2>/dev/null) || __ck_i=$__ck_d; "
    "trap 'rm -rf \"$__ck_d\" \"$__ck_i\"' EXIT; "
    "if command -v timeout >/dev/null 2>&1; then __ck_t=timeout; else __ck_t=; fi; "
    f"if command -v head >/dev/null 2>&1; then __ck_c='head -c {OUTPUT_MAX}'; else __ck_c=cat; fi; "
    # cheap and inline frames send ${#var} as a length: only where the shell counts bytes (dash,
    # busybox, bash in the C locale); elsewhere they fall back to the files
    "__ck_b=0; __ck_x='\u00e9'; [ ${#__ck_x} -eq 2 ] && __ck_b=1; __ck_x=; "
    "printf '%s %s %s %s %s %s\\n' '@@cockpit-ready' \"$__ck_d\" \"${__ck_t:-none}\" \"${__ck_c%% *}\" \"$$\" \"$__ck_b\"\n"
)


def _lengths_and_send(ident: int) -> str:
    """The files' lengths (a ``wc`` only for a file with bytes), the header, the files' bytes."""
    return (
        "if [ -s \"$__ck_d/o\" ]; then __ck_ol=$(wc -c <\"$__ck_d/o\"); else __ck_ol=0; fi; "
        "if [ -s \"$__ck_d/e\" ]; then __ck_el=$(wc -c <\"$__ck_d/e\"); else __ck_el=0; fi; "
        f"printf '@@cockpit %s %s %s %s\\n' {ident} \"$__ck_r\" $__ck_ol $__ck_el; "
        "[ $__ck_ol -eq 0 ] || $__ck_c \"$__ck_d/o\"; [ $__ck_el -eq 0 ] || $__ck_c \"$__ck_d/e\"\n"
    )


def _read_back(path: str, var: str) -> str:
    """``var`` = the file's bytes through the ``read`` built-in (no fork), at most INLINE_MAX of them
    (then at a line end, and __ck_cut says so).  A last line without a newline is kept as it is."""
    return (
        f"{var}=; __ck_l=; while IFS= read -r __ck_l; do {var}=\"${var}$__ck_l\n\"; __ck_l=; "
        f"[ ${{#{var}}} -lt {INLINE_MAX} ] || {{ __ck_cut=' cut'; break; }}; done <\"{path}\"; {var}=\"${var}$__ck_l\"; "
    )


def frame(ident: int, command: str, mode: Mode, *, timeout: float, has_timeout: bool, bytes_len: bool) -> str:
    """The shell text that runs ``command`` once and answers with its frame (see the session's doc)."""
    go = f"printf '@@cockpit-go %s\\n' {ident}; "
    if mode is Mode.INLINE and bytes_len:
        # line 1 defines the alias, so it is in force while line 2 (the function) is parsed
        return (
            go + "alias exit=return\n"
            f"__ck_f() {{ {command}\n}}; unalias exit; __ck_f </dev/null >\"$__ck_i/o\" 2>\"$__ck_i/e\"; __ck_r=$?; __ck_cut=; "
            + _read_back("$__ck_i/o", "__ck_o")
            + "__ck_e=; [ -s \"$__ck_i/e\" ] && { " + _read_back("$__ck_i/e", "__ck_e") + "}; "
            f"printf '@@cockpit %s %s %s %s%s\\n%.{OUTPUT_MAX}s%.{OUTPUT_MAX}s' {ident} \"$__ck_r\" ${{#__ck_o}} ${{#__ck_e}} "
            "\"$__ck_cut\" \"$__ck_o\" \"$__ck_e\"; __ck_o= __ck_e=\n"
        )
    if mode is not Mode.WATCHED and bytes_len:
        # in a subshell of the session shell (one fork, no exec, nothing leaks), stdout kept in a
        # variable; the EXIT trap's "." keeps trailing newlines and runs after an `exit N` too
        return (
            go + f"__ck_o=$(trap 'printf .' EXIT; {{ {command}\n}} </dev/null 2>\"$__ck_d/e\"); __ck_r=$?; __ck_o=${{__ck_o%.}}; "
            "if [ -s \"$__ck_d/e\" ]; then __ck_el=$(wc -c <\"$__ck_d/e\"); else __ck_el=0; fi; "
            f"printf '@@cockpit %s %s %s %s\\n%.{OUTPUT_MAX}s' {ident} \"$__ck_r\" ${{#__ck_o}} $__ck_el \"$__ck_o\"; "
            "[ $__ck_el -eq 0 ] || $__ck_c \"$__ck_d/e\"; __ck_o=\n"
        )
    if mode is Mode.INLINE:  # where ${#var} counts characters: in a subshell, but `return` still works
        inner = f"( __ck_f() {{ {command}\n}}; __ck_f )"
    elif mode is Mode.CHEAP:
        inner = f"( {command}\n)"
    else:
        inner = f"sh -c {shlex.quote(command)}"
        if has_timeout:
            inner = f"timeout -k 1 {max(0.1, timeout):g} {inner}"
    return go + f"{inner} </dev/null >\"$__ck_d/o\" 2>\"$__ck_d/e\"; __ck_r=$?; " + _lengths_and_send(ident)


def stdout_cut_by_shell(mode: Mode, bytes_len: bool) -> bool:
    """Whether the frame's stdout is sent cut at OUTPUT_MAX by ``printf`` (not by ``head``)."""
    return mode is not Mode.WATCHED and bytes_len


def stderr_cut_by_shell(mode: Mode, bytes_len: bool) -> bool:
    """Whether the frame's stderr is sent cut at OUTPUT_MAX by ``printf`` (not by ``head``)."""
    return mode is Mode.INLINE and bytes_len
