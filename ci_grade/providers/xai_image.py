"""xAI image generation, `xai:image:<model>`, through the openai SDK's `images.generate`.

Read from promptfoo 0.123.1 (`src/providers/xai/image.ts`): the body is `model` (promptfoo's
names mapped: `grok-image` is `grok-2-image`, `grok-imagine-*` as given, anything else
`grok-2-image`), `prompt`, `n` (default 1), `response_format` (default `url`) and, when set,
`aspect_ratio`, `quality`, `resolution` and `user`. A config with `image`, `images` or `mask`
edits instead: the same JSON body with them, POSTed to `/images/edits`. The output is the first
image: `![<prompt>](<url>)`, or a `data:image/png;base64,...` URL for `b64_json`. Cost is the
reply's `usage.cost_in_usd_ticks` (1e-10 USD each), else promptfoo's per-image prices.

The key is `config.apiKey`, else XAI_API_KEY; the endpoint `config.apiBaseUrl`, else
`https://<config.region>.api.x.ai/v1`, else XAI_API_BASE_URL (read by ci-grade for images too, as
for xAI chat), else xAI's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.http_clients import sdk
from ci_grade.providers.media import data_url, markdown_image
from ci_grade.providers.openai import OpenAIProvider
from ci_grade.providers.openai_replies import present

DEFAULT_BASE_URL = "https://api.x.ai/v1"
MODELS = {
    "grok-imagine-image": "grok-imagine-image", "grok-imagine-image-2026-03-02": "grok-imagine-image",
    "grok-imagine-image-2.0": "grok-imagine-image-2.0", "grok-imagine-image-quality": "grok-imagine-image-quality",
    "grok-imagine-image-quality-latest": "grok-imagine-image-quality", "grok-imagine-image-quality-20260403": "grok-imagine-image-quality",
    "grok-imagine-image-pro": "grok-imagine-image-pro", "grok-2-image": "grok-2-image", "grok-image": "grok-2-image",
}
# grok-imagine-image-2.0's price per image by `<quality>_<resolution>`.
IMAGINE_2_COSTS = {"low_1k": 0.04, "low_2k": 0.06, "medium_1k": 0.06, "medium_2k": 0.08}
OPTIONS = ("aspect_ratio", "quality", "resolution", "image", "images", "mask", "user")


def api_model(name: str) -> str:
    return MODELS.get(name) or (name if name.startswith("grok-imagine-") else "grok-2-image")


def image_cost(model: str, n: int, resolution: str | None, sources: int, quality: str | None, edit: bool) -> float:
    """promptfoo's per-image price for `n` images (and the source images of an edit)."""
    resolution = resolution or "1k"
    tier = model if model in ("grok-imagine-image", "grok-imagine-image-2.0") or not model.startswith("grok-imagine-") else "grok-imagine-image-quality"
    if tier == "grok-imagine-image":
        return 0.02 * n + 0.002 * sources
    if tier == "grok-imagine-image-2.0":
        level = ("medium" if edit else "low") if not quality or quality == "auto" else ("low" if quality == "low" else "medium")
        return IMAGINE_2_COSTS.get(f"{level}_{resolution}", IMAGINE_2_COSTS["medium_2k"]) * n + 0.01 * sources
    if tier == "grok-imagine-image-quality":
        return (0.07 if resolution == "2k" else 0.05) * n + 0.01 * sources
    return 0.07 * n


class XAIImageProvider(OpenAIProvider):
    key_names = ("XAI_API_KEY",)
    price_family = None

    def describe(self) -> str:
        return f"xai:image:{self._model}"

    def base_url(self) -> str:
        config = self.spec.config
        if config.get("apiBaseUrl"):
            return str(config["apiBaseUrl"])
        if config.get("region"):
            return f"https://{config['region']}.api.x.ai/v1"
        return self.env_value("XAI_API_BASE_URL") or DEFAULT_BASE_URL

    def api_key(self) -> str | None:
        return str(self.spec.config["apiKey"]) if self.spec.config.get("apiKey") else self.env_value(*self.key_names)

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if not self.api_key():
            return ProviderResponse(error="xAI API key is not set. Set the XAI_API_KEY environment variable or add `apiKey` to the provider config.")
        config = self.spec.config
        model = api_model(self._model or "")
        response_format = str(config.get("response_format") or "url")
        n = int(config.get("n") or 1)
        extra = {key: config[key] for key in OPTIONS if config.get(key)}
        edit = bool(extra.get("image") or extra.get("images") or extra.get("mask"))
        body = {"model": model, "prompt": prompt, "n": n, "response_format": response_format, **extra}
        client = self.client()
        try:
            if edit:
                images_response = sdk().types.ImagesResponse
                result = await self.request(client.post, _with_data, path="/images/edits", body=body, cast_to=images_response)
            else:
                result = await self.request(client.images.generate, _with_data, model=model, prompt=prompt, n=n, response_format=response_format,
                                            extra_body={k: v for k, v in extra.items() if k != "user"}, **({"user": extra["user"]} if "user" in extra else {}))
        except ProviderError as exc:
            return ProviderResponse(error=f"API call error: {exc}")
        data = result.model_dump(mode="json", exclude_none=True)
        first = data["data"][0]
        if response_format == "b64_json":
            if not first.get("b64_json"):
                return ProviderResponse(error=f"No base64 image data found in response: {str(data)[:500]}")
            output = data_url(first["b64_json"], "image/png")
        elif first.get("url"):
            output = markdown_image(prompt, first["url"])
        else:
            return ProviderResponse(error=f"No image URL found in response: {str(data)[:500]}")
        ticks = (data.get("usage") or {}).get("cost_in_usd_ticks")
        if isinstance(ticks, int | float) and not isinstance(ticks, bool) and ticks >= 0:
            cost = ticks / 1e10
        else:
            sources = int(bool(config.get("image"))) + len(config.get("images") or [])
            cost = image_cost(model, n, config.get("resolution"), sources, config.get("quality"), edit)
        return ProviderResponse(output=output, cost=cost)


def _with_data(result: Any) -> Any:
    """A reply without images is asked again (then an error)."""
    if not getattr(present(result), "data", None):
        raise TransientError("API returned no images")
    return result


def check_id(provider_id: str) -> str | None:
    return None if provider_id.split(":", 2)[2:] != [""] else "name a model, e.g. xai:image:grok-2-image"


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> XAIImageProvider:
    """`xai:image:<model>`."""
    return XAIImageProvider(spec, env, spec.id.split(":", 2)[2], max_concurrency)
