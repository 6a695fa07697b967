"""Image and speech generation providers (`xai:image:`, `hyperbolic:image:`, `hyperbolic:audio:`,
`replicate:image:`, `fal:image:`, `google:image:`) against loopback stand-ins of their APIs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows, make
from tests.servers import media_servers, replicate_server
from tests.servers.counting_server import CountingServer
from tests.servers.google_server import ServiceAccount
from tests.servers.llm_server import Response
from tests.servers.media_servers import MP3_B64, PNG_B64

XAI_KEY = "xai-imagekey1234567890ABCDEFabcdef1234567890"
HYPERBOLIC_KEY = "hyperbolic-secret-5151"
REPLICATE_KEY = "r8_image_secret_Abc123Def456Ghi789Jkl0"
FAL_KEY = "fal-key-id:fal-secret-9898"
GOOGLE_KEY = "AIzaImagenTestKey-0123456789abcdefghijk"
SDXL = "stability-ai/sdxl"
SDXL_VERSION = "7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc"
LONG_PROMPT = "A [red] apple on a table,\nprofessional product photography, soft lighting and more words"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("XAI_API_KEY", XAI_KEY)
        monkeypatch.setenv("XAI_API_BASE_URL", f"{srv.url}/v1")
        monkeypatch.setenv("HYPERBOLIC_API_KEY", HYPERBOLIC_KEY)
        monkeypatch.setenv("REPLICATE_API_TOKEN", REPLICATE_KEY)
        monkeypatch.setenv("REPLICATE_BASE_URL", srv.url)
        monkeypatch.setenv("REPLICATE_POLL_INTERVAL", "0.01")
        monkeypatch.setenv("FAL_KEY", FAL_KEY)
        monkeypatch.setenv("FAL_QUEUE_RUN_HOST", srv.url)
        monkeypatch.setenv("FAL_POLL_INTERVAL", "0.01")
        monkeypatch.setenv("GOOGLE_API_KEY", GOOGLE_KEY)
        monkeypatch.setenv("GOOGLE_API_BASE_URL", srv.url)
        yield srv


ALT = "A (red) apple on a table, professional product ..."  # promptfoo's alt text: one line, brackets round, 50 characters


def test_xai_image_generation_as_promptfoo_sends_and_shows_it(server: CountingServer) -> None:
    media_servers.install_xai_images(server, XAI_KEY)
    response = call({"id": "xai:image:grok-image", "config": {"aspect_ratio": "16:9"}}, LONG_PROMPT)
    assert response.error is None and response.output == f"![{ALT}](https://imgen.x.ai/xai-imgen/tmp-0.jpeg)"
    assert response.cost == pytest.approx(0.07)
    (sent,) = server.requests_to("/v1/images/generations")
    assert sent.headers.get("Authorization") == f"Bearer {XAI_KEY}"
    assert sent.json == {"model": "grok-2-image", "prompt": LONG_PROMPT, "n": 1, "response_format": "url", "aspect_ratio": "16:9"}


def test_xai_base64_images_reported_cost_and_edits(server: CountingServer) -> None:
    media_servers.install_xai_images(server, XAI_KEY, usage={"cost_in_usd_ticks": 200_000_000})
    response = call({"id": "xai:image:grok-imagine-image", "config": {"response_format": "b64_json", "n": 2}}, "a cat")
    assert response.output == f"data:image/png;base64,{PNG_B64}" and response.cost == pytest.approx(0.02)
    edit = call({"id": "xai:image:grok-imagine-image", "config": {"image": {"url": "https://example.test/cat.png"}}}, "make it blue")
    assert edit.error is None and edit.output.startswith("![make it blue](")
    (sent,) = server.requests_to("/v1/images/edits")
    assert sent.json["image"] == {"url": "https://example.test/cat.png"} and sent.json["model"] == "grok-imagine-image"


def test_xai_image_429_is_retried_and_a_wrong_key_is_an_error(server: CountingServer) -> None:
    media_servers.install_xai_images(server, XAI_KEY)
    server.fail(429, path="/v1/images/generations", retry_after="0")
    assert call("xai:image:grok-2-image", "a cat").error is None
    assert len(server.requests_to("/v1/images/generations")) == 2
    wrong = call({"id": "xai:image:grok-2-image", "config": {"apiKey": "xai-wrong"}}, "a cat")
    assert wrong.error is not None and "401" in wrong.error and "Incorrect API key" in wrong.error


def test_hyperbolic_image_body_alias_data_url_and_cost(server: CountingServer) -> None:
    media_servers.install_hyperbolic(server, HYPERBOLIC_KEY)
    config = {"apiBaseUrl": f"{server.url}/v1", "width": 512, "steps": 30, "cfg_scale": 7.0, "negative_prompt": ""}
    response = call({"id": "hyperbolic:image:sdxl", "config": config}, "a cat")
    assert response.error is None and response.output == f"data:image/png;base64,{PNG_B64}" and response.cost == pytest.approx(0.01)
    (sent,) = server.requests_to("/v1/image/generation")
    assert sent.headers.get("Authorization") == f"Bearer {HYPERBOLIC_KEY}"
    assert sent.json == {"model_name": "SDXL1.0-base", "prompt": "a cat", "height": 1024, "width": 512, "backend": "auto", "steps": 30, "cfg_scale": 7.0}
    as_json = call({"id": "hyperbolic:image:Flux.1-dev", "config": {"apiBaseUrl": f"{server.url}/v1", "response_format": "b64_json"}}, "a dog")
    assert json.loads(as_json.output) == {"data": [{"b64_json": PNG_B64}]} and as_json.cost == pytest.approx(0.025)


def test_hyperbolic_audio_body_output_and_cost(server: CountingServer) -> None:
    media_servers.install_hyperbolic(server, HYPERBOLIC_KEY)
    config = {"apiBaseUrl": f"{server.url}/v1", "voice": "alloy", "speed": 1.0}
    text = "x" * 2000
    response = call({"id": "hyperbolic:audio:Melo-TTS", "config": config}, text)
    assert response.error is None and response.output == MP3_B64
    assert response.cost == pytest.approx(0.002)  # $0.001 per 1,000 characters away from Hyperbolic's own endpoint
    (sent,) = server.requests_to("/v1/audio/generation")
    assert sent.json == {"text": text, "voice": "alloy", "speed": 1.0}
    at_hyperbolic = make({"id": "hyperbolic:audio:Melo-TTS", "config": {"voice": "alloy", "speed": 1.0, "language": "EN"}})
    assert at_hyperbolic.body("hi") == {"text": "hi", "speed": 1.0, "language": "EN"}  # type: ignore[attr-defined]


def test_hyperbolic_errors_are_error_rows(server: CountingServer) -> None:
    media_servers.install_hyperbolic(server, HYPERBOLIC_KEY)
    wrong = call({"id": "hyperbolic:image:SD2", "config": {"apiBaseUrl": f"{server.url}/v1", "apiKey": "nope"}}, "a cat")
    assert wrong.error is not None and "401" in wrong.error and "Invalid API key" in wrong.error


def test_replicate_image_prediction_input_version_and_markdown(server: CountingServer) -> None:
    replicate_server.install(server, REPLICATE_KEY, SDXL, lambda inp: [f"https://replicate.delivery/{inp['width']}x{inp['height']}.png"], polls=2, version=SDXL_VERSION)
    response = call({"id": f"replicate:image:{SDXL}:{SDXL_VERSION}", "config": {"num_inference_steps": 25, "apiKeyEnvar": "REPLICATE_API_TOKEN"}}, LONG_PROMPT)
    assert response.error is None and response.output == f"![{ALT}](https://replicate.delivery/768x768.png)"
    (create,) = server.requests_to("/v1/predictions")
    assert create.headers.get("Authorization") == f"Bearer {REPLICATE_KEY}"
    assert create.json == {"version": SDXL_VERSION, "input": {"prompt": LONG_PROMPT, "width": 768, "height": 768, "num_inference_steps": 25}}
    assert len(server.requests_to("/v1/predictions/pred1")) == 2


def test_replicate_image_failed_prediction_is_an_error(server: CountingServer) -> None:
    replicate_server.install(server, REPLICATE_KEY, "black-forest-labs/flux-dev", lambda inp: replicate_server.problem(422, "width must be <= 1440"))
    response = call({"id": "replicate:image:black-forest-labs/flux-dev", "config": {"width": 4096}}, "a cat")
    assert response.error is not None and "422" in response.error and "width must be" in response.error


def test_fal_queue_is_polled_and_the_image_shown_as_markdown(server: CountingServer) -> None:
    inputs = media_servers.install_fal(server, FAL_KEY, "fal-ai/flux/schnell", lambda inp: {"images": [{"url": "https://v3.fal.media/files/cat.jpg"}], "seed": 42}, queued=2)
    response = call({"id": "fal:image:fal-ai/flux/schnell", "config": {"seed": 42, "num_inference_steps": 4}}, LONG_PROMPT)
    assert response.error is None and response.output == f"![{ALT}](https://v3.fal.media/files/cat.jpg)"
    assert inputs == [{"prompt": LONG_PROMPT, "seed": 42, "num_inference_steps": 4}]
    assert len(server.requests_to("/fal-ai/flux/requests/req-1/status")) == 3
    assert server.requests_to("/fal-ai/flux/schnell")[0].headers.get("Authorization") == f"Key {FAL_KEY}"


def test_fal_single_image_results_failures_and_retries(server: CountingServer) -> None:
    def result(inp: dict) -> dict:
        if "forbidden" in inp["prompt"]:
            raise ValueError("content policy violation")
        return {"image": {"url": "https://v3.fal.media/files/one.png"}}

    media_servers.install_fal(server, FAL_KEY, "fal-ai/recraft-v3", result, queued=0)
    server.fail(503, path="/fal-ai/recraft-v3")
    assert call("fal:image:fal-ai/recraft-v3", "a cat").output == "![a cat](https://v3.fal.media/files/one.png)"
    assert len(server.requests_to("/fal-ai/recraft-v3")) == 2
    failed = call("fal:image:fal-ai/recraft-v3", "forbidden thing")
    assert failed.error is not None and "content policy violation" in failed.error


def test_imagen_on_the_gemini_api(server: CountingServer) -> None:
    media_servers.install_imagen(server, GOOGLE_KEY, "imagen-3.0-generate-002")
    config = {"aspectRatio": "16:9", "safetyFilterLevel": "block_some", "n": 2}
    response = call({"id": "google:image:3.0-generate-002", "config": config}, "  a cat  ")
    assert response.error is None and response.output == f"data:image/png;base64,{PNG_B64}" and response.cost == pytest.approx(0.08)
    (sent,) = server.requests_to("/v1beta/models/imagen-3.0-generate-002:predict")
    assert sent.headers.get("x-goog-api-key") == GOOGLE_KEY
    assert sent.json["instances"] == [{"prompt": "a cat"}]
    assert sent.json["parameters"] == {"sampleCount": 2, "aspectRatio": "16:9", "personGeneration": "allow_all", "safetySetting": "block_low_and_above"}


def test_imagen_filtered_prompt_is_an_error_naming_the_reason(server: CountingServer) -> None:
    media_servers.install_imagen(server, GOOGLE_KEY, "imagen-4.0-generate-001", images=0)
    response = call("google:image:imagen-4.0-generate-001", "something")
    assert response.error is not None and "No valid images generated" in response.error and "violate our policies" in response.error and response.is_refusal


def test_imagen_error_in_a_successful_reply_is_the_rows_error(server: CountingServer) -> None:
    server.route("POST", "/v1beta/models/imagen-4.0-generate-001:predict", lambda r: Response(200, json={"error": {"code": 429, "message": "Quota exceeded for imagen"}}))
    response = call("google:image:imagen-4.0-generate-001", "a cat")
    assert response.error == "Quota exceeded for imagen" and response.output is None


def test_imagen_on_vertex_when_a_project_is_named(server: CountingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    account = ServiceAccount.write(tmp_path, server)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(account.path))
    monkeypatch.setenv("VERTEX_API_HOST", server.url)
    media_servers.install_vertex_imagen(server, account, "imagen-4.0-generate-001")
    config = {"projectId": account.project, "seed": 42, "addWatermark": False, "safetyFilterLevel": "block_fewest"}
    response = call({"id": "google:image:imagen-4.0-generate-001", "config": config}, "a cat")
    assert response.error is None and response.output.startswith("data:image/png;base64,") and response.cost == pytest.approx(0.04)
    (sent,) = server.requests_to(f"/v1/projects/{account.project}/locations/us-central1/publishers/google/models/imagen-4.0-generate-001:predict")
    assert sent.json["parameters"] == {"sampleCount": 1, "aspectRatio": "1:1", "personGeneration": "allow_all", "safetySetting": "block_fewest",
                                       "addWatermark": False, "seed": 42}


def test_imagen_without_key_or_project_says_what_to_set(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY")
    response = call("google:image:imagen-4.0-generate-001", "a cat")
    assert response.error is not None and "GOOGLE_API_KEY" in response.error and "projectId" in response.error


@pytest.mark.parametrize(("provider_id", "why"), [
    ("fal:video:fal-ai/kling", "fal:image:<model name>"),
    ("fal:image:", "name a model"),
    ("xai:image:", "name a model"),
    ("replicate:image:", "name a model"),
])
def test_ids_these_families_cannot_run_are_refused_before_any_call(tmp_path: Path, provider_id: str, why: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"prompts: [a cat]\nproviders: ['{provider_id}']\ntests: [{{vars: {{}}}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and why in result.err and "Traceback" not in result.err


def test_eval_every_image_and_audio_family_with_promptfoo_example_assertions(server: CountingServer, tmp_path: Path) -> None:
    media_servers.install_xai_images(server, XAI_KEY)
    media_servers.install_hyperbolic(server, HYPERBOLIC_KEY)
    replicate_server.install(server, REPLICATE_KEY, SDXL, lambda inp: ["https://replicate.delivery/out.png"], version=SDXL_VERSION)
    media_servers.install_fal(server, FAL_KEY, "fal-ai/flux/dev", lambda inp: {"images": [{"url": "https://v3.fal.media/files/dev.jpg"}]})
    media_servers.install_imagen(server, GOOGLE_KEY, "imagen-4.0-fast-generate-preview-06-06")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{subject}}}}']
        providers:
          - xai:image:grok-2-image
          - id: hyperbolic:image:SDXL1.0-base
            config: {{apiBaseUrl: {server.url}/v1, steps: 30}}
          - id: replicate:image:{SDXL}:{SDXL_VERSION}
            config: {{width: 512, height: 512}}
          - id: fal:image:fal-ai/flux/dev
            config: {{seed: 42, image_size: landscape_4_3}}
          - google:image:imagen-4.0-fast-generate-preview-06-06
          - id: hyperbolic:audio:Melo-TTS
            config: {{apiBaseUrl: {server.url}/v1}}
        tests:
          - vars: {{subject: a lighthouse at dusk}}
            assert:
              - type: javascript
                value: "output.includes('![') && output.includes('](http') || /^data:image\\\\/(png|jpeg);base64,/.test(output) || output.startsWith('SUQz')"
        """,
    )
    assert code == 0 and len(rows) == 6, [r.get("error") or r["gradingResult"]["reason"] for r in rows]
    outputs = [r["response"]["output"] for r in rows]
    assert outputs == [
        "![a lighthouse at dusk](https://imgen.x.ai/xai-imgen/tmp-0.jpeg)",
        f"data:image/png;base64,{PNG_B64}",
        "![a lighthouse at dusk](https://replicate.delivery/out.png)",
        "![a lighthouse at dusk](https://v3.fal.media/files/dev.jpg)",
        f"data:image/png;base64,{PNG_B64}",
        MP3_B64,
    ]
    assert [r["cost"] for r in rows] == pytest.approx([0.07, 0.01, 0, 0, 0.02, 0.001 * len("a lighthouse at dusk") / 1000], abs=1e-9)
    written = (tmp_path / "out.json").read_text()
    for secret in (XAI_KEY, HYPERBOLIC_KEY, REPLICATE_KEY, FAL_KEY, GOOGLE_KEY, "fal-secret-9898"):
        assert secret not in written


OPENAI_KEY = "sk-images-0123456789abcdef"


@pytest.fixture
def openai_images(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> CountingServer:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    media_servers.install_openai_images(server, OPENAI_KEY)
    return server


def test_openai_dalle_3_answers_with_a_markdown_image_priced_by_quality_and_size(openai_images: CountingServer) -> None:
    response = call({"id": "openai:image:dall-e-3", "config": {"size": "1792x1024", "quality": "hd", "style": "vivid"}}, "a [red] fox")
    assert response.error is None
    assert response.output == "![a (red) fox](https://oaidalleapiprodscus.blob.core.windows.net/private/img-0.png)"
    assert response.cost == pytest.approx(0.12)
    (sent,) = openai_images.requests_to("/v1/images/generations")
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert sent.json == {"model": "dall-e-3", "prompt": "a [red] fox", "n": 1, "size": "1792x1024", "response_format": "url", "quality": "hd", "style": "vivid"}


def test_openai_dalle_2_base64_and_gpt_image_as_data_urls(openai_images: CountingServer) -> None:
    dalle = call({"id": "openai:image:dall-e-2", "config": {"size": "512x512", "response_format": "b64_json", "n": 2}}, "a cat")
    assert dalle.output == f"data:image/png;base64,{PNG_B64}" and dalle.cost == pytest.approx(0.036)
    gpt = call({"id": "openai:image:gpt-image-1", "config": {"quality": "medium", "size": "1024x1536", "output_format": "webp"}}, "a cat")
    assert gpt.error is None and gpt.output == f"data:image/webp;base64,{PNG_B64}" and gpt.cost == pytest.approx(0.063)
    sent = openai_images.requests_to("/v1/images/generations")[-1].json
    assert "response_format" not in sent and (sent["quality"], sent["output_format"]) == ("medium", "webp")


@pytest.mark.parametrize(("config", "why"), [
    ({"size": "512x512"}, "size '512x512' is not one dall-e-3 makes"),
    ({"n": 2}, "n must be 1 for DALL-E 3"),
    ({"mask": "https://example.com/mask.png"}, "text only"),
])
def test_openai_image_settings_the_model_does_not_take_exit_2_before_any_call(tmp_path: Path, openai_images: CountingServer, config: dict, why: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"prompts: [a cat]\nproviders: [{{id: 'openai:image:dall-e-3', config: {json.dumps(config)}}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and why in result.err and "promptfooconfig.yaml:2" in result.err
    assert openai_images.requests == []


def test_eval_compares_dalle_2_and_3_as_promptfoos_example_does(tmp_path: Path, openai_images: CountingServer) -> None:
    code, rows = eval_rows(tmp_path, """
        prompts: ['In the style of {{artist}}: {{subject}}']
        providers:
          - {id: 'openai:image:dall-e-3', config: {size: 1024x1024}}
          - {id: 'openai:image:dall-e-2', config: {size: 512x512}}
        tests:
          - vars: {artist: Van Gogh, subject: sunset over mountains}
            assert: [{type: javascript, value: "output.startsWith('![In the style of Van Gogh')"}]
        """)
    assert code == 0 and [r["cost"] for r in rows] == [pytest.approx(0.04), pytest.approx(0.018)]
