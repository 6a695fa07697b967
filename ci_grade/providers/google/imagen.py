"""Imagen, `google:image:<model>`: its `:predict` endpoint on the Gemini API or Vertex AI, over httpx.

Read from promptfoo 0.123.1 (`src/providers/google/image.ts`): Vertex AI when `config.projectId`,
GOOGLE_CLOUD_PROJECT or GOOGLE_PROJECT_ID is set (Application Default Credentials, region and
endpoint as for `vertex:`, see `auth`), else the Gemini API with its key (`config.apiKey`,
GOOGLE_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY, GEMINI_API_KEY; endpoint as for `google:`). A model
name without the `imagen-` prefix gets it. The body is `instances: [{prompt}]` (the prompt
trimmed) and `parameters`: `sampleCount` `config.n` (default 1), `aspectRatio` (default `1:1`),
`personGeneration` (default `allow_all`) and `safetySetting`: always `block_low_and_above` on the
Gemini API (the only level it takes), `config.safetyFilterLevel` (default `block_some`) on Vertex,
which also gets `addWatermark` (unless false) and `seed` (only with `addWatermark: false`).
`config.headers` are sent too. The output is the first image as a `data:` URL; cost is promptfoo's
per-image price ($0.04 for a model it does not list) times the images returned.

`google-genai`'s `generate_images` is not used: the SDK serves it on Vertex AI only, and marks it
deprecated there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.base import CallContext, ModelProvider, ProviderResponse
from ci_grade.providers.google import endpoint
from ci_grade.providers.google.auth import VertexAuthed
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.providers.media import data_url

COSTS = {
    "imagen-4.0-ultra-generate-001": 0.06, "imagen-4.0-generate-001": 0.04, "imagen-4.0-fast-generate-001": 0.02,
    "imagen-4.0-ultra-generate-preview-06-06": 0.06, "imagen-4.0-generate-preview-06-06": 0.04,
    "imagen-4.0-fast-generate-preview-06-06": 0.02, "imagen-3.0-generate-002": 0.04, "imagen-3.0-generate-001": 0.04,
    "imagen-3.0-fast-generate-001": 0.02,
}
DEFAULT_COST = 0.04
NO_BACKEND = (
    "Imagen models require either:\n1. Google AI Studio: Set GOOGLE_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY, or GEMINI_API_KEY "
    "environment variable\n2. Vertex AI: Set GOOGLE_CLOUD_PROJECT environment variable or provide projectId in config, and run "
    '"gcloud auth application-default login"'
)


class ImagenProvider(VertexAuthed, ModelProvider, HttpApiProvider):
    key_names = ("GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY")

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None):
        super().__init__(spec, env, model, max_concurrency)
        self.vertex = bool(spec.config.get("projectId") or env.get("GOOGLE_CLOUD_PROJECT") or env.get("GOOGLE_PROJECT_ID"))

    def describe(self) -> str:
        return f"google:image:{self._model}"

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "vertex": self.vertex}

    def body(self, prompt: str) -> dict[str, Any]:
        config = self.spec.config
        parameters: dict[str, Any] = {
            "sampleCount": config.get("n") or 1,
            "aspectRatio": config.get("aspectRatio") or "1:1",
            "personGeneration": config.get("personGeneration") or "allow_all",
            "safetySetting": "block_low_and_above",
        }
        if self.vertex:
            parameters["safetySetting"] = config.get("safetyFilterLevel") or "block_some"
            parameters["addWatermark"] = config.get("addWatermark") is not False
            if config.get("seed") is not None and config.get("addWatermark") is False:
                parameters["seed"] = config["seed"]
        return {"instances": [{"prompt": prompt.strip()}], "parameters": parameters}

    async def target(self) -> tuple[str, dict[str, str]]:
        """The endpoint and the credential header (a key, or a Vertex access token)."""
        if not self.vertex:
            url = f"{endpoint.base_url(self.spec.config, self.env_value)}/v1beta/models/{self._model}:predict"
            return url, {"x-goog-api-key": self.api_key() or ""}
        auth = self.auth
        url = f"{auth.base_url()}/v1/projects/{auth.project()}/locations/{auth.region()}/publishers/google/models/{self._model}:predict"
        return url, {"Authorization": f"Bearer {await auth.token()}"}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if not prompt:
            return ProviderResponse(error="Prompt is required for image generation")
        if not self.vertex and not self.api_key():
            return ProviderResponse(error=NO_BACKEND)
        headers = {str(k): str(v) for k, v in (self.spec.config.get("headers") or {}).items()}
        try:
            url, credential = await self.target()
            data = await self.post_json(url, self.body(prompt), {**headers, **credential})
        except ProviderError as exc:
            return ProviderResponse(error=f"API call error: {exc}")
        return self.answer(data)

    def answer(self, data: Any) -> ProviderResponse:
        """The reply read as promptfoo reads it: the first image as a data URL, priced per image."""
        if not isinstance(data, dict):
            return ProviderResponse(error="Invalid response from API")
        if data.get("error"):
            error = data["error"]
            return ProviderResponse(error=str(error.get("message") if isinstance(error, dict) else error))
        predictions = [p for p in data.get("predictions") or [] if isinstance(p, dict)]
        images = [(p.get("image") or p) for p in predictions]
        found = [(i["bytesBase64Encoded"], i.get("mimeType") or "image/png") for i in images if isinstance(i, dict) and i.get("bytesBase64Encoded")]
        if not found:
            reasons = [str(p["raiFilteredReason"]) for p in predictions if p.get("raiFilteredReason")]
            if reasons:
                return ProviderResponse(error=f"No valid images generated: {'; '.join(reasons)}", is_refusal=True)
            return ProviderResponse(error="No images generated" if not predictions else "No valid images generated")
        b64, mime = found[0]
        return ProviderResponse(output=data_url(b64, mime), cost=COSTS.get(self._model, DEFAULT_COST) * len(found), metadata={"images": len(found)})


def check_id(provider_id: str) -> str | None:
    return None if provider_id.split(":", 2)[2] else "name a model, e.g. google:image:imagen-4.0-generate-001"


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> ImagenProvider:
    """`google:image:<model>`."""
    model = spec.id.split(":", 2)[2]
    return ImagenProvider(spec, env, model if model.startswith("imagen-") else f"imagen-{model}", max_concurrency)
