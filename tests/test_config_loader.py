"""Config features end to end: each top-level key, the prompt, provider and test forms, merging."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, run_cli, write
from tests.servers.llm_server import LLMServer


def eval_config(folder: Path, config: str | None, *args: str, name: str = "promptfooconfig.yaml") -> tuple[CliResult, list[dict[str, Any]]]:
    """Write `config` (if given), run `ci-grade eval -o out.json` in `folder`, return the rows."""
    if config is not None:
        write(folder / name, config)
    result = run_cli("eval", "--no-progress", "-o", "out.json", *args, cwd=folder)
    out = folder / "out.json"
    rows = json.loads(out.read_text())["results"]["results"] if out.exists() else []
    return result, rows


def outputs(rows: list[dict[str, Any]]) -> list[str]:
    return [row["response"]["output"] for row in rows]


def chat_requests(server: LLMServer) -> list[dict[str, Any]]:
    return [r.json for r in server.requests_to("/v1/chat/completions")]


# -- top-level keys ------------------------------------------------------------------------------


def test_description_names_the_run(tmp_path: Path) -> None:
    result, _ = eval_config(
        tmp_path,
        """
        description: Greeting checks
        prompts: ['Hi {{name}}']
        providers: [echo]
        tests: [{vars: {name: Ada}}]
        """,
    )
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == "ci-grade: Greeting checks"
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["ciGrade"]["info"]["description"] == "Greeting checks"
    assert data["config"]["description"] == "Greeting checks"


def test_targets_is_an_alias_for_providers(tmp_path: Path) -> None:
    result, rows = eval_config(
        tmp_path,
        """
        prompts: ['Hi {{name}}']
        targets:
          - id: echo
            label: mirror
        tests: [{vars: {name: Ada}}]
        """,
    )
    assert result.code == 0, result.err
    assert [(r["provider"]["id"], r["provider"]["label"]) for r in rows] == [("echo", "mirror")]


def test_providers_and_targets_together_is_an_error(tmp_path: Path) -> None:
    result, rows = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\ntargets: [echo]\n")
    assert result.code == 2
    assert result.err.strip() == "ci-grade: error: promptfooconfig.yaml:3 targets: use either providers or targets, not both"
    assert rows == []


def test_default_test_inline_and_from_a_file(tmp_path: Path) -> None:
    config = """
        prompts: ['{{greeting}} {{name}}']
        providers: [echo]
        defaultTest: DEFAULTS
        tests:
          - vars: {name: Ada}
          - vars: {name: Bob, greeting: Bye}
            assert: [{type: contains, value: Bye}]
        """
    inline = "{vars: {greeting: Hello}, assert: [{type: starts-with, value: '{{greeting}}'}]}"
    result, rows = eval_config(tmp_path / "inline", config.replace("DEFAULTS", inline))
    assert result.code == 0, result.err
    assert outputs(rows) == ["Hello Ada", "Bye Bob"]
    assert [len(r["gradingResult"]["componentResults"]) for r in rows] == [1, 2]

    write(tmp_path / "file" / "defaults" / "default.yaml", "vars: {greeting: Hello}\nassert: [{type: starts-with, value: '{{greeting}}'}]\n")
    result, rows = eval_config(tmp_path / "file", config.replace("DEFAULTS", "file://defaults/default.yaml"))
    assert result.code == 0, result.err
    assert outputs(rows) == ["Hello Ada", "Bye Bob"]
    assert [c["assertion"]["type"] for c in rows[1]["gradingResult"]["componentResults"]] == ["starts-with", "contains"]


def test_scenarios_cross_every_config_with_every_test(tmp_path: Path) -> None:
    result, rows = eval_config(
        tmp_path,
        """
        prompts: ['{{greeting}}, {{name}}!']
        providers: [echo]
        scenarios:
          - description: greetings
            config:
              - vars: {greeting: Hello}
              - vars: {greeting: Bonjour}
                assert: [{type: contains, value: Bonjour}]
            tests:
              - vars: {name: Ada}
                assert: [{type: contains, value: Ada}]
              - description: Bob's case
                vars: {name: Bob}
        """,
    )
    assert result.code == 0, result.err
    assert outputs(rows) == ["Hello, Ada!", "Hello, Bob!", "Bonjour, Ada!", "Bonjour, Bob!"]
    assert [r["description"] for r in rows] == ["greetings", "Bob's case", "greetings", "Bob's case"]
    asserts = [[c["assertion"]["value"] for c in r["gradingResult"]["componentResults"]] for r in rows]
    assert asserts == [["Ada"], [], ["Bonjour", "Ada"], ["Bonjour"]]
    assert len({r["testId"] for r in rows}) == 4


def test_env_feeds_templates_and_provider_keys(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREETING_FROM_SHELL", "shell value")
    llm_server.on_chat(None, "ok")
    result, rows = eval_config(
        tmp_path,
        f"""
        env:
          OPENAI_API_KEY: sk-config-key-123456
          OPENAI_BASE_URL: {llm_server.openai_base_url}
          GREETING: from config
          RETRIES: 3
          VERBOSE: true
        prompts: ['{{{{ env.GREETING }}}}|{{{{ env.RETRIES }}}}|{{{{ env.VERBOSE }}}}|{{{{ env.GREETING_FROM_SHELL }}}}|{{{{ env.NOT_SET }}}}']
        providers: [openai:gpt-4o-mini]
        tests: [{{vars: {{}}}}]
        """,
    )
    assert result.code == 0, result.err
    assert rows[0]["prompt"]["raw"] == "from config|3|true|shell value|"
    (request,) = llm_server.requests_to("/v1/chat/completions")
    assert {k.lower(): v for k, v in request.headers.items()}["authorization"] == "Bearer sk-config-key-123456"
    assert "sk-config-key-123456" not in (tmp_path / "out.json").read_text()


def test_env_file_values_reach_templates(tmp_path: Path) -> None:
    write(tmp_path / "local.env", "export TEAM='platform'\n# comment\nEMPTY=\n")
    result, rows = eval_config(
        tmp_path,
        "prompts: ['team={{ env.TEAM }}']\nproviders: [echo]\n",
        "--env-file",
        "local.env",
    )
    assert result.code == 0, result.err
    assert outputs(rows) == ["team=platform"]


def test_evaluate_options_max_concurrency_and_repeat(tmp_path: Path, openai_env: LLMServer) -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def slow(request: dict[str, Any]) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.03)
        with lock:
            state["now"] -= 1
        return "fine"

    openai_env.on_chat(None, slow)
    config = """
        evaluateOptions:
          maxConcurrency: {limit}
          repeat: 2
        prompts: ['q{{{{n}}}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {{n: ['1', '2', '3']}}
        """
    result, rows = eval_config(tmp_path / "one", config.format(limit=1))
    assert result.code == 0, result.err
    assert len(rows) == 6 and state["peak"] == 1
    assert [r["repeatIndex"] for r in rows] == [0, 0, 0, 1, 1, 1]
    assert [r["testId"] for r in rows[:3]] == [r["testId"] for r in rows[3:]]

    state["peak"] = 0
    result, rows = eval_config(tmp_path / "three", config.format(limit=3))
    assert result.code == 0, result.err
    assert len(rows) == 6 and state["peak"] >= 2


def test_output_path_from_config_relative_to_the_config_folder(tmp_path: Path) -> None:
    write(
        tmp_path / "evals" / "promptfooconfig.yaml",
        """
        outputPath: results/out.json
        prompts: [hello]
        providers: [echo]
        """,
    )
    result = run_cli("eval", "--no-progress", "-c", "evals/promptfooconfig.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    assert json.loads((tmp_path / "evals" / "results" / "out.json").read_text())["results"]["stats"]["successes"] == 1
    assert not (tmp_path / "results").exists()

    write(
        tmp_path / "evals" / "promptfooconfig.yaml",
        """
        outputPath: [out/a.json, out/a.junit.xml, out/a.md]
        prompts: [hello]
        providers: [echo]
        """,
    )
    result = run_cli("eval", "--no-progress", "-c", "evals/promptfooconfig.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    assert sorted(p.name for p in (tmp_path / "evals" / "out").iterdir()) == ["a.json", "a.junit.xml", "a.md"]

    # -o on the command line replaces outputPath
    result = run_cli("eval", "--no-progress", "-c", "evals/promptfooconfig.yaml", "-o", "cli.json", cwd=tmp_path)
    assert result.code == 0 and (tmp_path / "cli.json").exists()


def test_metadata_is_kept_and_test_metadata_reaches_rows(tmp_path: Path) -> None:
    result, rows = eval_config(
        tmp_path,
        """
        metadata: {owner: search-team, ticket: 42}
        prompts: [hello]
        providers: [echo]
        tests:
          - metadata: {area: billing}
        """,
    )
    assert result.code == 0, result.err
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["config"]["metadata"] == {"owner": "search-team", "ticket": 42}
    assert rows[0]["metadata"]["area"] == "billing"


def test_unknown_keys_warn_once_on_stderr_and_never_crash(tmp_path: Path) -> None:
    result, rows = eval_config(
        tmp_path,
        """
        prompts: [hello]
        providers: [echo]
        colour: blue
        tests:
          - vars: {a: 1}
            colour: red
          - vars: {a: 2}
            colour: green
            assert:
              - {type: contains, value: hello, colour: x}
              - {type: contains, value: hello, colour: y}
        """,
    )
    assert result.code == 0, result.err
    assert len(rows) == 2
    warnings = [line for line in result.err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: promptfooconfig.yaml:3: unknown key 'colour' ignored",
        "warning: promptfooconfig.yaml:6: unknown key 'tests[].colour' ignored",
        "warning: promptfooconfig.yaml:10: unknown key 'assert[].colour' ignored",
    ]
    assert "colour" not in result.out
    assert "2 passed, 0 failed, 0 errors" in result.out


def test_promptfoo_keys_are_read_and_web_only_ones_pass_quietly(tmp_path: Path) -> None:
    result, _ = eval_config(
        tmp_path,
        "prompts: [hello]\nproviders: [echo]\ntracing: {enabled: true}\nderivedMetrics: [{name: twice, value: '2 * 1'}]\nsharing: false\n",
    )
    assert result.code == 0, result.err
    assert "not supported" not in result.err
    assert "tracing is enabled without an OTLP receiver" in result.err  # read, not ignored
    assert "sharing" not in result.err


def test_several_configs_merge_like_promptfoo(tmp_path: Path) -> None:
    write(
        tmp_path / "a.yaml",
        """
        description: first
        prompts: ['A {{x}} {{shared}} {{ env.ONE }}{{ env.TWO }}']
        providers: [echo]
        env: {ONE: '1', TWO: a}
        evaluateOptions: {maxConcurrency: 2, repeat: 1}
        defaultTest:
          vars: {shared: from-a, only_a: yes}
          options: {prefix: '[', suffix: ']'}
          metadata: {suite: a}
          assert: [{type: contains, value: A}]
        tests:
          - vars: {x: 1}
        """,
    )
    write(
        tmp_path / "b.yaml",
        """
        description: second
        prompts: ['B {{x}} {{shared}}']
        providers: [{id: echo, label: other}]
        env: {TWO: b}
        evaluateOptions: {repeat: 1}
        defaultTest:
          vars: {shared: from-b}
          options: {suffix: '>'}
          metadata: {team: b}
          assert: [{type: icontains, value: b}]
        tests:
          - vars: {x: 2}
        """,
    )
    result = run_cli("eval", "--no-progress", "-c", "a.yaml", "-c", "b.yaml", "-o", "out.json", cwd=tmp_path)
    data = json.loads((tmp_path / "out.json").read_text())
    rows = data["results"]["results"]
    # 2 prompts x 2 providers x 2 tests, every test with both defaults' asserts
    assert len(rows) == 8
    assert data["ciGrade"]["info"]["description"] == "first, second"
    assert sorted({r["prompt"]["label"] for r in rows}) == ["A {{x}} {{shared}} {{ env.ONE }}{{ env.TWO }}", "B {{x}} {{shared}}"]
    assert sorted({r["provider"]["label"] or r["provider"]["id"] for r in rows}) == ["echo", "other"]
    first = rows[0]
    assert first["prompt"]["raw"] == "[A 1 from-b 1b>"
    assert first["vars"] == {"shared": "from-b", "only_a": "yes", "x": 1}
    assert {k: v for k, v in first["metadata"].items() if k != "ciGrade"} == {"suite": "a", "team": "b"}
    assert [c["assertion"]["type"] for c in first["gradingResult"]["componentResults"]] == ["contains", "icontains"]
    # 'contains A' fails on every 'B' prompt row; the 'A' rows pass both defaults' asserts
    assert result.code == 1
    assert [r["success"] for r in rows] == [r["prompt"]["label"].startswith("A") for r in rows]


def test_no_config_flag_finds_the_default_file(tmp_path: Path) -> None:
    for name, text in (
        ("promptfooconfig.yml", "prompts: [from yml]\nproviders: [echo]\n"),
        ("promptfooconfig.json", '{"prompts": ["from json"], "providers": ["echo"]}'),
        ("promptfooconfig.yaml", "prompts: [from yaml]\nproviders: [echo]\n"),
    ):
        folder = tmp_path / name
        write(folder / name, text)
        result, rows = eval_config(folder, None)
        assert result.code == 0, result.err
        assert outputs(rows) == [name.split(".")[1].replace("promptfooconfig", "").join(["from ", ""])]

    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("eval", "--no-progress", cwd=empty)
    assert result.code == 2
    assert "no promptfooconfig.yaml / promptfooconfig.yml / promptfooconfig.json" in result.err
    # -c FOLDER reads the folder's config, as promptfoo does
    result = run_cli("eval", "--no-progress", "-c", "promptfooconfig.json", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0 and outputs(json.loads((tmp_path / "out.json").read_text())["results"]["results"]) == ["from json"]
    result = run_cli("eval", "--no-progress", "-c", "empty", cwd=tmp_path)
    assert result.code == 2 and f"no promptfooconfig.yaml / promptfooconfig.yml / promptfooconfig.json in {empty}" in result.err


# -- prompts -------------------------------------------------------------------------------------


def test_prompt_files_globs_and_separators(tmp_path: Path) -> None:
    # promptfoo 0.123.1 splits where a line is `---` apart from spaces around it: not on `-----`,
    # nor on form feeds; it trims as JavaScript does (a byte-order mark too)
    write(tmp_path / "prompts" / "a.txt", "\ufeffFirst {{x}}\r\n---\r\nSecond {{x}}\n-----\n\nafter a rule\x0c  ---  \n\n  ---\t\nThird {{x}}\u3000\n")
    write(tmp_path / "prompts" / "b.md", "# Heading\n\n---\n\nWhole **{{x}}**\n")
    write(tmp_path / "prompts" / "c.j2", "{% for i in range(2) %}{{ x }}{{ loop.index }};{% endfor %}")
    result, rows = eval_config(
        tmp_path,
        """
        prompts:
          - file://prompts/*.txt
          - file://prompts/b.md
          - id: file://prompts/c.j2
            label: loop
        providers: [echo]
        tests: [{vars: {x: Z}}]
        """,
    )
    assert result.code == 0, result.err
    assert outputs(rows) == ["First Z", "Second Z\n-----\n\nafter a rule\x0c  ---", "Third Z", "# Heading\n\n---\n\nWhole **Z**\n", "Z1;Z2;"]
    assert [r["prompt"]["label"] for r in rows] == [
        "prompts/a.txt: First {{x}}",
        "prompts/a.txt: Second {{x}}\n-----\n\nafter a rule\x0c  ---",
        "prompts/a.txt: Third {{x}}",
        "prompts/b.md: # Heading\n\n---\n\nWhole **{{x}}**\n",
        "loop",
    ]


def test_files_starting_with_a_byte_order_mark_read_as_without_it(tmp_path: Path) -> None:
    bom = "\ufeff"
    write(tmp_path / "p.txt", bom + "Hi {{name}} from {{place}}")
    write(tmp_path / "place.txt", bom + "Paris")
    write(tmp_path / "tests.json", bom + json.dumps([{"vars": {"name": "Bob", "place": "file://place.txt"}, "assert": [{"type": "equals", "value": "Hi Bob from Paris"}]}]))
    config = {"prompts": ["file://p.txt"], "providers": ["echo"], "tests": "file://tests.json"}
    (tmp_path / "promptfooconfig.json").write_text(bom + json.dumps(config, indent=2), encoding="utf-8")
    result, rows = eval_config(tmp_path, None, "-c", "promptfooconfig.json")
    assert result.code == 0, result.err
    assert outputs(rows) == ["Hi Bob from Paris"]


def test_a_json_config_with_escaped_emoji_keeps_its_line_numbers(tmp_path: Path) -> None:
    config = {"description": "smile \U0001F600", "prompts": ["hi"], "providers": ["echo"], "tests": [{"assert": [{"type": "containz", "value": "x"}]}]}
    (tmp_path / "promptfooconfig.json").write_text(json.dumps(config, indent=2))  # ASCII: the emoji as \\ud83d\\ude00
    assert "\\ud83d\\ude00" in (tmp_path / "promptfooconfig.json").read_text()
    result = run_cli("eval", "--no-progress", "-c", "promptfooconfig.json", cwd=tmp_path)
    assert result.code == 2 and "promptfooconfig.json:13 tests[0].assert[0].type: unknown assertion type" in result.err, result.err


def test_a_labelled_glob_labels_each_file_by_its_path(tmp_path: Path) -> None:
    # promptfoo 0.123.1 drops a label given to a glob matching several files: "p/a.txt: one {{x}}", ...
    write(tmp_path / "p" / "a.txt", "one {{x}}")
    write(tmp_path / "p" / "b.txt", "two {{x}}")
    for form in ("prompts: {file://p/*.txt: txts}", "prompts: [{id: file://p/*.txt, label: txts}]"):
        result, rows = eval_config(tmp_path, form + "\nproviders: [echo]\ntests: [{vars: {x: X}}]\n")
        assert result.code == 0, result.err
        assert sorted((r["prompt"]["label"], r["response"]["output"]) for r in rows) == [("p/a.txt: one {{x}}", "one X"), ("p/b.txt: two {{x}}", "two X")]
        prompts = json.loads((tmp_path / "out.json").read_text())["results"]["prompts"]
        assert sorted(p["label"] for p in prompts) == ["p/a.txt: one {{x}}", "p/b.txt: two {{x}}"]
        assert len({r["testId"] for r in rows}) == 2


def test_prompt_map_form_objects_and_the_default_prompt(tmp_path: Path) -> None:
    write(tmp_path / "p1.txt", "one {{x}}")
    write(tmp_path / "p2.txt", "two {{x}}")
    result, rows = eval_config(
        tmp_path / ".",
        """
        prompts:
          file://p1.txt: First
          file://p2.txt: Second
        providers: [echo]
        tests: [{vars: {x: X}}]
        """,
    )
    assert result.code == 0, result.err
    assert [(r["prompt"]["label"], r["response"]["output"]) for r in rows] == [("First", "one X"), ("Second", "two X")]

    result, rows = eval_config(
        tmp_path / "objects",
        """
        prompts:
          - {id: short, label: Short one, raw: 'S {{x}}'}
          - {raw: 'R {{x}}'}
        providers: [echo]
        tests: [{vars: {x: X}}]
        """,
    )
    assert result.code == 0, result.err
    assert [(r["prompt"]["label"], r["response"]["output"]) for r in rows] == [("Short one", "S X"), ("R {{x}}", "R X")]

    result, rows = eval_config(tmp_path / "default", "providers: [echo]\ntests: [{vars: {prompt: just this}}]\n")
    assert result.code == 0, result.err
    assert [(r["prompt"]["label"], r["response"]["output"]) for r in rows] == [("{{prompt}}", "just this")]


def test_json_chat_prompt_escapes_vars_on_the_wire(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, "noted")
    write(tmp_path / "chat.json", '[{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Repeat: {{ text }}"}]')
    write(tmp_path / "chat.yaml", "- role: system\n  content: 'Be kind about {{ topic }}.'\n- role: user\n  content: '{{ text }}'\n")
    write(tmp_path / "chats.jsonl", '[{"role": "user", "content": "L1 {{ text }}"}]\n\n[{"role": "user", "content": "L2 {{ topic }}"}]\n')
    tricky = 'He said "stop"\nthen \\ left {"a": 1}'
    write(tmp_path / "tests.yaml", json.dumps([{"vars": {"text": tricky, "topic": "<b>&"}}]))
    result, rows = eval_config(
        tmp_path,
        """
        prompts: [file://chat.json, file://chat.yaml, file://chats.jsonl]
        providers: [openai:gpt-4o-mini]
        tests: file://tests.yaml
        """,
    )
    assert result.code == 0, result.err
    sent = sorted((m["role"], m["content"]) for request in chat_requests(openai_env) for m in request["messages"])
    assert sent == sorted(
        [
            ("system", "Be terse."),
            ("user", f"Repeat: {tricky}"),
            ("system", "Be kind about <b>&."),
            ("user", tricky),
            ("user", f"L1 {tricky}"),
            ("user", "L2 <b>&"),
        ]
    )
    assert len(rows) == 4
    for row in rows:
        assert isinstance(json.loads(row["prompt"]["raw"]), list)


def test_provider_prompt_filters_by_label_group_and_wildcard(tmp_path: Path) -> None:
    result, rows = eval_config(
        tmp_path,
        """
        prompts:
          - {label: 'support:short', raw: 'short {{q}}'}
          - {label: 'support:long', raw: 'long {{q}}'}
          - {label: sales, raw: 'sales {{q}}'}
        providers:
          - {id: echo, label: exact, prompts: [sales]}
          - {id: echo, label: group, prompts: [support]}
          - {id: echo, label: wildcard, prompts: ['support:*', sales]}
          - {id: echo, label: all}
        tests:
          - vars: {q: x}
          - description: only on group
            vars: {q: y}
            providers: [group]
            prompts: ['support:long']
          - description: by wildcard
            vars: {q: z}
            providers: ['wild*']
        """,
    )
    assert result.code == 0, result.err
    pairs = [(r["vars"]["q"], r["provider"]["label"], r["prompt"]["label"]) for r in rows]
    assert [p for p in pairs if p[0] == "x"] == [
        ("x", "exact", "sales"),
        ("x", "group", "support:short"),
        ("x", "group", "support:long"),
        ("x", "wildcard", "support:short"),
        ("x", "wildcard", "support:long"),
        ("x", "wildcard", "sales"),
        ("x", "all", "support:short"),
        ("x", "all", "support:long"),
        ("x", "all", "sales"),
    ]
    assert [p for p in pairs if p[0] == "y"] == [("y", "group", "support:long")]
    assert [p for p in pairs if p[0] == "z"] == [("z", "wildcard", "support:short"), ("z", "wildcard", "support:long"), ("z", "wildcard", "sales")]


def test_a_test_with_none_of_a_tests_keys_exits_2_as_promptfoo_refuses_it(tmp_path: Path) -> None:
    for tests, where, has in (("  - description: only a description\n", "tests[0]", "description"), ("  - {}\n", "tests[0]", "none")):
        result, _ = eval_config(tmp_path, "prompts: ['hi']\nproviders: [echo]\ntests:\n" + tests)
        assert result.code == 2 and f"promptfooconfig.yaml:4 {where}: a test needs one of assert, vars, options, metadata, provider, providerOutput, threshold; this one has {has}" in result.err
    scenario = "prompts: ['hi {{x}}']\nproviders: [echo]\nscenarios:\n  - config: [{vars: {x: 1}}]\n    tests:\n      - description: only\n"
    result, _ = eval_config(tmp_path, scenario)
    assert result.code == 2 and "scenarios[0].tests[0]: a test needs one of" in result.err


def test_a_filter_that_matches_nothing_is_a_config_error(tmp_path: Path) -> None:
    result, _ = eval_config(
        tmp_path,
        """
        prompts: [{label: a, raw: x}]
        providers: [echo]
        tests:
          - vars: {}
          - {prompts: [typo], vars: {}}
        """,
    )
    assert result.code == 2
    assert result.err.startswith("ci-grade: error: promptfooconfig.yaml:5 tests[1]: this test runs on no prompt x provider")
    result, _ = eval_config(tmp_path, "prompts: [{label: a, raw: x}]\nproviders: [{id: echo, prompts: [b]}]\n")
    assert result.code == 2
    assert result.err.strip() == "ci-grade: error: promptfooconfig.yaml:2 providers[0].prompts: prompts ['b'] match no prompt (prompts are ['a'])"


# -- providers -----------------------------------------------------------------------------------


def test_provider_forms(tmp_path: Path) -> None:
    write(tmp_path / "providers.yaml", "- id: echo\n  label: from-file\n- echo\n")
    result, rows = eval_config(
        tmp_path,
        """
        prompts: ['say {{x}}']
        providers:
          - echo
          - id: echo
            label: shouty
            config: {temperature: 0}
            transform: output.toUpperCase()
          - echo:
              label: mapped
          - file://providers.yaml
        tests: [{vars: {x: hi}}]
        """,
    )
    assert result.code == 0, result.err
    assert [(r["provider"]["id"], r["provider"]["label"], r["response"]["output"]) for r in rows] == [
        ("echo", "", "say hi"),  # no label: "" as promptfoo writes it
        ("echo", "shouty", "SAY HI"),
        ("echo", "mapped", "say hi"),
        ("echo", "from-file", "say hi"),
        ("echo", "", "say hi"),
    ]
    assert rows[4]["testId"] == rows[0]["testId"] + "-2"
    assert len({r["testId"] for r in rows}) == 5


# -- tests ---------------------------------------------------------------------------------------


def test_tests_from_files_globs_and_mixed_lists(tmp_path: Path) -> None:
    write(tmp_path / "cases" / "a.yaml", "- vars: {x: yaml1}\n- vars: {x: yaml2}\n")
    write(tmp_path / "cases" / "b.json", '[{"vars": {"x": "json"}}]')
    write(tmp_path / "cases" / "c.jsonl", '{"vars": {"x": "jsonl1"}}\n{"vars": {"x": "jsonl2"}}\n')
    write(tmp_path / "cases" / "d.csv", "x,__expected\ncsv,contains:csv\n")
    result, rows = eval_config(
        tmp_path,
        """
        prompts: ['{{x}}']
        providers: [echo]
        tests:
          - vars: {x: inline-first}
          - file://cases/*.yaml
          - file://cases/b.json
          - file://cases/c.jsonl
          - file://cases/d.csv
          - vars: {x: inline-last}
        """,
    )
    assert result.code == 0, result.err
    assert outputs(rows) == ["inline-first", "yaml1", "yaml2", "json", "jsonl1", "jsonl2", "csv", "inline-last"]
    locations = [r["metadata"]["ciGrade"]["location"] for r in rows]
    assert locations[1] == {"file": "cases/a.yaml", "line": 1}
    assert locations[5] == {"file": "cases/c.jsonl", "line": 2}
    assert locations[6] == {"file": "cases/d.csv", "line": 2}
    assert locations[7] == {"file": "promptfooconfig.yaml", "line": 9}

    result, rows = eval_config(tmp_path, "prompts: ['{{x}}']\nproviders: [echo]\ntests: file://cases/*\n")
    assert result.code == 0, result.err
    assert outputs(rows) == ["yaml1", "yaml2", "json", "jsonl1", "jsonl2", "csv"]


def test_vars_from_files(tmp_path: Path) -> None:
    write(tmp_path / "data" / "doc.txt", "plain text\n")
    write(tmp_path / "data" / "obj.json", '{"k": [1, 2]}')
    write(tmp_path / "data" / "obj.yaml", "k: yes\nn: 010\n")
    write(tmp_path / "vars.yaml", "who: from vars file\n")
    result, rows = eval_config(
        tmp_path,
        """
        prompts: ['{{doc}}|{{ j.k | dump }}|{{ y.k }} {{ y.n }}|{{ who }}']
        providers: [echo]
        tests:
          - vars: {doc: file://data/doc.txt, j: file://data/obj.json, y: file://data/obj.yaml, who: inline}
          - vars: file://vars.yaml
        """,
    )
    assert result.code == 0, result.err
    # As promptfoo renders them: text is trimmed, and .json/.yaml variables are JSON text, not objects,
    # so `j.k` and `y.k` are undefined (this was "plain text\n|[1,2]|yes 10|inline").
    assert outputs(rows) == ["plain text|| |inline", "|| |from vars file"]
    # The results record the variables as written, as promptfoo 0.123.1 does; the prompt has the contents.
    assert rows[0]["vars"] == {"doc": "file://data/doc.txt", "j": "file://data/obj.json", "y": "file://data/obj.yaml", "who": "inline"}
    assert rows[0]["testCase"]["vars"] == rows[0]["vars"]
