"""The environment the Actions runner gives a Docker action, for tests that start `ci-grade action` themselves."""

from __future__ import annotations

import json
from pathlib import Path

from tests.servers.github_server import GitHubServer
from tests.servers.llm_server import LLMServer
from tests.test_action_e2e import TOKEN

__all__ = ["TOKEN", "model_env", "runner_env"]


def model_env(server: LLMServer) -> dict[str, str]:
    """Point OpenAI providers and default graders at the loopback server."""
    return {"OPENAI_API_KEY": "sk-test-0123456789", "OPENAI_BASE_URL": server.openai_base_url}


def runner_env(workspace: Path, step: Path, gh: GitHubServer, **inputs: str) -> dict[str, str]:
    """GITHUB_* variables for pull request 7, output and summary files in `step`, INPUT_* as the runner spells them."""
    step.mkdir(parents=True, exist_ok=True)
    (step / "event.json").write_text(json.dumps({"number": 7, "pull_request": {"number": 7}, "repository": {"full_name": "octo/demo"}}))
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(step / "event.json"),
        "GITHUB_REPOSITORY": "octo/demo",
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(step / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(step / "summary.md"),
        "GITHUB_TOKEN": TOKEN,
        "INPUT_CONFIG": "promptfooconfig.yaml",
        "INPUT_WORKING-DIRECTORY": "evals",
        "INPUT_COMMENT": "on",
        **{f"INPUT_{name.upper().replace('_', '-')}": value for name, value in inputs.items()},
    }
