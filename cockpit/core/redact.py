"""Secrets out of everything cockpit keeps or shows to others: one :class:`Redactor` per config.

What is replaced (by ``***``, keeping a short hint such as ``hf_***`` or ``HF_TOKEN=***``):

- the values of secret-named ``[job.env]`` keys (:func:`secret_env_name`): ``NAME=value`` in any
  quoting (``'NAME=value'``, ``--setenv='NAME=value'``) always; the bare value wherever it appears
  when it has 6 characters or more and is not a number (``KEY_DIM = "128"`` is not secret-named;
  a 4-character value would otherwise turn every ``step 1024`` into ``step ***``);
- well-known token shapes: Hugging Face ``hf_…``, AWS access key ids ``AKIA…``/``ASIA…``, GitHub
  ``ghp_…``/``github_pat_…``, OpenAI-style ``sk-…``, Slack ``xox?-…``, JWTs, ``Authorization:``
  headers and ``Bearer …``, passwords in URLs (``https://user:***@host``), PEM private key blocks;
- ``NAME=value``, ``NAME: value``, ``"NAME": "value"`` and ``--name value`` where NAME *ends* with
  TOKEN, SECRET, PASSWORD/PASSWD/PASSPHRASE, API_KEY/APIKEY, ACCESS_KEY, PRIVATE_KEY or SECRET_KEY
  (``-`` or ``_`` between the words; any case).  For TOKEN and KEY names the value must have 8
  characters or more and not be a number (``pad_token: <pad>``, ``token: 50256`` stay); a value
  that says the secret is unset (``None``, ``null``, ``$HF_TOKEN``, ``<your key>``, ``***``) or is
  code (``args.api_key``, ``os.environ[…]``) stays: that is evidence;
- every match of the user's ``[redact] patterns`` (a group named ``secret`` limits it to that group).

Not secrets, and kept (false positives destroy evidence): step counts, losses (``loss=1.83``),
shas and UUIDs, paths, ``KEY_DIM=128``, ``max_tokens=512``, ``num_tokens: 4096``,
``TOKENIZERS_PARALLELISM=false``, ``pad_token_id=0``, ``password_file=/run/secrets/db``, URLs
without a password, ``-----BEGIN CERTIFICATE-----``.

The built-in shapes can be turned off with ``[redact] builtin = false``; ``[job.env]`` values and
``[redact] patterns`` are always redacted.  Redacting twice gives the same text.  No UI imports.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from .layers import Evidence

__all__ = ["REDACTED", "Redactor", "LineRedactor", "RedactSource", "secret_env_name", "pattern_problem"]

REDACTED = "***"

_Repl = Callable[[re.Match[str]], str]

# -- which [job.env] names hold secrets ---------------------------------------------------------

_ENV_WORDS = {"TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS",
              "CREDS", "AUTH", "COOKIE"}
_ENV_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD")


def secret_env_name(name: str) -> bool:
    """True for an environment variable whose value is a secret: a word TOKEN, SECRET, PASSWORD,
    PASS, PASSPHRASE, CREDENTIALS, AUTH or COOKIE (``HF_TOKEN``, ``DB_PASS``), a word ending in
    TOKEN/SECRET/PASSWORD (``GITHUBTOKEN``), or KEY as the last word (``WANDB_API_KEY``,
    ``AWS_SECRET_ACCESS_KEY``, ``APIKEY``).  ``KEY_DIM``, ``PWD``, ``AUTHOR``, ``BYPASS`` are not."""
    words = [w for w in name.upper().split("_") if w]
    if not words:
        return False
    if any(w in _ENV_WORDS or w.endswith(_ENV_SUFFIXES) for w in words):
        return True
    return words[-1].endswith("KEY")


def _looks_numeric(v: str) -> bool:
    return re.fullmatch(r"[-+]?[0-9][0-9_.eE+-]*", v) is not None


# -- built-in shapes ------------------------------------------------------------------------------

#: a value that says a secret is absent, a placeholder or a reference: evidence, never redacted
_UNSET = re.compile(r"(?i)(?:none|null|nil|true|false|undefined|unset|empty|redacted|changeme|x+|\**|-+|\.\.\.|…)\Z")
_REFERENCE = re.compile(r"[$%<{]|\*\*\*")
#: code, not a value: ``args.api_key``, ``os.environ["X"]``, ``get_token()``
_CODE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z|[A-Za-z_][\w.]*[(\[]")

_STRONG = ("SECRET", "PASSWORD", "PASSWD", "PASSPHRASE")
_WORD = r"(?:token|secret|password|passwd|passphrase|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key)"
_VALUE = r"""(?:"(?P<dq>[^"\n]*)"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s"',;&|)}\]]+))"""
#: ``NAME=value``, ``NAME = value``, ``NAME: value``, ``"NAME": "value"``, ``--name=value``
_NAMED = re.compile(r"(?<![\w.\-])(?P<name>-{0,2}[A-Za-z0-9_.\-]*?" + _WORD + r""")["']?[ \t]*[:=][ \t]*""" + _VALUE, re.IGNORECASE)
#: ``--name value`` (a command-line flag and its argument)
_FLAG = re.compile(r"(?<![\w.\-])(?P<name>--?[A-Za-z0-9_.\-]*?" + _WORD + r")[ \t]+(?!-)" + _VALUE, re.IGNORECASE)


def _keep_value(name: str, value: str) -> bool:
    """True when ``value`` after a secret-looking ``name`` is evidence rather than a secret."""
    v = value.strip()
    if not v or _UNSET.match(v) or _REFERENCE.search(v[:2]) or REDACTED in v or _CODE.match(v):
        return True
    if any(w in name.upper() for w in _STRONG):
        return False
    return len(v) < 8 or _looks_numeric(v)


def _named(m: re.Match[str]) -> str:
    grp = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
    if _keep_value(m.group("name"), m.group(grp)):
        return m.group(0)
    start, end = m.span(grp)
    return m.string[m.start():start] + REDACTED + m.string[end:m.end()]


def _prefix(n: int) -> _Repl:
    """Keep the first ``n`` characters of the match (``hf_``), hide the rest."""
    return lambda m: m.group(0)[:n] + REDACTED


def _group_kept(group: int) -> _Repl:
    return lambda m: m.group(group) + REDACTED


def _pem(m: re.Match[str]) -> str:
    kind = m.group(1) or ""
    return f"-----BEGIN {kind}PRIVATE KEY-----{REDACTED}-----END {kind}PRIVATE KEY-----"


def _authorization(m: re.Match[str]) -> str:
    v = m.group("v")
    if _UNSET.match(v) or REDACTED in v or v.startswith("$"):
        return m.group(0)
    return m.group(0)[: m.start("v") - m.start()] + REDACTED


#: a rule runs only where its gate passes on the lower-cased text: one of the words is in it, and
#: (for the named and flag rules) a regex finds a name and its separator.  The words come first:
#: a substring test costs a fraction of a regex search, and most text holds none of them
_Gate = tuple[tuple[str, ...], re.Pattern[str] | None]
#: every spelling of _WORD holds one of these
_WORD_ROOTS = ("token", "secret", "pass", "key")

#: (id, gate, pattern, replacement): most log lines pass no gate at all
BUILTIN: list[tuple[str, _Gate, re.Pattern[str], _Repl]] = [
    ("pem-private-key", (("private key-----",), None),
     re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.DOTALL), _pem),
    ("url-password", (("://",), None), re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@]*):(?!\*\*\*@)[^\s/@]+@"),
     lambda m: f"{m.group(1)}:{REDACTED}@"),
    ("aws-access-key-id", (("akia", "asia"), None), re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), _prefix(4)),
    ("huggingface", (("hf_",), None), re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"), _prefix(3)),
    ("github", (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), None), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), _prefix(4)),
    ("github-pat", (("github_pat_",), None), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), _prefix(11)),
    ("openai", (("sk-",), None), re.compile(r"\bsk-(?:proj-|svcacct-|ant-(?:api\d\d-)?)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}"), _prefix(3)),
    ("slack", (("xox",), None), re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), _prefix(5)),
    ("jwt", (("eyj",), None), re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), _prefix(3)),
    ("authorization", (("authorization",), None),
     re.compile(r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:bearer|basic|token|bot|digest)[ \t]+)?(?P<v>[^\s\"',;]+)"),
     _authorization),
    ("bearer", (("bearer",), None), re.compile(r"(?i)\b(bearer[ \t]+)(?=[A-Za-z0-9\-._~+/]*\d)[A-Za-z0-9\-._~+/]{16,}=*"), _group_kept(1)),
    ("named-secret", (_WORD_ROOTS, re.compile(_WORD + r"""["']?[ \t]*[:=]""")), _NAMED, _named),
    ("flag-secret", (_WORD_ROOTS, re.compile(_WORD + r"[ \t]+[^\s-]")), _FLAG, _named),
]

#: any word of any rule's gate
_ANY_GATE = re.compile("|".join(re.escape(w) for w in sorted({w for _i, (ws, _rx), _r, _f in BUILTIN for w in ws}, key=len, reverse=True)))


def _passes(gate: _Gate, low: str) -> bool:
    words, rx = gate
    return any(w in low for w in words) and (rx is None or rx.search(low) is not None)


def pattern_problem(pattern: str) -> str | None:
    """Why a ``[redact] patterns`` entry cannot be used (None when it can)."""
    try:
        rx = re.compile(pattern)
    except re.error as e:
        return f"is not a valid regular expression ({e})"
    if rx.search("") is not None:
        return "matches the empty string: it would put *** between every two characters"
    return None


def _user_rule(rx: re.Pattern[str]) -> _Repl:
    if "secret" in rx.groupindex:
        def part(m: re.Match[str]) -> str:
            start, end = m.span("secret")
            if start < 0:
                return m.group(0)
            return m.string[m.start():start] + REDACTED + m.string[end:m.end()]
        return part
    return lambda m: REDACTED


@dataclass(frozen=True)
class _Env:
    name: str
    value: str


class _JobEnv(Protocol):
    @property
    def env(self) -> dict[str, str]: ...


class RedactSource(Protocol):
    """What :meth:`Redactor.from_config` reads of a config: ``[job.env]`` (and ``[redact]`` where it
    has one).  The config stands on this module (its ``[redact]`` patterns are checked here), so
    the redactor names only this."""

    @property
    def job(self) -> _JobEnv: ...


class Redactor:
    """Replace secrets in text (see the module doc).  ``redactor(text)`` is :meth:`text`."""

    def __init__(self, env: Mapping[str, str] | None = None, patterns: Iterable[str] = (), *, builtin: bool = True) -> None:
        self.builtin = builtin
        self.env = [_Env(k, str(v)) for k, v in (env or {}).items() if secret_env_name(k) and str(v)]
        self._pairs: list[tuple[str, str]] = []
        for e in self.env:
            pair = f"{e.name}={e.value}"
            hidden = f"{e.name}={REDACTED}"
            self._pairs += [(shlex.quote(pair), hidden), (pair, hidden)]
        self._values = sorted({v for e in self.env for v in (shlex.quote(e.value), e.value)
                               if len(e.value) >= 6 and not _looks_numeric(e.value)}, key=len, reverse=True)
        self.user: list[tuple[re.Pattern[str], _Repl]] = []
        for p in patterns:
            rx = re.compile(p)
            self.user.append((rx, _user_rule(rx)))

    @classmethod
    def from_config(cls, cfg: RedactSource) -> Redactor:
        red = getattr(cfg, "redact", None)
        return cls(cfg.job.env, red.patterns if red is not None else (), builtin=red.builtin if red is not None else True)

    def __repr__(self) -> str:
        return f"Redactor(env={[e.name for e in self.env]}, patterns={len(self.user)}, builtin={self.builtin})"

    def __call__(self, text: str) -> str:
        return self.text(text)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced (the same object back when there was none)."""
        if not text:
            return text
        for raw, hidden in self._pairs:
            if raw in text:
                text = text.replace(raw, hidden)
        for v in self._values:
            if v in text:
                text = text.replace(v, REDACTED)
        for rx, repl in self.user:
            text = rx.sub(repl, text)
        if self.builtin:
            low = text.lower()
            if _ANY_GATE.search(low) is None:  # no rule's word: one search, not one gate per rule
                return text
            for _id, gate, rx, repl in BUILTIN:
                if _passes(gate, low):
                    text = rx.sub(repl, text)
        return text

    def data(self, obj: Any) -> Any:
        """JSON-like data (dicts, lists, strings) with every string value redacted; keys are kept."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.data(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.data(v) for v in obj) if isinstance(obj, list) else tuple(self.data(v) for v in obj)
        return obj

    def file_bytes(self, data: bytes) -> bytes:
        """A text file's bytes redacted (UTF-8); anything that is not UTF-8 text comes back as is."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        out = self.text(text)
        return data if out == text else out.encode("utf-8")

    def evidence(self, ev: Evidence) -> Evidence:
        from .layers import Evidence as _Evidence

        return _Evidence(command=self.text(ev.command or ""), exit_code=ev.exit_code, output=self.text(ev.output or ""))


_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\S*\s*$")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")


class LineRedactor:
    """Log lines one at a time (``red(line)``), for a stream where a PEM private key spans many
    lines: after a ``BEGIN … PRIVATE KEY`` line, every line up to the ``END`` line is hidden."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.inside = False

    def __call__(self, line: str) -> str:
        if self.inside:
            end = _PEM_END.search(line)
            if end is None:
                return REDACTED
            self.inside = False
            return self.redactor.text(line[end.start():])
        out = self.redactor.text(line)
        if self.redactor.builtin and "PRIVATE KEY-----" in line and _PEM_BEGIN.search(line):
            self.inside = True
        return out

