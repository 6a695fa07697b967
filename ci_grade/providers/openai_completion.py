"""`openai:completion:<model>`: the legacy Completions API (`gpt-3.5-turbo-instruct`, `davinci-002`,
`babbage-002`), through the openai SDK's `completions.create`.

promptfoo 0.123.1's body (`src/providers/openai/completion.ts`): `model`, `prompt` (the rendered
prompt as text), `max_tokens` (config, else OPENAI_MAX_TOKENS, else 1024), `temperature` (else
OPENAI_TEMPERATURE, else 0), `top_p` (else OPENAI_TOP_P, else 1), `presence_penalty` and
`frequency_penalty` (else their OPENAI_* variables, else 0), `best_of` (else OPENAI_BEST_OF, else
1), `seed` when set, `stop` (OPENAI_STOP as JSON, else config, else `<|im_end|>` and
`<|endoftext|>`), then `passthrough` over all of it. The output is the first choice's text.
"""

from __future__ import annotations

import json
from typing import Any

from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.openai import OpenAIProvider
from ci_grade.providers.openai_replies import present
from ci_grade.results.usage import TokenUsage

MODELS = ("gpt-3.5-turbo-instruct", "gpt-3.5-turbo-instruct-0914", "babbage-002", "davinci-002")
"""promptfoo's completion models: `openai:<one of them>` is a completion provider too."""
DEFAULT_STOP = ["<|im_end|>", "<|endoftext|>"]
# (body field, environment variable, type, default)
_DEFAULTS = (
    ("max_tokens", "OPENAI_MAX_TOKENS", int, 1024),
    ("temperature", "OPENAI_TEMPERATURE", float, 0),
    ("top_p", "OPENAI_TOP_P", float, 1),
    ("presence_penalty", "OPENAI_PRESENCE_PENALTY", float, 0),
    ("frequency_penalty", "OPENAI_FREQUENCY_PENALTY", float, 0),
    ("best_of", "OPENAI_BEST_OF", int, 1),
)


def with_choice(result: Any) -> Any:
    if not getattr(present(result), "choices", None):
        raise TransientError(f"API returned no choices: {str(result)[:200]}")
    return result


class OpenAICompletionProvider(OpenAIProvider):
    default_model = "gpt-3.5-turbo-instruct"

    def describe(self) -> str:
        return f"openai:completion:{self._model}"

    def request_body(self, prompt: str) -> dict[str, Any]:
        config = self.spec.config
        body: dict[str, Any] = {"model": self._model, "prompt": prompt}
        for field, variable, kind, default in _DEFAULTS:
            text = self.env_value(variable)
            body[field] = config[field] if config.get(field) is not None else (kind(float(text)) if text else default)
        if config.get("seed") is not None:
            body["seed"] = config["seed"]
        stop_text = self.env_value("OPENAI_STOP")
        if stop_text:
            try:
                body["stop"] = json.loads(stop_text)
            except ValueError as exc:
                raise ProviderError(f"OPENAI_STOP is not a valid JSON string: {exc}") from None
        else:
            body["stop"] = config.get("stop") or DEFAULT_STOP
        passthrough = config.get("passthrough")
        if isinstance(passthrough, dict):
            body.update(passthrough)
        return body

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        try:
            body = self.request_body(prompt)
            model, extra = body.pop("model"), {k: body.pop(k) for k in list(body) if k not in _SDK_FIELDS}
            result = await self.request(self.client().completions.create, with_choice, model=model, extra_body=extra or None, **body)
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        usage = TokenUsage.of(
            result.usage.prompt_tokens if result.usage else 0,
            result.usage.completion_tokens if result.usage else 0,
            result.usage.total_tokens if result.usage else None,
        )
        choice = result.choices[0]
        return ProviderResponse(output=choice.text, token_usage=usage, cost=self.cost(usage), finish_reason=choice.finish_reason)


_SDK_FIELDS = frozenset({"prompt", "max_tokens", "temperature", "top_p", "presence_penalty", "frequency_penalty", "best_of", "seed", "stop", "n", "logprobs", "echo", "suffix", "user", "logit_bias"})
"""`completions.create`'s own arguments; any other passthrough field goes in `extra_body`."""
