"""Secrets never leak, whatever their name.

Secrets are planted where a config keeps them (the `env:` block, an `--env-file`, a provider's
headers, variables that headers and `apiKeyEnvar` read, the action's token), under names that do
not look secret, 6 to 11 characters long, one with a quote and a backslash (so its JSON spelling
differs). The models on loopback echo every credential they receive, in replies and in error
messages. Then no output may hold any of them in any spelling: results JSON, JSONL, CSV, YAML and
Markdown, JUnit, the job summary, the step outputs, the PR comment, the response cache, stdout and
stderr; and in Actions each is `::add-mask::`ed before it could be printed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_grade.redact import Redactor, is_common_value, is_secret_env_name
from tests.conftest import run_cli, run_cli_process, write
from tests.github_helpers import commands_in, parse_outputs
from tests.servers.github_server import GitHubServer
from tests.servers.llm_server import LLMServer, Recorded, Response

TOKEN = "ghs_secretsWorkflowToken0123"
PLANTED = {
    "env: block value under an innocuous name": "tQ9#xL2",
    "env: block value with a quote and a backslash": 'p"s\\w0rd!',
    "variable a header reads (HF_KEY)": "hf_Lm3Qz8Yw",
    "literal X-Custom-Auth header": "cA7xR2vN",
    "variable apiKeyEnvar names": "mk-44Qp1Zt",
    "the action's github-token": TOKEN,
}
ENV_FILE_SECRET = "Vb83kPq"  # an --env-file value under an innocuous name (eval only: the action has no env file)

CONFIG = """\
env:
  SESSION_SEED: "tQ9#xL2"
  DB_PASS: 'p"s\\w0rd!'
  REGION: eu west
prompts: ['seed={{{{ env.SESSION_SEED }}}} pass={{{{ env.DB_PASS }}}} region={{{{ env.REGION }}}} extra={{{{ env.REGION_HINT }}}} q={{{{ q }}}}']
providers:
  - id: {base}/echo
    label: echo-http
    config:
      headers:
        X-Custom-Auth: cA7xR2vN
        Authorization: 'Bearer {{{{ env.HF_KEY }}}}'
      body: {{prompt: '{{{{ prompt }}}}'}}
  - id: openai:chat:gpt-4.1-mini
    config:
      apiKeyEnvar: MODEL_ACCESS
tests:
  - description: echoes what it was given
    vars: {{q: hello}}
    assert: [{{type: contains, value: never-there}}]
  - description: refused
    vars: {{q: deny}}
    assert: [{{type: contains, value: never-there}}]
outputPath: [out/r.json, out/r.jsonl, out/r.csv, out/r.yaml, out/r.md]
"""


def _header(request: Recorded, name: str) -> str:
    return next((v for k, v in request.headers.items() if k.lower() == name.lower()), "")


def _echo(request: Recorded) -> Response:
    """An endpoint that repeats every credential it gets, in its reply or in its refusal."""
    seen = f"auth={_header(request, 'Authorization')} custom={_header(request, 'X-Custom-Auth')} body={json.dumps(request.json)}"
    if "q=deny" in json.dumps(request.json):
        return Response(401, json={"error": f"credentials rejected: {seen}"})
    return Response(json={"seen": seen})


def _chat(request: Recorded) -> Response:
    """A chat model that quotes the API key it was called with (as a misbehaving proxy might)."""
    key = _header(request, "Authorization")
    prompt = request.json["messages"][-1]["content"]
    if "q=deny" in prompt:
        return Response(401, json={"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}})
    text = f"You sent {key} with {prompt}"
    return Response(json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    })


@pytest.fixture
def model(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    llm_server.route("POST", "/echo", _echo).route("POST", "/v1/chat/completions", _chat)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("HF_KEY", PLANTED["variable a header reads (HF_KEY)"])
    monkeypatch.setenv("MODEL_ACCESS", PLANTED["variable apiKeyEnvar names"])
    return llm_server


@pytest.fixture
def gh() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN, repository="octo/demo") as server:
        yield server


def spellings(secret: str) -> set[str]:
    """How a secret can be written: as is, JSON-escaped (and so inside JSON text), with CSV's doubled quotes."""
    return {secret, json.dumps(secret)[1:-1], secret.replace('"', '""')}


def leaks(texts: dict[str, str], secrets: dict[str, str]) -> list[str]:
    return [f"{what} in {where}" for where, text in texts.items() for what, secret in secrets.items() for spelling in spellings(secret) if spelling in text]


def written(folder: Path, *skip: str) -> dict[str, str]:
    """Every file ci-grade wrote under `folder` (the inputs it was given are skipped)."""
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in skip}


def test_planted_secrets_reach_no_output_of_the_action(tmp_path: Path, model: LLMServer, gh: GitHubServer) -> None:
    ws = tmp_path / "ws"
    write(ws / "evals" / "promptfooconfig.yaml", CONFIG.format(base=model.url))
    step = tmp_path / "step"
    step.mkdir()
    (step / "event.json").write_text(json.dumps({"number": 7, "pull_request": {"number": 7}, "repository": {"full_name": "octo/demo"}}))
    env = {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(step / "event.json"),
        "GITHUB_REPOSITORY": "octo/demo", "GITHUB_API_URL": gh.api_url, "GITHUB_WORKSPACE": str(ws),
        "GITHUB_OUTPUT": str(step / "output.txt"), "GITHUB_STEP_SUMMARY": str(step / "summary.md"),
        "INPUT_WORKING-DIRECTORY": "evals", "INPUT_GITHUB-TOKEN": TOKEN, "INPUT_CACHE-DIR": ".cache",
        "INPUT_FAIL-ON": "never", "INPUT_CLUSTER_KEY": "region_hint", "INPUT_MIN_PASS_RATE": "0.0000",
    }
    result = run_cli_process("action", cwd=ws, env=env)
    assert result.code == 0, result.err

    # The models did receive (and echo) the credentials: the run was real.
    (echoed,) = [r for r in model.requests_to("/echo") if "q=hello" in json.dumps(r.json)]
    assert _header(echoed, "X-Custom-Auth") == PLANTED["literal X-Custom-Auth header"]
    assert _header(echoed, "Authorization") == f"Bearer {PLANTED['variable a header reads (HF_KEY)']}"
    chats = model.requests_to("/v1/chat/completions")
    assert len(chats) == 2 and all(_header(r, "Authorization") == f"Bearer {PLANTED['variable apiKeyEnvar names']}" for r in chats)
    results = json.loads((ws / "evals" / "ci-grade-results" / "results.json").read_text())
    rows = results["results"]["results"]
    assert len(rows) == 4 and sum(1 for r in rows if r["failureReason"] == 2) == 2
    assert any("***" in json.dumps(r["response"]) for r in rows if r.get("response")), "echoed credentials show as ***"
    assert "region=eu west" in rows[0]["prompt"]["raw"], "common values stay readable"

    log = "\n".join(line for line in result.out.splitlines() if not line.startswith("::add-mask::"))
    (comment,) = gh.comments[7]
    files = written(ws / "evals", "promptfooconfig.yaml")
    assert {"out/r.json", "out/r.jsonl", "out/r.csv", "out/r.yaml", "out/r.md", "ci-grade-results/results.json", "ci-grade-results/results.junit.xml"} <= set(files)
    assert any(name.startswith(".cache/") for name in files), "replies were cached"
    outputs = parse_outputs(step / "output.txt")
    assert outputs["comment-url"] == comment["html_url"]
    texts = {"stdout": log, "stderr": result.err, "summary": (step / "summary.md").read_text(), "outputs": json.dumps(outputs), "comment": comment["body"], **files}
    assert leaks(texts, PLANTED) == []

    masked = {message for name, _, message in commands_in(result.out) if name == "add-mask"}
    assert {secret for secret in PLANTED.values()} <= masked
    assert not {"region_hint", "0.0000"} & masked, "inputs are masked only when they are secret inputs"
    assert json.dumps(PLANTED["env: block value with a quote and a backslash"])[1:-1] in masked
    lines = result.out.splitlines()
    first_output = next(i for i, line in enumerate(lines) if not line.startswith("::"))
    assert all(lines.index(f"::add-mask::{secret}") < first_output for secret in PLANTED.values()), "masked before anything is printed"


def test_planted_secrets_reach_no_output_of_eval(tmp_path: Path, model: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG.format(base=model.url))
    (tmp_path / "local.env").write_text(f"REGION_HINT={ENV_FILE_SECRET}\n")
    args = ("eval", "--no-progress", "--env-file", "local.env", "--cache-dir", "cache", "-o", "cli/r.json", "-o", "cli/r.xml", "-o", "cli/r.csv")
    result = run_cli_process(*args, cwd=tmp_path)
    assert result.code == 1, result.err
    assert f"extra={ENV_FILE_SECRET}" in json.dumps([r.json for r in model.requests]), "the env file value was used"
    secrets = {**PLANTED, "--env-file value under an innocuous name": ENV_FILE_SECRET}
    del secrets["the action's github-token"]
    texts = {"stdout": result.out, "stderr": result.err, **written(tmp_path, "promptfooconfig.yaml", "local.env")}
    assert {"cli/r.json", "cli/r.xml", "cli/r.csv"} <= set(texts)
    assert any(name.startswith("cache/") for name in texts)
    assert leaks(texts, secrets) == []


def test_a_cached_reply_that_echoes_a_key_is_stored_masked(tmp_path: Path, openai_env: LLMServer) -> None:
    """The cache is written redacted: a reply quoting the key is kept as ***, and served as such."""
    key = "sk-test-0123456789"  # openai_env's OPENAI_API_KEY
    openai_env.on_chat("key", f"your key is {key}")
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['what is my key?']\nproviders: [openai:chat:gpt-4.1-mini]\ntests: [{vars: {}}]\n")
    for _ in range(2):
        assert run_cli("eval", "--no-progress", "--cache-dir", "cache", "-o", "out.json", cwd=tmp_path).code == 0
    (entry,) = (tmp_path / "cache").rglob("*.json")
    stored = entry.read_text()
    assert key not in stored and "your key is ***" in stored
    assert len(openai_env.requests) == 1, "the second run was served from the cache"
    (row,) = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    assert row["response"]["output"] == "your key is ***" and row["response"]["cached"] is True


@pytest.mark.parametrize(
    ("values", "learned"),
    [
        ({"TEAM": "platform", "GREETING": "from config", "RETRIES": "3", "VERBOSE": "true", "RATE": "0.25"}, set()),
        ({"DB_PASSWORD": "platform"}, {"platform"}),  # a secret name masks even a plain word
        ({"MODEL": "gpt-4.1-mini", "SEED": "Xk29pq", "URL": "https://hooks.example/T0/B0/xyzXYZ"}, {"gpt-4.1-mini", "Xk29pq", "https://hooks.example/T0/B0/xyzXYZ"}),
        ({"ANY": "short"}, set()),  # under 6 characters: never a secret
    ],
)
def test_which_env_values_are_learned(values: dict[str, str], learned: set[str]) -> None:
    redactor = Redactor()
    heard: list[str] = []
    redactor.listen(heard.append)
    redactor.learn_values(values)
    assert set(heard) == learned
    for value in values.values():
        assert redactor.text(f"<{value}>") == ("<***>" if value in learned else f"<{value}>")


def test_secret_names_and_common_values() -> None:
    assert all(is_secret_env_name(n) for n in ("HF_KEY", "DB_PASS", "GH_PAT", "SENTRY_DSN", "OPENAI_API_KEY", "MY_TOKEN", "KEY"))
    assert not any(is_secret_env_name(n) for n in ("MONKEY", "KEYBOARD", "PASSAGE", "TEAM", "HOME", "PWD", "OLDPWD", "PATH", "XAUTHORITY"))
    assert all(is_common_value(v) for v in ("42", "-1.5e3", "TRUE", "off", "platform", "eu west"))
    assert not any(is_common_value(v) for v in ("Platform", "hunter2", "a-b", "gpt-4o"))


def test_credentials_in_provider_config_are_learned() -> None:
    redactor = Redactor()
    config = {
        "providers": [{"id": "https://api.example", "config": {
            "headers": {"X-Custom-Auth": "cust0m-auth", "Proxy-Authorization": "Basic dXNlcjpwYXNz", "Cookie": "sid=abcdef12", "Accept": "application/json"},
            "subscriptionKey": "{{ env.SUB }}", "apiKeyEnvar": "VENDOR_CRED", "maxTokens": 4096, "model": "big-model-v2",
        }}],
        "prompts": [{"raw": "x", "label": "x", "key": "prompts[0]"}],
    }
    redactor.collect(config, {"SUB": "sub-value-9", "VENDOR_CRED": "vendor-cred-7"})
    text = "cust0m-auth dXNlcjpwYXNz sid=abcdef12 sub-value-9 vendor-cred-7 | application/json big-model-v2 prompts[0] 4096"
    assert redactor.text(text) == "*** *** *** *** *** | application/json big-model-v2 prompts[0] 4096"


def test_a_secret_split_by_invisible_characters_stays_masked_in_reports(tmp_path: Path) -> None:
    # The Markdown report drops zero-width and control characters; that must not join a secret
    # that a model's output (here: the echo of a variable) wrote with one inside it.
    secret = "sk-planted-SPLIT-0123456789"
    write(tmp_path / "promptfooconfig.yaml", f"""
        prompts: ['{{{{q}}}}']
        providers: [echo]
        tests:
          - vars: {{q: "token {secret[:10]}\\u200b{secret[10:]} end"}}
            assert: [{{type: equals, value: nope}}]
          - vars: {{q: "token {secret[:10]}\\0{secret[10:]} end"}}
            assert: [{{type: equals, value: nope}}]
        """)
    result = run_cli_process("eval", "--no-progress", "--baseline", "missing.json", "-o", "r.md", "-o", "r.json", "-o", "r.xml", cwd=tmp_path, env={"SERVICE_TOKEN": secret})
    assert result.code == 1, result.err
    texts = {"stdout": result.out, "stderr": result.err, **written(tmp_path, "promptfooconfig.yaml")}
    assert set(texts) >= {"r.md", "r.json", "r.xml"} and leaks(texts, {"split secret": secret}) == []


# Credentials under names that do not look secret, and a secret (learned by its name) that a
# grader's JSON reply quotes, so the results JSON holds it escaped twice (JSON inside JSON).
SHAPED = {
    "DEPLOY": "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "SESSION_JWT": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJkZXBsb3kiLCJpYXQiOjE3MDAwMDAwMDB9.c2lnbmF0dXJlLW9mLXRoZS1zZXNzaW9u",
    "CLOUD_LOGIN": "AKIA" + "Q3EGRUVOYKZ4NB7P",
    "CLOUD_SIGNING": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY",
    "RELEASE_NOTE_FEED": "github_pat_11ABCDEFG0" + "aBcDeFgHiJkLmN_oPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
}
QUOTED_PASSWORD = 'Pa"ss\\wörd/<1>'
SHAPED_CONFIG = """
prompts: ['deploy={{ env.DEPLOY }} jwt={{ env.SESSION_JWT }} id={{ env.CLOUD_LOGIN }} key={{ env.CLOUD_SIGNING }} feed={{ env.RELEASE_NOTE_FEED }} pass={{ env.SERVICE_PASSWORD }} q={{ q }}']
providers: [echo]
tests:
  - description: a grader quotes what it saw
    vars: {q: hello}
    assert:
      - {type: model-graded-closedqa, value: reveals no credential}
      - {type: contains, value: never-there}
"""


def _quoting_grader(request: dict[str, object]) -> str:
    """A grader whose JSON reply quotes every credential, written as Python's json writes it (\\u escapes)."""
    quoted = {"password": QUOTED_PASSWORD, **{name.lower(): value for name, value in SHAPED.items()}}
    return json.dumps({"quoted": quoted}) + "\nN"


def _decoded(value: object) -> Iterator[str]:
    """Every string in JSON `value`, and in JSON written inside those strings, decoded."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _decoded(item)
    elif isinstance(value, list):
        for item in value:
            yield from _decoded(item)
    elif isinstance(value, str):
        yield value
        decoder = json.JSONDecoder()
        for start in (i for i, char in enumerate(value) if char in "{["):
            try:
                inner, _ = decoder.raw_decode(value, start)
            except ValueError:
                continue
            yield from _decoded(inner)


def _shaped_leaks(texts: dict[str, str]) -> list[str]:
    secrets = {**SHAPED, "SERVICE_PASSWORD": QUOTED_PASSWORD}
    found = leaks(texts, secrets)
    nested = {s: {json.dumps(json.dumps(s, ensure_ascii=a)[1:-1], ensure_ascii=a)[1:-1] for a in (True, False)} for s in secrets.values()}
    found += [f"{name} nested in {where}" for where, text in texts.items() for name, secret in secrets.items() for spelling in nested[secret] if spelling in text]
    for where, text in texts.items():
        if where.endswith(".json"):
            found += [f"{name} decoded from {where}" for text_ in _decoded(json.loads(text)) for name, secret in secrets.items() if secret in text_]
    return found


def test_credentials_under_innocent_names_and_a_grader_quoting_a_secret_reach_no_output_of_eval(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, _quoting_grader)
    write(tmp_path / "promptfooconfig.yaml", SHAPED_CONFIG)
    env = {**SHAPED, "SERVICE_PASSWORD": QUOTED_PASSWORD}
    result = run_cli_process("eval", "--no-progress", "--baseline", "none.json", "-o", "r.json", "-o", "r.xml", "-o", "r.md", "--cache-dir", "cache", cwd=tmp_path, env=env)
    assert result.code == 1, result.err
    (grading,) = openai_env.requests_to("/v1/chat/completions")
    assert SHAPED["DEPLOY"] in json.dumps(grading.json) and SHAPED["CLOUD_SIGNING"] in json.dumps(grading.json), "the grader saw them: the run was real"
    (row,) = json.loads((tmp_path / "r.json").read_text())["results"]["results"]
    (reply,) = [c["metadata"]["graderReply"] for c in row["gradingResult"]["componentResults"] if "graderReply" in c.get("metadata", {})]
    quoted, _ = json.JSONDecoder().raw_decode(reply)
    assert quoted == {"quoted": {"password": "***", **{name.lower(): "***" for name in SHAPED}}}
    texts = {"stdout": result.out, "stderr": result.err, **written(tmp_path, "promptfooconfig.yaml")}
    assert {"r.json", "r.xml", "r.md"} <= set(texts)
    assert _shaped_leaks(texts) == []


def test_credentials_under_innocent_names_reach_no_comment_summary_or_output_of_the_action(tmp_path: Path, openai_env: LLMServer) -> None:
    from tests.test_action_e2e import TOKEN as RUNNER_TOKEN
    from tests.test_action_e2e import run_action

    openai_env.on_chat(None, _quoting_grader)
    ws = tmp_path / "workspace"
    write(ws / "evals" / "promptfooconfig.yaml", SHAPED_CONFIG)
    with GitHubServer(token=RUNNER_TOKEN, repository="octo/demo") as github:
        run = run_action(ws, github, baseline="", process=True, env_extra={**SHAPED, "SERVICE_PASSWORD": QUOTED_PASSWORD, "OPENAI_API_KEY": "sk-test-0123456789", "OPENAI_BASE_URL": openai_env.openai_base_url})
        assert run.code == 1, run.result.err
        (comment,) = github.comments[7]
    assert "a grader quotes what it saw" in comment["body"]
    log = "\n".join(line for line in run.result.out.splitlines() if not line.startswith("::add-mask::"))
    texts = {"stdout": log, "stderr": run.result.err, "summary": run.summary, "outputs": json.dumps(run.outputs), "comment": comment["body"], **written(ws / "evals", "promptfooconfig.yaml")}
    assert _shaped_leaks(texts) == []
