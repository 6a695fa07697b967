"""OpenAI image generation, `openai:image:<model>`, through the openai SDK's `images.generate`.

Read from promptfoo 0.123.1 (`src/providers/openai/image.ts`): the body is `model` (`config.model`
over the id's), `prompt`, `n` (default 1), `size` (default `1024x1024`), `user`; DALL-E takes
`response_format` (`url` unless `b64_json` is set) and DALL-E 3 `quality` and `style`; the GPT
Image models always answer in base64 and take `quality`, `background`, `output_format`,
`output_compression` and `moderation`. A size, `n` or quality the model does not take is refused
before any call (`problem`); promptfoo fails each row instead. The output is the first image:
`![<prompt>](<url>)`, or a `data:` URL for base64. Cost is promptfoo's price per image by
model, quality and size.
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.media import data_url, markdown_image
from ci_grade.providers.openai import OpenAIProvider
from ci_grade.providers.openai_replies import present

DEFAULT_SIZE = "1024x1024"
DALLE2_SIZES = ("256x256", "512x512", "1024x1024")
DALLE3_SIZES = ("1024x1024", "1792x1024", "1024x1792")
GPT_IMAGE_SIZES = ("1024x1024", "1024x1536", "1536x1024", "auto")
GPT_IMAGE_QUALITIES = ("low", "medium", "high", "auto")
GPT_IMAGE_OPTIONS = ("quality", "background", "output_format", "output_compression", "moderation")
# USD per image: DALL-E 2 by size, DALL-E 3 by `<quality>_<size>`, GPT Image by `<quality>_<size>`
# (a quality other than low/medium/high is priced as low, an unknown size as the first entry).
DALLE2_COSTS = {"256x256": 0.016, "512x512": 0.018, "1024x1024": 0.02}
DALLE3_COSTS = {"standard_1024x1024": 0.04, "standard_1024x1792": 0.08, "standard_1792x1024": 0.08,
                "hd_1024x1024": 0.08, "hd_1024x1792": 0.12, "hd_1792x1024": 0.12}
GPT_IMAGE_COSTS = {
    "gpt-image-1": (0.011, 0.016, 0.042, 0.063, 0.167, 0.25),
    "gpt-image-1-mini": (0.005, 0.006, 0.011, 0.015, 0.036, 0.052),
    "gpt-image-1.5": (0.009, 0.013, 0.034, 0.05, 0.133, 0.2),
}
"""Per family: low, medium and high, each at 1024x1024 then at 1024x1536 or 1536x1024."""
_GPT_IMAGE = re.compile(r"(gpt-image-1(?:-mini|\.5)?)(?:-\d{4}-\d{2}-\d{2})?$|chatgpt-image-latest$")


def gpt_image_family(model: str) -> str | None:
    """`gpt-image-1`, `gpt-image-1-mini` or `gpt-image-1.5` for their ids (dated ones too), else None."""
    found = _GPT_IMAGE.match(model)
    if found is None:
        return None
    return found.group(1) or "gpt-image-1.5"


def image_cost(model: str, size: str, quality: Any, n: int) -> float:
    """promptfoo's price for `n` images."""
    if model == "dall-e-3":
        return DALLE3_COSTS.get(f"{quality or 'standard'}_{size}", DALLE3_COSTS["standard_1024x1024"]) * n
    if model == "dall-e-2":
        return DALLE2_COSTS.get(size, DALLE2_COSTS["1024x1024"]) * n
    family = gpt_image_family(model)
    if family is not None:
        level = ("low", "medium", "high").index(quality) if quality in ("low", "medium", "high") else 0
        tall = size in ("1024x1536", "1536x1024")
        return GPT_IMAGE_COSTS[family][2 * level + tall] * n
    return 0.04 * n


def problem(spec: ProviderSpec) -> str | None:
    """A setting the model does not take (checked before any call), or None."""
    config = spec.config
    model = str(config.get("model") or spec.id.split(":", 2)[2])
    size, n, quality = str(config.get("size") or DEFAULT_SIZE), config.get("n"), config.get("quality")
    family = gpt_image_family(model)
    if config.get("stream") or config.get("image") is not None or config.get("mask") is not None:
        return "openai:image generates images from text only (no streaming, edits or reference images)"
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 10 or (model == "dall-e-3" and n != 1)):
        return "n must be 1 for DALL-E 3" if model == "dall-e-3" else "n must be an integer from 1 to 10"
    sizes = DALLE3_SIZES if model == "dall-e-3" else DALLE2_SIZES if model == "dall-e-2" else GPT_IMAGE_SIZES if family else None
    if sizes is not None and size not in sizes:
        return f"size {size!r} is not one {model} makes: {', '.join(sizes)}"
    if family and quality is not None and quality not in GPT_IMAGE_QUALITIES:
        return f"quality {quality!r} is not one of {', '.join(GPT_IMAGE_QUALITIES)}"
    return None


class OpenAIImageProvider(OpenAIProvider):
    price_family = None

    def describe(self) -> str:
        return f"openai:image:{self._model}"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        config = self.spec.config
        model = str(config.get("model") or self._model)
        size, n = str(config.get("size") or DEFAULT_SIZE), int(config.get("n") or 1)
        family = gpt_image_family(model)
        response_format = "b64_json" if family else str(config.get("response_format") or "url")
        options: dict[str, Any] = {"n": n, "size": size}
        if config.get("user"):
            options["user"] = config["user"]
        if not family:
            options["response_format"] = response_format
        kept = GPT_IMAGE_OPTIONS if family else ("quality", "style") if model == "dall-e-3" else ()
        options.update({key: config[key] for key in kept if config.get(key) is not None})
        try:
            result = await self.request(self.client().images.generate, _with_data, model=model, prompt=prompt, **options)
        except ProviderError as exc:
            return ProviderResponse(error=f"API call error: {exc}")
        first = result.data[0]
        if response_format == "b64_json":
            if not first.b64_json:
                return ProviderResponse(error="No base64 image data found in the response")
            fmt = str(config.get("output_format") or "png")
            output = data_url(first.b64_json, {"jpeg": "image/jpeg", "webp": "image/webp"}.get(fmt, "image/png"))
        elif first.url:
            output = markdown_image(prompt, first.url)
        else:
            return ProviderResponse(error="No image URL found in the response")
        return ProviderResponse(output=output, cost=image_cost(model, size, config.get("quality"), n))


def _with_data(result: Any) -> Any:
    """A reply without images is asked again (then an error)."""
    if not getattr(present(result), "data", None):
        raise TransientError("API returned no images")
    return result
