"""What `eval` and the action leave for the interpreter's exit: frozen, not collected again."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import REPO, run_cli_process, write


def test_the_final_collection_is_skipped_once_registered() -> None:
    script = textwrap.dedent(
        """
        import atexit, gc
        from ci_grade.commands.shared import skip_final_collection
        freezes = []
        freeze = gc.freeze
        gc.freeze = lambda: freezes.append(1) or freeze()
        atexit.register(lambda: print("at exit:", len(freezes), "freeze(s), frozen:", gc.get_freeze_count() > 0))  # runs last
        for _ in range(3):
            skip_final_collection()
        print("now: frozen:", gc.get_freeze_count() > 0)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == ["now: frozen: False", "at exit: 1 freeze(s), frozen: True"]


def test_an_eval_process_still_writes_everything_and_exits_with_its_code(tmp_path: Path) -> None:
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        providers: [echo]
        prompts: ["Say {{word}}"]
        tests:
          - vars: {word: hello}
            assert: [{type: contains, value: hello}]
          - vars: {word: bye}
            assert: [{type: contains, value: hello}]
        """,
    )
    done = run_cli_process("eval", "-o", "results.json", "-o", "report.md", "--no-cache", "--no-progress", cwd=tmp_path)
    assert done.code == 1, done.err
    results = json.loads((tmp_path / "results.json").read_text())
    assert [row["success"] for row in results["results"]["results"]] == [True, False]
    assert (tmp_path / "report.md").read_text().strip()
