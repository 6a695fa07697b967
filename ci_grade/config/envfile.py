"""`.env` files for `--env-file`, read by python-dotenv's parser.

Values read as dotenv reads them: `export`, quotes (a double-quoted value may span lines and has
escapes), `# comments` after a value. `${VAR}` stays as written, as promptfoo's dotenv leaves it.
A line dotenv cannot read, or a key without `=`, is an error naming the file and line: dotenv
would skip it and leave the key silently unset.
"""

from __future__ import annotations

import io
from pathlib import Path

from dotenv.parser import parse_stream

from ci_grade.config import files
from ci_grade.errors import ConfigError


def parse_env_file(path: Path) -> dict[str, str]:
    text = files.read_text(path, what="--env-file")  # a regular file, within the size limit
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as a text-mode read
    values: dict[str, str] = {}
    for binding in parse_stream(io.StringIO(text)):
        if binding.error or (binding.key is not None and binding.value is None):
            statement = binding.original.string
            blank_lines = statement[: len(statement) - len(statement.lstrip())].count("\n")  # dotenv counts them in
            raise ConfigError("expected KEY=VALUE", file=str(path), line=binding.original.line + blank_lines)
        if binding.key is not None and binding.value is not None:
            values[binding.key] = binding.value
    return values
