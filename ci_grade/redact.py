"""Keep secrets out of everything ci-grade writes: logs, results files, reports, caches, PR comments.

Two layers: values of secret-looking keys (`apiKey`, `Authorization`, `token`, ...) are replaced
wherever they appear in structured data, and the values of secret-looking environment variables
(and any key found in the config) are replaced wherever they appear in text, so a model that
echoes a key, or an error message that quotes one, is still masked.

Redaction happens at the sinks: every writer (result files, reports, the baseline store, the
response cache, the terminal, the GitHub client) masks what it is about to write with
`current()`, the redactor of the command being run (`use` installs it), before any truncation,
so a secret is never cut in half. Stages before the sinks never see a redactor.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

MASK = "***"
_SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|passw(or)?d|authorization|credential|private[_-]?key|cookie|signature)", re.I)
_MIN_SECRET_LENGTH = 6


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


class Redactor:
    """Masks known secret values in text and secret-named fields in data."""

    def __init__(self, secrets: Iterable[str] = ()):
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self.add(secrets)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> Redactor:
        env = os.environ if env is None else env
        return cls([v for k, v in env.items() if is_secret_name(k) and v] + list(extra))

    def learn_env(self, env: Mapping[str, str]) -> None:
        """Learn the values of secret-looking variables in `env`."""
        self.add(v for k, v in env.items() if is_secret_name(k) and v)

    def add(self, secrets: Iterable[str]) -> None:
        """Learn secret values (and their JSON-escaped spelling, as they appear in JSON files)."""
        values = [s for s in secrets if isinstance(s, str) and len(s.strip()) >= _MIN_SECRET_LENGTH]
        new = set(values) | {json.dumps(s, ensure_ascii=False)[1:-1] for s in values}
        if new - self._secrets:
            self._secrets |= new
            ordered = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(s) for s in ordered))

    def collect(self, data: Any) -> None:
        """Learn literal secrets from secret-named fields in `data` (e.g. config.apiKey)."""
        found: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for key, value in node.items():
                    if isinstance(value, str) and is_secret_name(str(key)):
                        found.append(value)
                    else:
                        walk(value)
            elif isinstance(node, list):
                for item in node:
                    walk(item)

        walk(data)
        self.add(found)

    def text(self, value: str) -> str:
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(MASK, value)

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
