"""Hyperbolic's image and speech generation: `hyperbolic:image:<model>` and `hyperbolic:audio:<model>`.

Read from promptfoo 0.123.1 (`src/providers/hyperbolic/image.ts`, `audio.ts`): not the OpenAI
wire format but Hyperbolic's own JSON endpoints, sent over httpx with ci-grade's retries.

- image: `POST {base}/image/generation` with `model_name` (a known alias resolved: `sdxl` is
  `SDXL1.0-base`; `config.model_name` wins), `prompt`, `height`/`width` (default 1024), `backend`
  (default `auto`) and the generation settings the config sets (`steps`, `cfg_scale`, `seed`,
  ...). The output is the first image as a `data:` URL (its type read from its first bytes), or
  `{"data": [{"b64_json": ...}]}` as JSON when `config.response_format` is `b64_json`. Cost: the
  model's per-image price from promptfoo's table, $0.01 for a model it does not list.
- audio: `POST {base}/audio/generation` with `text` and `speed`, `language`, `speaker`,
  `sdp_ratio`, `noise_scale`, `noise_scale_w` when set (`model` and `voice` only to an endpoint
  other than Hyperbolic's, as promptfoo sends them). The output is the base64 audio as the API
  returns it (MP3 from Hyperbolic). Cost: $0.005 per 1,000 prompt characters at Hyperbolic,
  $0.001 elsewhere.

The key is `config.apiKey`, else HYPERBOLIC_API_KEY, sent as a bearer token; the endpoint
`config.apiBaseUrl`, else Hyperbolic's. The model defaults to `SDXL1.0-base` / `Melo-TTS`.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.base import CallContext, ModelProvider, ProviderResponse
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.providers.media import data_url

DEFAULT_BASE_URL = "https://api.hyperbolic.xyz/v1"
# promptfoo's image models: (API name, aliases, USD per image).
IMAGE_MODELS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("Flux.1-dev", ("flux-dev", "flux.1-dev", "FLUX.1-dev"), 0.025),
    ("SDXL1.0-base", ("sdxl", "sdxl-base"), 0.01),
    ("SD1.5", ("stable-diffusion-1.5", "sd-1.5"), 0.005),
    ("SD2", ("stable-diffusion-2", "sd-2"), 0.008),
    ("SSD", ("segmind-sd-1b",), 0.005),
    ("SDXL-turbo", ("sdxl-turbo",), 0.008),
    ("SDXL-ControlNet", ("sdxl-controlnet",), 0.015),
    ("SD1.5-ControlNet", ("sd1.5-controlnet",), 0.008),
)
DEFAULT_IMAGE_COST = 0.01
# Image settings sent when the config sets them (promptfoo sends the strings only when non-empty).
IMAGE_OPTIONS = (
    "prompt_2", "negative_prompt", "negative_prompt_2", "image", "strength", "seed", "cfg_scale", "sampler", "steps",
    "style_preset", "enable_refiner", "controlnet_name", "controlnet_image", "loras",
)
AUDIO_OPTIONS = ("speed", "language", "speaker", "sdp_ratio", "noise_scale", "noise_scale_w")


class HyperbolicMediaProvider(ModelProvider, HttpApiProvider, abc.ABC):
    """Shared: key, endpoint and one POST whose JSON reply must hold `field`."""

    key_names = ("HYPERBOLIC_API_KEY",)
    kind = ""
    endpoint = ""
    field = ""

    def describe(self) -> str:
        return f"hyperbolic:{self.kind}:{self._model}"

    def base_url(self) -> str:
        return str(self.spec.config.get("apiBaseUrl") or DEFAULT_BASE_URL).rstrip("/")

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "url": self.base_url()}

    @abc.abstractmethod
    def body(self, prompt: str) -> dict[str, Any]:
        """The request body for `prompt`."""

    @abc.abstractmethod
    def answer(self, prompt: str, value: Any) -> ProviderResponse:
        """The response for the reply's `field` value."""

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if not self.api_key():
            return ProviderResponse(error="Hyperbolic API key is not set. Set the HYPERBOLIC_API_KEY environment variable or add `apiKey` to the provider config.")
        headers = {"Authorization": f"Bearer {self.api_key()}"}
        try:
            data = await self.post_json(f"{self.base_url()}{self.endpoint}", self.body(prompt), headers)
        except ProviderError as exc:
            return ProviderResponse(error=f"API call error: {exc}")
        if isinstance(data, dict) and data.get("error"):
            error = data["error"]
            return ProviderResponse(error=error if isinstance(error, str) else json.dumps(error))
        return self.answer(prompt, data.get(self.field) if isinstance(data, dict) else None)


class HyperbolicImageProvider(HyperbolicMediaProvider):
    kind = "image"
    endpoint = "/image/generation"
    field = "images"

    def _known(self) -> tuple[str, tuple[str, ...], float] | None:
        return next((row for row in IMAGE_MODELS if self._model == row[0] or self._model in row[1]), None)

    def body(self, prompt: str) -> dict[str, Any]:
        config = self.spec.config
        known = self._known()
        body: dict[str, Any] = {
            "model_name": config.get("model_name") or (known[0] if known else self._model),
            "prompt": prompt,
            "height": config.get("height") or 1024,
            "width": config.get("width") or 1024,
            "backend": config.get("backend") or "auto",
        }
        body.update({key: config[key] for key in IMAGE_OPTIONS if config.get(key) is not None and config.get(key) != ""})
        return body

    def answer(self, prompt: str, value: Any) -> ProviderResponse:
        if not isinstance(value, list) or not value or not isinstance(value[0], dict) or not isinstance(value[0].get("image"), str):
            return ProviderResponse(error="No images returned from API")
        image = value[0]["image"]
        known = self._known()
        cost = known[2] if known else DEFAULT_IMAGE_COST
        if self.spec.config.get("response_format") == "b64_json":
            return ProviderResponse(output=json.dumps({"data": [{"b64_json": image}]}), cost=cost)
        return ProviderResponse(output=data_url(image), cost=cost)


class HyperbolicAudioProvider(HyperbolicMediaProvider):
    kind = "audio"
    endpoint = "/audio/generation"
    field = "audio"

    def at_hyperbolic(self) -> bool:
        return self.base_url() == DEFAULT_BASE_URL

    def body(self, prompt: str) -> dict[str, Any]:
        config = self.spec.config
        body: dict[str, Any] = {"text": prompt}
        if not self.at_hyperbolic():
            body.update({key: config[key] for key in ("model", "voice") if config.get(key)})
        body.update({key: config[key] for key in AUDIO_OPTIONS if config.get(key) is not None and config.get(key) != ""})
        return body

    def answer(self, prompt: str, value: Any) -> ProviderResponse:
        if not isinstance(value, str) or not value:
            return ProviderResponse(error="No audio data returned from API")
        cost = len(prompt) / 1000 * (0.005 if self.at_hyperbolic() else 0.001)
        return ProviderResponse(output=value, cost=cost, metadata={"audio": {"format": "mp3" if self.at_hyperbolic() else "wav"}})


def create_image(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> HyperbolicImageProvider:
    """`hyperbolic:image:<model>` (default SDXL1.0-base)."""
    return HyperbolicImageProvider(spec, env, spec.id.split(":", 2)[2] or "SDXL1.0-base", max_concurrency)


def create_audio(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> HyperbolicAudioProvider:
    """`hyperbolic:audio:<model>` (default Melo-TTS)."""
    return HyperbolicAudioProvider(spec, env, spec.id.split(":", 2)[2] or "Melo-TTS", max_concurrency)
