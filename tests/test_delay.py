"""promptfoo's delay: after each call a provider answers, the provider's own `delay` first.

The waits are checked from below only (a sleep never ends early), never timed from above.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from tests.conftest import run_cli, write

STAMPING = """
import json, time

def call_api(prompt, options, context):
    with open("stamps.jsonl", "a") as out:
        out.write(json.dumps(time.monotonic()) + "\\n")
    return {"output": prompt}
"""


def gaps(folder: Path) -> list[float]:
    stamps = sorted(json.loads(line) for line in (folder / "stamps.jsonl").read_text().splitlines())
    return [later - earlier for earlier, later in itertools.pairwise(stamps)]


def config(provider_delay: str = "") -> str:
    return f"""
prompts: ["say {{{{n}}}}"]
providers:
  - id: file://stamping.py{provider_delay}
tests: [{{vars: {{n: 1}}}}, {{vars: {{n: 2}}}}, {{vars: {{n: 3}}}}]
"""


def test_the_global_delay_spaces_the_calls(tmp_path: Path) -> None:
    write(tmp_path / "stamping.py", STAMPING)
    write(tmp_path / "promptfooconfig.yaml", config())
    result = run_cli("eval", "--no-progress", "--no-cache", "--delay", "150", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    assert len(gaps(tmp_path)) == 2 and min(gaps(tmp_path)) >= 0.15  # one test at a time, each call followed by the wait


def test_a_providers_own_delay_follows_each_of_its_calls(tmp_path: Path) -> None:
    write(tmp_path / "stamping.py", STAMPING)
    write(tmp_path / "promptfooconfig.yaml", config("\n    delay: 150"))
    result = run_cli("eval", "--no-progress", "--no-cache", "-j", "1", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    assert len(gaps(tmp_path)) == 2 and min(gaps(tmp_path)) >= 0.15


def test_a_delay_longer_than_a_rows_time_limit_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "stamping.py", STAMPING)
    write(tmp_path / "promptfooconfig.yaml", config("\n    delay: 2000") + "evaluateOptions: {timeoutMs: 1000}\n")
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 2 and not (tmp_path / "stamps.jsonl").exists()
    assert "promptfooconfig.yaml:4 providers[0].delay: a delay of 2,000 ms is longer than a row's time limit of 1,000 ms" in result.err
    write(tmp_path / "promptfooconfig.yaml", config())
    flag = run_cli("eval", "--no-progress", "--delay", "900001", "-o", "out.json", cwd=tmp_path)
    assert flag.code == 2 and "--delay: a delay of 900,001 ms is longer than a row's time limit of 900,000 ms" in flag.err
