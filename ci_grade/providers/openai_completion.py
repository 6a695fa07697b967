"""`openai:completion:<model>`: the legacy Completions API (`gpt-3.5-turbo-instruct`, `davinci-002`,
`babbage-002`), through the openai SDK's raw route (`client.post`, read as its `Completion`).

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
from ci_grade.providers.http_clients import sdk
from ci_grade.providers.openai import OpenAIProvider
from ci_grade.providers.openai_defaults import completion_defaults
from ci_grade.providers.openai_replies import present
from ci_grade.results.usage import TokenUsage

MODELS = ("gpt-3.5-turbo-instruct", "gpt-3.5-turbo-instruct-0914", "babbage-002", "davinci-002")
"""promptfoo's completion models: `openai:<one of them>` is a completion provider too."""
DEFAULT_STOP = ["<|im_end|>", "<|endoftext|>"]


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
        body: dict[str, Any] = {"model": self._model, "prompt": prompt, **completion_defaults(config, self.env)}
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
        try:  # the SDK's raw route, as for chat: the body goes out as promptfoo builds it, passthrough included
            completion = sdk().types.Completion
            result = await self.request(self.client().post, with_choice, path="/completions", body=self.request_body(prompt), cast_to=completion)
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        usage = TokenUsage.of(
            result.usage.prompt_tokens if result.usage else 0,
            result.usage.completion_tokens if result.usage else 0,
            result.usage.total_tokens if result.usage else None,
        )
        choice = result.choices[0]
        return ProviderResponse(output=choice.text, token_usage=usage, cost=self.cost(usage), finish_reason=choice.finish_reason)

