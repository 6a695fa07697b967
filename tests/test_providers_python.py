"""Python file providers (`file://x.py[:fn]`, `python:x.py`), and promptfoo's provider-python example."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ci_grade.config.yaml12 import loads as yaml_loads
from ci_grade.errors import UnknownProviderError
from ci_grade.providers.base import CallContext
from tests.conftest import COMPAT, run_cli, write
from tests.provider_helpers import call, eval_rows, make
from tests.servers.llm_server import LLMServer

PROVIDER = '''
import asyncio


def call_api(prompt, options, context):
    return {
        "output": f"py: {prompt}",
        "tokenUsage": {"total": 9, "prompt": 4, "completion": 5},
        "cost": 0.002,
        "metadata": {"options": options, "context": context},
    }


def shout(prompt, options, context):
    return {"output": prompt.upper(), "token_usage": {"prompt_tokens": 1, "completion_tokens": 2, "num_requests": 1},
            "finish_reason": "stop", "cached": True}


async def later(prompt, options, context):
    await asyncio.sleep(0)
    return {"output": {"echo": prompt, "vars": context["vars"]}}


def boom(prompt, options, context):
    return helper(prompt)


def helper(prompt):
    raise ValueError(f"cannot handle {prompt!r}")


def plain(prompt, options, context):
    return "just a string"


def nothing(prompt, options, context):
    return {"result": 1}


def refuse(prompt, options, context):
    return {"error": "upstream refused", "metadata": {"code": 451}}


def opaque(prompt, options, context):
    return {"output": object()}
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write(tmp_path / "providers" / "provider.py", PROVIDER)
    return tmp_path


def test_default_function_gets_options_and_context(folder: Path) -> None:
    spec = {"id": "file://providers/provider.py", "label": "mine", "config": {"someOption": "foobar"}}
    context = CallContext(vars={"topic": "owls"}, prompt_label="p", prompt_raw="About {{topic}}")
    response = call(spec, "About owls", context, base_dir=folder)
    assert response.error is None
    assert response.output == "py: About owls"
    assert (response.token_usage.total, response.token_usage.prompt, response.token_usage.completion) == (9, 4, 5)
    assert response.cost == 0.002
    assert response.metadata["options"] == {"id": "file://providers/provider.py", "label": "mine", "config": {"someOption": "foobar"}}
    assert response.metadata["context"] == {"vars": {"topic": "owls"}, "prompt": {"raw": "About {{topic}}", "label": "p"}}


def test_named_sync_and_async_functions_and_the_python_prefix(folder: Path) -> None:
    shouted = call("python:providers/provider.py:shout", "hey", base_dir=folder)
    assert shouted.output == "HEY"
    assert (shouted.token_usage.prompt, shouted.token_usage.completion, shouted.token_usage.total) == (1, 2, 3)
    assert shouted.finish_reason == "stop" and shouted.cached is True
    awaited = call("file://providers/provider.py:later", "hi", CallContext(vars={"a": 1}), base_dir=folder)
    assert awaited.output == {"echo": "hi", "vars": {"a": 1}}
    assert awaited.token_usage.num_requests == 1


def test_absolute_path(folder: Path) -> None:
    assert call(f"file://{folder / 'providers' / 'provider.py'}:shout", "abs").output == "ABS"


def test_exceptions_name_the_file_and_line(folder: Path) -> None:
    response = call("file://providers/provider.py:boom", "x", base_dir=folder)
    line = (folder / "providers" / "provider.py").read_text().splitlines().index('    raise ValueError(f"cannot handle {prompt!r}")') + 1
    assert response.error == f"ValueError: cannot handle 'x' (provider.py:{line} in helper)"


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("plain", "plain() in providers/provider.py must return a dict with 'output' or 'error', got str"),
        ("nothing", "nothing() in providers/provider.py returned a dict with neither 'output' nor 'error' (keys: result)"),
        ("refuse", "upstream refused"),
        ("opaque", "opaque() in provider.py returned a value that is not JSON data: Object of type object is not JSON serializable"),
        ("missing", "provider.py has no function 'missing'"),
    ],
)
def test_bad_returns_and_missing_functions_are_errors(folder: Path, function: str, error: str) -> None:
    response = call(f"file://providers/provider.py:{function}", "x", base_dir=folder)
    assert response.error == error
    assert response.output is None


def test_missing_file_and_import_failure(folder: Path) -> None:
    missing = call("file://providers/nope.py", "x", base_dir=folder)
    assert missing.error == f"provider file not found: {(folder / 'providers' / 'nope.py').resolve()}"
    write(folder / "broken.py", "import json\nraise RuntimeError('no credentials configured')\n")
    broken = call("file://broken.py", "x", base_dir=folder)
    assert broken.error == "importing broken.py failed: RuntimeError: no credentials configured (broken.py:2 in <module>)"


def test_a_file_of_a_kind_no_provider_runs_is_refused_when_the_provider_is_made() -> None:
    with pytest.raises(UnknownProviderError, match=r"file providers run Python \(\.py\), .* Ruby \(\.rb\) and Go \(\.go\) files"):
        make("file://provider.sh")


RUBY_PROVIDER = """
require 'json'

def call_api(prompt, options, context)
  raise ArgumentError, 'no topic' if context['vars']['topic'] == 'nothing'
  { 'output' => "#{options['config']['prefix']}#{prompt.upcase}", 'tokenUsage' => { 'total' => 7, 'prompt' => 3, 'completion' => 4 },
    'metadata' => { 'label' => options['label'] } }
end

def shout(prompt, options, context)
  { output: "#{prompt}!", cost: 0.25 }
end
"""


@pytest.mark.skipif(shutil.which("ruby") is None, reason="Ruby is not installed (.ci/run installs it)")
def test_ruby_file_providers_run_as_promptfoo_runs_them(tmp_path: Path) -> None:
    write(tmp_path / "provider.rb", RUBY_PROVIDER)
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['tell me about {{topic}}']
        providers:
          - {id: file://provider.rb, label: ruby bot, config: {prefix: '> '}}
          - file://provider.rb:shout
          - ruby:provider.rb:shout
        tests:
          - vars: {topic: tea}
            assert: [{type: contains, value: TEA}]
          - vars: {topic: nothing}
        """,
    )
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    rows = {(r["provider"]["label"] or r["provider"]["id"], r["vars"]["topic"]): r for r in json.loads((tmp_path / "out.json").read_text())["results"]["results"]}
    assert result.code == 1
    tea = rows[("ruby bot", "tea")]
    assert tea["success"] and tea["response"]["output"] == "> TELL ME ABOUT TEA" and tea["response"]["tokenUsage"]["total"] == 7
    assert tea["response"]["metadata"] == {"label": "ruby bot"}
    assert "ArgumentError: no topic" in rows[("ruby bot", "nothing")]["error"]
    shouted = rows[("file://provider.rb:shout", "tea")]
    assert shouted["response"]["output"] == "tell me about tea!" and shouted["cost"] == 0.25
    assert rows[("ruby:provider.rb:shout", "tea")]["response"]["output"] == "tell me about tea!"  # promptfoo's `ruby:` id


@pytest.mark.skipif(shutil.which("ruby") is None, reason="Ruby is not installed (.ci/run installs it)")
def test_a_ruby_provider_that_does_not_compile_exits_2_before_any_call(tmp_path: Path) -> None:
    write(tmp_path / "provider.rb", "def call_api(prompt, options, context)\n  if prompt\nend\n")
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders: [file://provider.rb]\ntests:\n  - vars: {}\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "Ruby file provider: SyntaxError" in result.err and "provider.rb:3" in result.err


def test_eval_resolves_against_the_config_folder_and_errors_stay_per_row(tmp_path: Path) -> None:
    write(tmp_path / "suite" / "provider.py", "def call_api(prompt, options, context):\n    if 'fail' in prompt:\n        raise KeyError('missing field')\n    return {'output': 'ok: ' + prompt}\n")
    write(
        tmp_path / "suite" / "promptfooconfig.yaml",
        """
        prompts: ['{{q}}']
        providers: [file://provider.py]
        tests:
          - vars: {q: one}
            assert: [{type: contains, value: ok}]
          - vars: {q: fail}
            assert: [{type: contains, value: ok}]
          - vars: {q: three}
            assert: [{type: contains, value: ok}]
        """,
    )
    result = run_cli("eval", "-c", "suite/promptfooconfig.yaml", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 1, result.err
    rows = sorted(json.loads((tmp_path / "out.json").read_text())["results"]["results"], key=lambda r: r["testIdx"])
    assert [r["success"] for r in rows] == [True, False, True]
    assert rows[1]["failureReason"] == 2
    assert rows[1]["error"] == "KeyError: 'missing field' (provider.py:3 in call_api)"
    assert rows[2]["response"]["output"] == "ok: three"


def test_compat_provider_python_example_runs_unchanged(openai_env: LLMServer, tmp_path: Path) -> None:
    """promptfoo's provider-python example: four Python providers, config values loaded from YAML/JS/Python files."""
    example = tmp_path / "provider-python"
    shutil.copytree(COMPAT / "provider-python", example)
    config_path = example / "promptfooconfig.yaml"
    config_path.chmod(0o644)
    config = yaml_loads(config_path.read_text())
    config["tests"] = [t for t in config["tests"] if all(a["type"] != "llm-rubric" for a in t.get("assert", []))]
    assert len(config["tests"]) == 1
    config_path.write_text(json.dumps(config))
    openai_env.on_chat("ALL CAPS", "BANANAMAX: BANANAS, BUT BETTER 🍌")
    openai_env.on_chat(None, "Bananamax makes bananas funnier 🍌")

    code, rows = eval_rows_in(example)
    assert code == 0
    assert [r["provider"]["id"] for r in rows] == [
        "file://provider.py",
        "file://provider.py:some_other_function",
        "file://provider.py:async_provider",
        "file://provider.py:call_api",
    ]
    assert rows[2]["provider"]["label"] == "async provider"
    assert all(r["success"] for r in rows), [r["error"] for r in rows]
    assert rows[1]["response"]["output"] == "BANANAMAX: BANANAS, BUT BETTER 🍌"
    assert rows[0]["response"]["tokenUsage"]["total"] > 0
    assert rows[0]["response"]["metadata"] == {"config": {"someOption": "foobar"}}
    loaded = rows[3]["response"]["metadata"]["config"]
    assert loaded["settings"] == {"model": "gpt-4.1-mini", "temperature": 0.7, "log_level": "DEBUG", "max_tokens": 500}
    assert loaded["formatting"]["prefix"] == "Question:" and loaded["formatting"]["uppercase"] is False
    assert loaded["nested"]["parameters"]["foo"] == "bar"

    chats = openai_env.requests_to("/v1/chat/completions")
    assert len(chats) == 4
    assert sorted(r.json["model"] for r in chats) == ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1-mini", "gpt-4.1-mini"]
    assert all(r.json["messages"][0]["content"] == "You are a marketer working for a startup called Bananamax." for r in chats)
    assert sum("Write in ALL CAPS" in r.json["messages"][1]["content"] for r in chats) == 1


def eval_rows_in(folder: Path) -> tuple[int, list[dict]]:
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=folder)
    assert result.code in (0, 1), result.err
    rows = json.loads((folder / "out.json").read_text())["results"]["results"]
    return result.code, sorted(rows, key=lambda r: r["metadata"]["ciGrade"]["providerIndex"])


def test_eval_named_function_output_is_graded(folder: Path) -> None:
    code, rows = eval_rows(
        folder,
        """
        prompts: ['{{q}}']
        providers: [file://providers/provider.py:shout]
        tests:
          - vars: {q: quiet}
            assert: [{type: equals, value: QUIET}]
        """,
    )
    assert code == 0 and rows[0]["response"]["output"] == "QUIET"


def test_config_env_reaches_python_providers_during_the_run_only(tmp_path: Path) -> None:
    write(
        tmp_path / "bot.py",
        """
        import os

        def call_api(prompt, options, context):
            return {"output": os.environ.get("BOT_GREETING", "unset") + " " + prompt}
        """,
    )
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        env: {BOT_GREETING: hola}
        prompts: ['{{name}}']
        providers: [file://bot.py]
        tests:
          - vars: {name: Ada}
            assert: [{type: equals, value: hola Ada}]
        """,
    )
    assert "BOT_GREETING" not in os.environ
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.out + result.err
    assert "BOT_GREETING" not in os.environ
