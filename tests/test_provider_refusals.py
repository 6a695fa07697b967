"""Ids a known family cannot serve exit 2 before any model is called, naming the id and where the
supported providers are listed; the secrets of the Cohere, Voyage, Replicate and watsonx families are masked."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_grade import redact
from tests.conftest import run_cli, write


@pytest.mark.parametrize(
    ("provider_id", "why"),
    [
        ("google:live:", "name a model"),
        ("google:video:veo-3.0-generate-001", "video API is not supported"),
        ("vertex:chat-bison", "model-as-a-service"),
        ("replicate:image:", "name a model"),
        ("cohere:embedding:", "name a model"),
        ("watsonx:chat:", "name a model"),
        ("voyage:", "name a model"),
        ("bedrock:nova-sonic:amazon.nova-sonic-v1:0", "Nova Sonic"),
        ("azure:foundry-agent:", "name the agent"),
        ("bedrock:video:amazon.nova-reel-v1:0", "video generation"),
        ("bedrock:mantle:openai.gpt-oss-120b", "Mantle"),
        ("bedrock:openai.gpt-5.5", "Responses API"),
        ("bedrock:foo.bar-v1", "use bedrock:converse:foo.bar-v1"),
        ("bedrock:converse:", "name a model"),
        ("sagemaker:bogus:my-endpoint", "invalid model type 'bogus'"),
        ("sagemaker:", "name the endpoint"),
    ],
)
def test_an_id_its_family_cannot_serve_exits_2_before_any_call(tmp_path: Path, provider_id: str, why: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"prompts: [hi]\nproviders:\n  - echo\n  - '{provider_id}'\ntests: [{{vars: {{}}}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2, result.err
    assert provider_id in result.err and why in result.err and "docs/providers.md" in result.err
    assert "promptfooconfig.yaml:4" in result.err and "Traceback" not in result.err


def test_the_unknown_provider_message_points_at_the_list_that_holds_the_new_families(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders: [nosuch:model]\ntests: [{vars: {}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "docs/providers.md" in result.err
    listed = (Path(__file__).resolve().parent.parent / "docs" / "providers.md").read_text(encoding="utf-8")
    assert all(f"`{name}:" in listed for name in ("cohere", "voyage", "replicate", "watsonx"))


@pytest.mark.parametrize(
    "name",
    ["COHERE_API_KEY", "CO_API_KEY", "VOYAGE_API_KEY", "REPLICATE_API_TOKEN", "REPLICATE_API_KEY", "WATSONX_AI_APIKEY", "WATSONX_AI_BEARER_TOKEN"],
)
def test_the_families_key_variables_are_secret(name: str) -> None:
    assert redact.is_secret_env_name(name)


def test_watsonx_config_credentials_are_learned_and_their_variable_names_are_not() -> None:
    assert redact.is_auth_key("apiBearerToken") and redact.is_auth_key("apiKey")
    assert not redact.is_auth_key("apiBearerTokenEnvar") and not redact.is_auth_key("projectIdEnvar")
