"""The `openai:` ids: which provider each names (chat, Responses, completion, embeddings,
moderation, realtime), promptfoo's defaults for a bare `openai:<model>` (a completion model is a completion
provider, GPT 5.6 and later answer on the Responses API, anything else is chat), and the kinds
ci-grade refuses before any call."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import UnknownProviderError
from ci_grade.providers import openai_completion, openai_image, openai_realtime
from ci_grade.providers.base import Provider
from ci_grade.providers.openai import (
    OpenAIChatProvider,
    OpenAIEmbeddingProvider,
    OpenAIModerationProvider,
    OpenAIResponsesProvider,
)

UNSUPPORTED_KINDS = frozenset({
    "video", "transcription", "tts", "speech", "live", "agents", "agents-api", "chatkit",
    "codex", "codex-sdk", "codex-app-server", "codex-desktop",
})
"""promptfoo's `openai:<kind>:` providers that ci-grade does not run (refused before any call)."""


def check_id(provider_id: str) -> str | None:
    """Why ci-grade cannot run this `openai:` id, or None."""
    kind = [*provider_id.split(":", 2), ""][1]
    if kind in UNSUPPORTED_KINDS or kind.startswith("gpt-live-"):
        return (
            f"{provider_id}: openai:{kind} is not supported by ci-grade; it runs openai:chat:<model>, openai:responses:<model>, "
            "openai:completion:<model>, openai:image:<model>, openai:embedding:<model>, openai:moderation, openai:realtime:<model> "
            "and openai:assistant:<assistant id>"
        )
    if kind == "image" and not [*provider_id.split(":", 2), "", ""][2]:
        return f"{provider_id}: name a model, e.g. openai:image:dall-e-3"
    return None


def check_spec(spec: ProviderSpec) -> str | None:
    """Settings an `openai:image` or `openai:realtime` provider cannot run with (before any call), or None."""
    parts = spec.id.split(":", 2)
    if len(parts) > 1 and parts[1] == "image":
        return openai_image.problem(spec)
    if len(parts) > 1 and parts[1] == "realtime":
        return openai_realtime.check_config(openai_realtime.model_of(parts[2] if len(parts) > 2 else None, spec.config), spec.config)
    return None


def defaults_to_responses(model: str) -> bool:
    """promptfoo's rule for `openai:<model>`: GPT 5.6 and later answer on the Responses API."""
    found = re.match(r"gpt-(\d+)(?:\.(\d+))?(?:-|$)", model)
    return found is not None and not model.startswith("gpt-35") and (int(found[1]), int(found[2] or 0)) >= (5, 6)


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> Provider:
    """Build the OpenAI provider an `openai:...` id names."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    parts = spec.id.split(":", 2)
    kind = parts[1] if len(parts) > 1 else ""
    rest = parts[2] if len(parts) > 2 else None
    if kind == "chat":
        return OpenAIChatProvider(spec, env, rest, max_concurrency)
    if kind == "responses":
        return OpenAIResponsesProvider(spec, env, rest, max_concurrency)
    if kind in ("embedding", "embeddings"):
        return OpenAIEmbeddingProvider(spec, env, rest, max_concurrency)
    if kind == "moderation":
        return OpenAIModerationProvider(spec, env, rest, max_concurrency)
    if kind == "realtime":
        return openai_realtime.create(spec, env, rest, max_concurrency)
    if kind == "completion":
        return openai_completion.OpenAICompletionProvider(spec, env, rest, max_concurrency)
    if kind == "image":
        return openai_image.OpenAIImageProvider(spec, env, rest, max_concurrency)
    model = ":".join(parts[1:]) if len(parts) > 1 else ""
    if model in openai_completion.MODELS:
        return openai_completion.OpenAICompletionProvider(spec, env, model, max_concurrency)
    if defaults_to_responses(model):
        return OpenAIResponsesProvider(spec, env, model, max_concurrency)
    return OpenAIChatProvider(spec, env, model or None, max_concurrency)
