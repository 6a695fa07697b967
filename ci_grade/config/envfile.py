"""`.env` files for `--env-file`: KEY=VALUE lines, optional `export`, quotes and comments."""

from __future__ import annotations

import re
from pathlib import Path

from ci_grade.errors import ConfigError

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$")


def parse_env_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"--env-file: file not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--env-file: not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"--env-file: cannot read: {exc.strerror}", file=str(path)) from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise ConfigError("expected KEY=VALUE", file=str(path), line=number)
        key, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = re.sub(r"\\([nt\"\\])", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), value)
        else:
            value = re.sub(r"\s+#.*$", "", value)
        values[key] = value
    return values
