"""Tests from Python generators, Hugging Face datasets, Google Sheets and .xlsx files, end to end;
remote URLs ci-grade does not read and red-team-only configs are refused before any call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write
from tests.servers.datasets_server import install_rows, install_sheet
from tests.servers.llm_server import LLMServer
from tests.test_config_loader import eval_config, outputs


def test_python_generator_with_and_without_config(tmp_path: Path) -> None:
    write(
        tmp_path / "test_cases.py",
        """
        def generate_tests(config=None):
            return [{"vars": {"lang": "fr"}, "assert": [{"type": "contains", "value": "fr"}]}]

        def generate_simple_tests(config=None):
            langs = (config or {}).get("languages", ["es"])
            assert config is None or isinstance(config, dict)
            return [{"description": f"to {l}", "vars": {"lang": l}, "assert": [{"type": "contains", "value": "say"}]} for l in langs]
        """,
    )
    result, rows = eval_config(
        tmp_path,
        """
        prompts: ['say {{lang}}']
        providers: [echo]
        tests:
          - file://test_cases.py
          - file://test_cases.py:generate_simple_tests
          - path: file://test_cases.py:generate_simple_tests
            config: {languages: [de, it]}
        """,
    )
    assert result.code == 0, result.err
    assert outputs(rows) == ["say fr", "say es", "say de", "say it"]
    assert [row["testCase"].get("description") for row in rows][1:] == ["to es", "to de", "to it"]


def test_a_generator_that_fails_is_refused_before_any_call(tmp_path: Path) -> None:
    write(tmp_path / "gen.py", "def generate_tests(config=None):\n    raise ValueError('no data')\n\ndef text():\n    return 'x'\n")
    result, _ = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\ntests: file://gen.py\n")
    assert result.code == 2
    assert "promptfooconfig.yaml:3 tests: test generator gen.py:generate_tests() failed: ValueError: no data (gen.py:2 in generate_tests)" in result.err
    result, _ = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\ntests: ['file://gen.py:text']\n")
    assert result.code == 2 and "must return a list of tests, got 'x'" in result.err
    result, _ = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\ntests: ['file://missing.py:fn']\n")
    assert result.code == 2 and "file not found: missing.py" in result.err


def test_remote_urls_ci_grade_does_not_read_are_refused_clearly(tmp_path: Path) -> None:
    result, _ = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\ntests: https://acme.sharepoint.com/sites/qa/tests.csv\n")
    assert result.code == 2
    assert "tests from 'https://acme.sharepoint.com/sites/qa/tests.csv': ci-grade reads tests from local files" in result.err
    assert "file not found" not in result.err


def test_a_red_team_only_config_says_how_to_evaluate_one(tmp_path: Path) -> None:
    result, _ = eval_config(tmp_path, "targets: [echo]\nredteam:\n  purpose: a bank\n  plugins: [harmful]\n")
    assert result.code == 2
    assert "promptfooconfig.yaml:2 redteam: this config holds a red-team block and no tests" in result.err
    assert "promptfoo redteam generate" in result.err and "ci-grade eval -c redteam.yaml" in result.err
    result, rows = eval_config(tmp_path, "targets: [echo]\nprompts: ['{{q}}']\nredteam: {plugins: [harmful]}\ntests: [{vars: {q: hi}}]\n")
    assert result.code == 0 and outputs(rows) == ["hi"]
    assert "warning: promptfooconfig.yaml:3: 'redteam' is ignored" in result.err


def test_huggingface_dataset_pages_with_split_config_limit_and_token(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"question": f"q{i}", "answer": str(i)} for i in range(250)]
    install_rows(llm_server, "acme/qa", rows, split="train", config="main", token="hf_secret_token_1")
    monkeypatch.setenv("CI_GRADE_HF_DATASETS_URL", llm_server.url)
    config = "prompts: ['{{question}}']\nproviders: [echo]\ntests: huggingface://datasets/acme/qa?split=train&config=main%s\n"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    result, _ = eval_config(tmp_path, config % "")
    assert result.code == 2 and "HTTP 401 (a gated or private dataset needs HF_TOKEN)" in result.err
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token_1")
    result, out = eval_config(tmp_path, config % "")
    assert result.code == 0, result.err
    assert outputs(out) == [f"q{i}" for i in range(250)]
    assert out[7]["vars"] == {"question": "q7", "answer": "7"}
    pages = [r.path for r in llm_server.requests_to("/rows")][-3:]
    assert [p.split("offset=")[1] for p in pages] == ["0&length=100", "100&length=100", "200&length=100"]
    result, out = eval_config(tmp_path, config % "&limit=120")
    assert result.code == 0 and len(out) == 120
    assert llm_server.requests_to("/rows")[-1].path.endswith("offset=100&length=20")
    assert "hf_secret_token_1" not in (tmp_path / "out.json").read_text()


def test_public_google_sheet_is_read_from_its_csv_export(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    install_sheet(llm_server, "1AbC", {"0": "topic,__expected\ncats,contains:cats\n", "77": "topic\ndogs\nbirds\n"})
    monkeypatch.setenv("CI_GRADE_GOOGLE_SHEETS_URL", llm_server.url)
    result, rows = eval_config(tmp_path, "prompts: ['about {{topic}}']\nproviders: [echo]\ntests: https://docs.google.com/spreadsheets/d/1AbC/edit#gid=77\n")
    assert result.code == 0, result.err
    assert outputs(rows) == ["about dogs", "about birds"]
    result, rows = eval_config(tmp_path, "prompts: ['about {{topic}}']\nproviders: [echo]\ntests: https://docs.google.com/spreadsheets/d/1AbC/edit\n")
    assert result.code == 0 and rows[0]["gradingResult"]["componentResults"][0]["assertion"]["type"] == "contains"
    result, _ = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\ntests: https://docs.google.com/spreadsheets/d/private/edit\n")
    assert result.code == 2 and "ci-grade reads public sheets only" in result.err


def test_xlsx_tests_with_a_named_sheet(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    first = book.active
    first.title = "Main"
    first.append(["topic", "count", "__expected"])
    first.append(["cats", 3, "contains:cats"])
    first.append([None, None, None])
    first.append(["dogs", 4.0, "contains:dogs"])
    other = book.create_sheet("Extra")
    other.append(["topic"])
    other.append(["fish"])
    book.save(tmp_path / "tests.xlsx")
    result, rows = eval_config(tmp_path, "prompts: ['{{topic}} x{{count}}']\nproviders: [echo]\ntests: file://tests.xlsx\n")
    assert result.code == 0, result.err
    assert outputs(rows) == ["cats x3", "dogs x4"]
    assert [row["success"] for row in rows] == [True, True]
    result, rows = eval_config(tmp_path, "prompts: ['{{topic}}']\nproviders: [echo]\ntests: ['file://tests.xlsx#Extra']\n")
    assert result.code == 0 and outputs(rows) == ["fish"]
    result, _ = eval_config(tmp_path, "prompts: ['{{topic}}']\nproviders: [echo]\ntests: file://tests.xlsx#Nope\n")
    assert result.code == 2 and "no sheet 'Nope' (sheets are Main, Extra)" in result.err
