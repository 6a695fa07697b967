"""Go file providers (`file://x.go[:Function]`, `golang:`), built with the Go toolchain as promptfoo's
users write them: a `main` package whose `CallApi` is set in `init`, and a function of another
package that calls the loopback OpenAI stand-in over net/http."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli, write
from tests.provider_helpers import eval_rows
from tests.servers.llm_server import LLMServer

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="the Go toolchain is installed by .ci/run (Debian's golang-go)")

MAIN_PROVIDER = """
// Package main: promptfoo's layout, CallApi assigned in init.
package main

import (
	"fmt"
	"strings"

	"example.com/evals/shout"
)

var CallApi func(string, map[string]interface{}, map[string]interface{}) (map[string]interface{}, error)

func init() {
	CallApi = func(prompt string, options map[string]interface{}, context map[string]interface{}) (map[string]interface{}, error) {
		config, _ := options["config"].(map[string]interface{})
		vars, _ := context["vars"].(map[string]interface{})
		switch vars["how"] {
		case "fail":
			return nil, fmt.Errorf("the upstream said no")
		case "panic":
			var none map[string]int
			none["x"] = 1
		}
		output := fmt.Sprintf("%s %s (%v)", config["greeting"], shout.Loud(prompt), strings.Repeat("!", 2))
		return map[string]interface{}{
			"output":     output,
			"tokenUsage": map[string]interface{}{"prompt": 3, "completion": 4, "total": 7},
			"metadata":   map[string]interface{}{"label": options["label"]},
		}, nil
	}
}
"""

SHOUT = "package shout\n\nimport \"strings\"\n\n// Loud is the prompt in capitals.\nfunc Loud(text string) string { return strings.ToUpper(text) }\n"

CHAT_PROVIDER = """
// Package chat asks an OpenAI-compatible API, its address and key from the environment.
package chat

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
)

func Ask(prompt string, options map[string]interface{}, context map[string]interface{}) (map[string]interface{}, error) {
	body, _ := json.Marshal(map[string]interface{}{"model": "gpt-4.1-mini", "messages": []map[string]string{{"role": "user", "content": prompt}}})
	request, _ := http.NewRequest("POST", os.Getenv("OPENAI_BASE_URL")+"/chat/completions", bytes.NewReader(body))
	request.Header.Set("Authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))
	request.Header.Set("Content-Type", "application/json")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	var reply struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(response.Body).Decode(&reply); err != nil {
		return nil, err
	}
	return map[string]interface{}{"output": reply.Choices[0].Message.Content}, nil
}
"""


def module(folder: Path) -> Path:
    write(folder / "go.mod", "module example.com/evals\n\ngo 1.19\n")
    write(folder / "shout" / "shout.go", SHOUT)
    write(folder / "provider" / "main.go", MAIN_PROVIDER)
    write(folder / "chat" / "chat.go", CHAT_PROVIDER)
    write(folder / "root.go", 'package main\n\nfunc CallApi(p string, o, c map[string]interface{}) (map[string]interface{}, error) {\n\treturn map[string]interface{}{"output": "root: " + p}, nil\n}\n')
    return folder


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_eval_runs_go_providers_of_a_main_and_another_package(tmp_path: Path, openai_env: LLMServer) -> None:
    module(tmp_path)
    before = listing(tmp_path)
    code, rows = eval_rows(tmp_path, """
        prompts: ['hello {{name}}']
        providers:
          - {id: 'file://provider/main.go:CallApi', label: root, config: {greeting: Hi}}
          - golang:chat/chat.go:Ask
          - file://root.go
        tests:
          - vars: {name: ada}
            assert: [{type: icontains, value: hello ada}]
          - vars: {name: bo, how: fail}
          - vars: {name: cy, how: panic}
        """)
    assert code == 1
    by = {(r["vars"]["name"], r["provider"]["id"]): r for r in rows}
    ada = by[("ada", "file://provider/main.go:CallApi")]
    assert ada["success"] is True and ada["response"]["output"] == "Hi HELLO ADA (!!)"
    assert ada["response"]["tokenUsage"]["total"] == 7 and ada["response"]["metadata"]["label"] == "root"
    assert by[("ada", "golang:chat/chat.go:Ask")]["response"]["output"] == "echo: hello ada"
    assert by[("ada", "file://root.go")]["response"]["output"] == "root: hello ada"  # a main package in the module's own folder
    assert by[("bo", "file://provider/main.go:CallApi")]["error"].endswith("the upstream said no")
    assert "panic: assignment to entry in nil map" in by[("cy", "file://provider/main.go:CallApi")]["error"]
    assert len(openai_env.requests) == 3  # the chat package's calls, one per test
    assert set(listing(tmp_path)) - set(before) == {"promptfooconfig.yaml", "out.json"}  # nothing written into the module


@pytest.mark.parametrize(
    ("files", "provider", "message"),
    [
        ({"provider/main.go": MAIN_PROVIDER.replace("strings.Repeat", "strings.Repat")}, "file://provider/main.go", "undefined: strings.Repat"),
        ({}, "file://provider/main.go:Missing", "undefined: Missing"),
        ({}, "file://chat/chat.go:ask", "not exported"),
        ({"go.mod": None}, "file://provider/main.go", "no go.mod in"),
        ({}, "file://provider/other.go", "provider/other.go"),
    ],
)
def test_a_go_provider_that_does_not_build_exits_2_before_any_call(tmp_path: Path, openai_env: LLMServer, files: dict[str, str | None], provider: str, message: str) -> None:
    module(tmp_path)
    for name, text in files.items():
        if text is None:
            (tmp_path / name).unlink()
        else:
            write(tmp_path / name, text)
    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['hi']\nproviders: [openai:chat:gpt-4.1-mini, '{provider}']\ntests: [{{vars: {{}}}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2, result.out
    assert "promptfooconfig.yaml:2 providers[1]" in result.err and message in result.err and "Traceback" not in result.err
    assert openai_env.requests == []


def test_without_go_the_config_is_refused_saying_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['hi']\nproviders: ['file://provider/main.go']\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "Go file providers need Go: install it (go on PATH) or name its executable in config.goExecutable" in result.err


def test_config_go_executable_names_the_toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module(tmp_path)
    go = shutil.which("go")
    assert go is not None
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no `go` on PATH: only the config names it
    code, rows = eval_rows(tmp_path, f"""
        prompts: ['hi']
        providers: [{{id: 'file://provider/main.go', config: {{greeting: Yo, goExecutable: '{go}'}}}}]
        """)
    assert code == 0 and rows[0]["response"]["output"] == "Yo HI (!!)"


def test_a_call_past_its_time_limit_is_an_error(tmp_path: Path) -> None:
    module(tmp_path)
    write(tmp_path / "slow" / "slow.go", 'package slow\n\nimport "time"\n\nfunc CallApi(p string, o, c map[string]interface{}) (map[string]interface{}, error) {\n\ttime.Sleep(time.Minute)\n\treturn nil, nil\n}\n')
    code, rows = eval_rows(tmp_path, "prompts: ['hi']\nproviders: [{id: 'file://slow/slow.go', config: {timeout: 0.5}}]\n")
    assert code == 1 and rows[0]["error"] == "the Go provider did not finish within 0.5 s"

