"""`--env-file`: values read as dotenv reads them (python-dotenv's parser), through `ci-grade eval`;
a line dotenv cannot read exits 2 naming the file and the line where the statement starts.

Values of env files are secrets to the reports (masked in outputs), so the rows check them with an
`equals` assertion on the rendered prompt."""

from __future__ import annotations

import json
from pathlib import Path

from ci_grade.config.envfile import parse_env_file
from tests.conftest import run_cli, write
from tests.test_config_loader import eval_config

NAMES = ("QUOTED", "MULTI", "AFTER", "SINGLE", "BARE", "REF", "EXPORTED", "EMPTY")
ENV_FILE = (
    "# settings\n"
    'QUOTED="abc" # a note after a quoted value\n'
    'MULTI="first line\n'
    'second \\"line\\""\n'
    "AFTER=3\n"
    "SINGLE='no \\n escapes'\n"
    "BARE=a#b # a note\n"
    "REF=${QUOTED}x\n"
    "export EXPORTED = spaced  \n"
    "EMPTY=\n"
)
EXPECTED = {
    "QUOTED": "abc",
    "MULTI": 'first line\nsecond "line"',
    "AFTER": "3",
    "SINGLE": "no \\n escapes",
    "BARE": "a#b",
    "REF": "${QUOTED}x",
    "EXPORTED": "spaced",
    "EMPTY": "",
}


def _config(names: tuple[str, ...], expected: str) -> str:
    prompt = "|".join(f"{{{{ env.{name} }}}}" for name in names)
    return f"prompts: [{json.dumps(prompt)}]\nproviders: [echo]\ntests:\n  - assert: [{{type: equals, value: {json.dumps(expected)}}}]\n"


def test_values_read_as_dotenv_reads_them(tmp_path: Path) -> None:
    write(tmp_path / "local.env", ENV_FILE)
    assert parse_env_file(tmp_path / "local.env") == EXPECTED
    result, rows = eval_config(tmp_path, _config(NAMES, "|".join(EXPECTED[n] for n in NAMES)), "--env-file", "local.env")
    assert result.code == 0, result.err
    assert [row["success"] for row in rows] == [True]


def test_windows_line_ends_and_a_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "local.env").write_bytes(b'\xef\xbb\xbfMULTI="first\r\nsecond"\r\nAFTER=2\r\n')
    result, rows = eval_config(tmp_path, _config(("MULTI", "AFTER"), "first\nsecond|2"), "--env-file", "local.env")
    assert result.code == 0, result.err
    assert [row["success"] for row in rows] == [True]


def test_an_unterminated_quote_names_the_line_it_starts_on(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", _config(NAMES, ""))
    write(tmp_path / "ci.env", 'GOOD=1\n\nBROKEN="never closed\nLATER=2\n')
    result = run_cli("eval", "--no-progress", "-o", "out.json", "--env-file", "ci.env", cwd=tmp_path)
    assert result.code == 2
    assert result.err.splitlines() == ["ci-grade: error: ci.env:3: expected KEY=VALUE"]
    assert not (tmp_path / "out.json").exists()


def test_a_key_without_a_value_or_text_after_a_quote_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", _config(NAMES, ""))
    for text, line in (("A=1\nTYPO\n", 2), ("A=1\n  \nB='x' y\n", 3), ("A B=1\n", 1)):
        write(tmp_path / "ci.env", text)
        result = run_cli("eval", "--no-progress", "--env-file", "ci.env", cwd=tmp_path)
        assert result.code == 2, text
        assert result.err.splitlines() == [f"ci-grade: error: ci.env:{line}: expected KEY=VALUE"], text
