"""Keep secrets out of everything ci-grade writes: logs, results files, reports, caches, PR comments.

Two layers: values of secret-looking keys (`apiKey`, `Authorization`, `token`, ...) are replaced
wherever they appear in structured data, and known secret values are replaced wherever they
appear in text, so a model that echoes a key, or an error message that quotes one, is still
masked. Known secret values are learned from:

- the process environment: variables whose names look secret (`*TOKEN*`, `*API_KEY*`, `*SECRET*`,
  `*PASSWORD*`, and a `KEY`, `PASS`, `AUTH`, `PAT` or `DSN` word: `HF_KEY`, `DB_PASS`), but the
  runner's `INPUT_*` variables, whose names are the action's input names;
- the config's `env:` block, a provider's own `env:` block and `--env-file` files: every value,
  whatever its name, unless it is common (below) and its name does not look secret;
- provider and grader `config` (headers included): values under auth-like keys (`apiKey`,
  `Authorization`, `X-Custom-Auth`, `*key*`, `*token*`, `*secret*`, `*pass*`, `*auth*`, cookies;
  not a file's path or a keystore alias, `privateKeyPath`, `keyAlias`),
  the word after `Bearer`/`Basic`/`token`, and the variables such values read (`{{ env.X }}`,
  `apiKeyEnvar: X`);
- URLs anywhere in the config: the password of `user:password@host` and credential-named query
  parameters (`?api_key=...`, `&token=...`);
- secret action inputs (`github-token`);
- Google credential files (GOOGLE_APPLICATION_CREDENTIALS, a provider's `credentials` or
  `keyFilename`): the service account's private key, and the refresh token or client secret of
  user credentials.

Each secret is masked in every spelling it takes inside JSON, down to JSON written inside JSON
inside JSON (a grader's JSON reply quoting it, kept in the results JSON): quote, backslash,
newline, slash and `u` escapes (either case of hex, `<>&'` escaped or not), and CSV's doubled quotes.

Values shaped like well-known credentials are masked whatever holds them (`CREDENTIAL_SHAPES`,
the formats GitHub's secret scanning knows for the APIs ci-grade calls and for GitHub itself):
GitHub tokens, OpenAI, Anthropic, Google, Hugging Face, Replicate, Groq and xAI keys, AWS access
key ids and session tokens (and 40-character secret keys written near a key id), JWTs, Slack
tokens and private key blocks (a service account's `private_key` included).

A value shorter than 6 characters is never treated as a secret (it would mask ordinary words
everywhere). A common value (a number; true/false/yes/no/on/off/null/none; plain lowercase words
such as `platform` or `from config`) is not treated as a secret unless its name looks secret.

Redaction happens at the sinks: every writer (result files, reports, the baseline store, the
response cache, the terminal, the GitHub client) masks what it is about to write with
`current()`, the redactor of the command being run (`use` installs it), before any truncation,
so a secret is never cut in half. Stages before the sinks never see a redactor; they only teach
it new secrets. Listeners (`listen`) hear of every secret learned, e.g. to `::add-mask::` it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

MASK = "***"
_SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|passw(or)?d|authorization|credential|private[_-]?key|cookie|signature)", re.I)
_SECRET_ENV_WORD = re.compile(r"(?:^|_)(?:KEY|PASS|PASSPHRASE|AUTH|PAT|DSN)(?:_|$)", re.I)
_AUTH_KEY = re.compile(r"(key|pass|auth|cookie|token|secret|credential|signature)", re.I)
_NAMES_A_VARIABLE = re.compile(r"env[_-]?var$|envar$", re.I)
_NAMES_A_PLACE = re.compile(r"(?:path|alias)$", re.I)
"""Keys whose values say where a credential is, not what it is (`privateKeyPath`, `keyAlias`)."""
_ENV_REFERENCE = re.compile(r"""env\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*['"]([^'"]+)['"]\s*\])""")
_SCHEME = re.compile(r"^(?:bearer|basic|token|bot|apikey)\s+(\S+)$", re.I)
_COMMON = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|(?i:true|false|yes|no|on|off|null|none)|[a-z]+(?: [a-z]+)*")
_MIN_SECRET_LENGTH = 6
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_NESTING = 3
"""JSON inside JSON inside JSON: how deep a secret's escaped spellings are learned."""


def _token(prefix: str, rest: str, body: str, least: int, most: int | None = None, mixed: bool = False) -> str:
    """A credential: the literal `prefix` (not inside a longer word) and `rest`, then `least` (to
    `most`) characters of `body`; `mixed`: the body holds a digit, an upper and a lower case letter
    (random, not prose). The pattern starts with its literal, which the regex engine seeks fast."""
    checks = "".join(f"(?={body}*?{c})" for c in ("[0-9]", "[A-Z]", "[a-z]")) if mixed else ""
    literal = re.escape(prefix)
    return rf"{literal}(?<![A-Za-z0-9_]{literal}){rest}{checks}{body}{{{least},{'' if most is None else most}}}(?!{body})"


CREDENTIAL_SHAPES: dict[str, tuple[tuple[str, ...], str]] = {
    # name: (what a text must hold to be searched at all, the pattern)
    "GitHub token": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _token("gh", "[pousr]_", "[A-Za-z0-9]", 36, 255)),
    "GitHub fine-grained token": (("github_pat_",), _token("github_pat_", "", "[A-Za-z0-9_]", 50, 255)),
    "OpenAI or Anthropic key": (("sk-",), _token("sk-", "", "[A-Za-z0-9_-]", 20, mixed=True)),
    **{f"AWS access key id ({p})": ((p,), _token(p, "", "[A-Z0-9]", 16, 16)) for p in ("AKIA", "ASIA", "ABIA", "ACCA")},
    **{f"AWS session token ({p})": ((p,), _token(p, "", "[A-Za-z0-9/+=]", 60)) for p in ("FwoGZXIvYXdz", "IQoJb3JpZ2lu")},
    "Google API key": (("AIza",), _token("AIza", "", "[A-Za-z0-9_-]", 35, 35)),
    "Hugging Face token": (("hf_",), _token("hf_", "", "[A-Za-z0-9]", 30, mixed=True)),
    "Replicate token": (("r8_",), _token("r8_", "", "[A-Za-z0-9]", 30, mixed=True)),
    "Groq key": (("gsk_",), _token("gsk_", "", "[A-Za-z0-9]", 40, mixed=True)),
    "xAI key": (("xai-",), _token("xai-", "", "[A-Za-z0-9]", 40, mixed=True)),
    "Slack token": (("xox",), _token("xox", "[baprs]-", "[A-Za-z0-9-]", 10, mixed=True)),
    "JWT": (("eyJ",), r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    "private key": (("PRIVATE KEY",), r"-----BEGIN[A-Z ]* PRIVATE KEY-----(?:.*?-----END[A-Z ]* PRIVATE KEY-----|(?:[A-Za-z0-9+/=\s]|\\+[nr])*)"),
}
_SHAPES = [(hints, re.compile(pattern, re.S)) for hints, pattern in CREDENTIAL_SHAPES.values()]
_AWS_KEY_ID = re.compile("|".join(pattern for name, (_, pattern) in CREDENTIAL_SHAPES.items() if name.startswith("AWS access key id")))
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]*?[A-Z])(?=[A-Za-z0-9/+]*?[a-z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_PAIRED_WITHIN = 1000
"""Characters either side of an AWS access key id where a 40-character secret key is masked."""
_JSON_SPECIAL = re.compile(r"[<>&']")
_HEX_ESCAPE = re.compile(r"\\u([0-9a-f]{4})")


@functools.lru_cache(maxsize=4096)  # the same few keys come up again and again
def is_secret_name(name: str) -> bool:
    """Whether a field or variable name says its value is secret (`apiKey`, `GITHUB_TOKEN`)."""
    return bool(_SECRET_NAME.search(name))


def is_secret_env_name(name: str) -> bool:
    """Whether an environment variable's name looks secret (`OPENAI_API_KEY`, and `HF_KEY`, `DB_PASS`)."""
    return is_secret_name(name) or bool(_SECRET_ENV_WORD.search(name))


@functools.lru_cache(maxsize=4096)
def is_auth_key(name: str) -> bool:
    """Whether a key in provider config (or its headers) holds a credential (`apiKey`, `X-Custom-Auth`)."""
    return bool(_AUTH_KEY.search(name)) and not _names_a_variable(name)


@functools.lru_cache(maxsize=4096)
def _names_a_variable(name: str) -> bool:
    """Whether a key's value is the name of an environment variable (`apiKeyEnvar`)."""
    return bool(_NAMES_A_VARIABLE.search(name))


def url_credentials(text: str) -> list[str]:
    """Credentials written into a URL: the password of `user:password@host`, and the values of
    query parameters with credential names (`?api_key=...`, `&token=...`, `&sig=...`)."""
    found: list[str] = []
    for url in _URL.findall(text):
        try:
            parts = urllib.parse.urlsplit(url)
            password = parts.password
        except ValueError:
            continue
        found.extend([password] if password else [])
        found.extend(value for name, value in urllib.parse.parse_qsl(parts.query) if is_auth_key(name) or name.lower() in ("sig", "code"))
    return found


def _env_block_secrets(values: Mapping[str, Any]) -> list[str]:
    """The values of an `env:` block or env file that count as secrets: all but common ones,
    which count only under a secret-looking name."""
    return [v for k, v in values.items() if isinstance(v, str) and (is_secret_env_name(k) or not is_common_value(v))]


_GOOGLE_CREDENTIAL_FIELDS = ("private_key", "refresh_token", "client_secret")


def google_credentials_secrets(source: str | None) -> list[str]:
    """The secrets in Google credentials given as JSON text or as a file's path (`file://` or
    not): a service account's private key, a user's refresh token and client secret."""
    if not source:
        return []
    text = source.strip()
    if not text.startswith("{"):
        try:
            with open(text.removeprefix("file://"), encoding="utf-8") as handle:
                text = handle.read(1_000_000)
        except (OSError, ValueError):
            return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    return [str(data[name]) for name in _GOOGLE_CREDENTIAL_FIELDS if isinstance(data.get(name), str)]


def spellings(secret: str) -> set[str]:
    """How `secret` can be written: as is, with CSV's doubled quotes, and JSON-escaped by any
    common encoder (raw UTF-8 or `\\uXXXX`, `/` as `\\/`, `<>&'` as `\\u003c`, hex in either
    case), again inside JSON, `_NESTING` levels deep."""
    found = {secret}
    level = {secret}
    for depth in range(_NESTING):
        level = {escaped for text in level for escaped in _json_escapes(text, every_encoder=depth == 0)}
        found |= level
    return found | {text.replace('"', '""') for text in found}


def _told(secret: str) -> set[str]:
    """The spellings of `secret` that listeners hear (`::add-mask::` lines): as is, JSON-escaped, CSV-quoted."""
    return {secret, json.dumps(secret, ensure_ascii=False)[1:-1], secret.replace('"', '""')}


def _json_escapes(text: str, every_encoder: bool) -> set[str]:
    """`text` as a JSON string's content; `every_encoder`: as each common encoder writes it."""
    plain, ascii_only = json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1]
    if not every_encoder:
        return {plain, ascii_only}
    variants = {plain, ascii_only}
    variants |= {_JSON_SPECIAL.sub(lambda m: f"\\u{ord(m[0]):04x}", v) for v in variants}
    variants |= {v.replace("/", "\\/") for v in variants}
    return variants | {_HEX_ESCAPE.sub(lambda m: "\\u" + m[1].upper(), v) for v in variants}


def mask_credentials(text: str) -> str:
    """`text` with values shaped like well-known credentials masked (`CREDENTIAL_SHAPES`), and
    an AWS secret key (40 characters) where an AWS access key id is near."""
    if "AKIA" in text or "ASIA" in text or "ABIA" in text or "ACCA" in text:
        spans = [(max(0, m.start() - _AWS_PAIRED_WITHIN), m.end() + _AWS_PAIRED_WITHIN) for m in _AWS_KEY_ID.finditer(text)]
        if spans:
            text = _AWS_SECRET.sub(lambda m: MASK if any(a <= m.start() < b for a, b in spans) else m[0], text)
    for hints, pattern in _SHAPES:
        if any(hint in text for hint in hints):
            text = pattern.sub(MASK, text)
    return text


def is_common_value(value: str) -> bool:
    """A number, a yes/no word or plain lowercase words: not a secret unless its name says so."""
    return bool(_COMMON.fullmatch(value.strip()))


class Redactor:
    """Masks known secret values in text and secret-named fields in data."""

    def __init__(self, secrets: Iterable[str] = ()):
        self._secrets: set[str] = set()
        self._told: set[str] = set()
        """The spellings listeners hear: as is, JSON-escaped once, CSV-quoted (not every encoder's)."""
        self._pattern: re.Pattern[str] | None = None
        self._listeners: list[Callable[[str], None]] = []
        self.add(secrets)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> Redactor:
        redactor = cls(extra)
        redactor.learn_env(os.environ if env is None else env)
        return redactor

    def listen(self, listener: Callable[[str], None]) -> None:
        """Call `listener` with each secret's main spellings (as is, JSON-escaped, CSV-quoted),
        known now and learned from now on."""
        for secret in sorted(self._told):
            listener(secret)
        self._listeners.append(listener)

    def learn_env(self, env: Mapping[str, str]) -> None:
        """Learn the values of secret-looking variables in `env`. The runner's `INPUT_*` variables
        are the action's inputs, named after the input (`INPUT_CLUSTER_KEY`), not after what they
        hold: secret inputs are learned by name (`github.inputs.SECRET_INPUTS`)."""
        self.add(v for k, v in env.items() if v and not k.upper().startswith("INPUT_") and is_secret_env_name(k))
        self.add(secret for v in env.values() if "://" in v for secret in url_credentials(v))  # HTTPS_PROXY=http://user:pass@...
        self.add(google_credentials_secrets(env.get("GOOGLE_APPLICATION_CREDENTIALS")))

    def learn_values(self, values: Mapping[str, str]) -> None:
        """Learn every value of an `env:` block or env file, whatever its name, but common ones."""
        self.add(_env_block_secrets(values))

    def add(self, secrets: Iterable[str]) -> None:
        """Learn secret values, in every spelling they are written in: as is, JSON-escaped (JSON
        files) and with doubled quotes (CSV cells)."""
        values = [s.strip() for s in secrets if isinstance(s, str) and len(s.strip()) >= _MIN_SECRET_LENGTH]
        new = {spelling for s in values for spelling in spellings(s)} - self._secrets
        if not new:
            return
        self._secrets |= new
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in ordered))
        told = {spelling for s in values for spelling in _told(s)} - self._told
        self._told |= told
        for listener in self._listeners:
            for secret in sorted(told):
                listener(secret)

    def collect(self, data: Any, env: Mapping[str, str] | None = None) -> None:
        """Learn secrets written in a config: values of secret-named fields anywhere (`apiKey`), of
        auth-like keys under any `config` or `headers`, every value of a provider's own `env:`
        block but common ones, credentials written into URLs, and the `env` variables those
        values read."""
        found: list[str] = []

        def credential(value: str, env: Mapping[str, str]) -> None:
            references = [a or b for a, b in _ENV_REFERENCE.findall(value)] if "{{" in value or "{%" in value else []
            found.extend(env.get(name, "") for name in references)
            if not references:
                found.append(value)
                scheme = _SCHEME.match(value.strip())
                found.extend([scheme.group(1)] if scheme else [])

        def walk(node: Any, in_config: bool, env: Mapping[str, str]) -> None:
            if isinstance(node, str) and "://" in node:
                found.extend(url_credentials(node))
            elif isinstance(node, dict):
                own = node.get("env")
                if isinstance(own, dict) and node is not data:  # a provider's own `env:` (the config's is learned apart)
                    values = {str(k): str(v) for k, v in own.items() if isinstance(v, str | int | float) and not isinstance(v, bool)}
                    found.extend(_env_block_secrets(values))
                    env = {**env, **values}
                for key, value in node.items():
                    name = str(key)
                    if isinstance(value, str) and name in ("credentials", "keyFilename"):
                        found.extend(google_credentials_secrets(value))
                    if isinstance(value, str) and _names_a_variable(name):
                        found.append(env.get(value, "") if _AUTH_KEY.search(name) else "")  # apiKeyEnvar: NAME
                    elif isinstance(value, str) and not _NAMES_A_PLACE.search(name) and (is_secret_name(name) or (in_config and is_auth_key(name))):
                        credential(value, env)
                    else:
                        walk(value, in_config or name in ("config", "headers"), env)
            elif isinstance(node, list):
                for item in node:
                    walk(item, in_config, env)

        walk(data, False, env or {})
        self.add(found)

    def text(self, value: str) -> str:
        """`value` with known secrets, in any spelling, and credential-shaped values masked."""
        if not value:
            return value
        if self._pattern is not None:
            value = self._pattern.sub(MASK, value)
        return mask_credentials(value)

    def data(self, value: Any) -> Any:
        """A copy of `value` with secret-named fields masked and secret values replaced in strings."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: (MASK if isinstance(v, str) and v and is_secret_name(str(k)) else self.data(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value


_current: ContextVar[Redactor | None] = ContextVar("ci_grade_redactor", default=None)


def current() -> Redactor:
    """The redactor of the running command; outside one, a redactor for the process environment."""
    return _current.get() or Redactor.from_env()


@contextlib.contextmanager
def use(redactor: Redactor) -> Iterator[Redactor]:
    """Make `redactor` the one every sink uses, for the duration of the block."""
    token = _current.set(redactor)
    try:
        yield redactor
    finally:
        _current.reset(token)


def text(value: str) -> str:
    """`value` with the current redactor's secrets masked."""
    return current().text(value)


def data(value: Any) -> Any:
    """A copy of `value` with secret-named fields and known secret values masked."""
    return current().data(value)
