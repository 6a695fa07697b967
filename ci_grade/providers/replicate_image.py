"""Replicate image generation, `replicate:image:<owner>/<model>[:<version>]`.

Read from promptfoo 0.123.1 (`ReplicateImageProvider` in `src/providers/replicate.ts`): the
prediction's `input` is the prompt as given, `width` and `height` (default 768) and every other
config key that is model input; it is created and polled as `replicate` does for text. The
output is the first image URL as Markdown, `![<prompt>](<url>)`. promptfoo gives no cost for it;
neither does ci-grade.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.media import markdown_image
from ci_grade.providers.replicate import NOT_INPUT, ReplicateProvider


class ReplicateImageProvider(ReplicateProvider):
    def describe(self) -> str:
        return f"replicate:image:{self._model}"

    def request(self, prompt: str) -> tuple[str, dict[str, Any]]:
        config = self.spec.config
        extra = {k: v for k, v in config.items() if k not in NOT_INPUT and k not in ("width", "height")}
        return self.target({"input": {"prompt": prompt, "width": config.get("width") or 768, "height": config.get("height") or 768, **extra}})

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        try:
            prediction = await self.predict(*self.request(prompt))
        except ProviderError as exc:
            return ProviderResponse(error=f"API call error: {exc}")
        if prediction["status"] != "succeeded":
            return ProviderResponse(error=str(prediction.get("error") or "Image generation failed"))
        output = prediction.get("output")
        url = output[0] if isinstance(output, list) and output else output
        if not output:
            return ProviderResponse(error="No output received from Replicate")
        if not isinstance(url, str) or not url:
            return ProviderResponse(error=f"No image URL found in response: {output!r}"[:500])
        return ProviderResponse(output=markdown_image(prompt, url), metadata={"predictionId": prediction.get("id")})


def check_id(provider_id: str) -> str | None:
    return None if provider_id.split(":", 2)[2] else "name a model, e.g. replicate:image:black-forest-labs/flux-dev"


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> ReplicateImageProvider:
    """`replicate:image:<model>`."""
    return ReplicateImageProvider(spec, env, spec.id.split(":", 2)[2], max_concurrency)
