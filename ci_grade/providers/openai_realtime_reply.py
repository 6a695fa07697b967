"""What an OpenAI Realtime session answered, read from its server events as promptfoo reads them,
and the response ci-grade returns for it.

Text comes from `response.output_text.delta` (the beta API's `response.text.delta`) and the spoken
answer's transcript (`response.output_audio_transcript.delta`); a `*.done` event with text replaces
what the deltas added up to. Audio comes from `response.output_audio.delta` (base64): PCM16 is
returned as a WAV file, G.711 as it came. `response.output_item.added` announces function calls,
whose arguments `response.function_call_arguments.done` completes; every `response.done` adds its
`usage`. Cost is priced per modality (text, audio, image; cached input apart) from promptfoo's
realtime rates in `prices.json`, with the config's `inputCost`/`outputCost`/`cost` and
`audioInputCost`/`audioOutputCost`/`audioCost` overriding them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from ci_grade.providers.base import ProviderResponse
from ci_grade.providers.media import pcm16_wav
from ci_grade.providers.pricing import price_entry
from ci_grade.results.usage import TokenUsage

SAMPLE_RATE = 24_000  # the Realtime API's PCM16 audio: 16-bit mono at 24 kHz
TEXT_DELTAS = frozenset({"response.text.delta", "response.output_text.delta", "response.audio_transcript.delta", "response.output_audio_transcript.delta"})
TEXT_DONE = frozenset({"response.text.done", "response.output_text.done", "response.audio_transcript.done", "response.output_audio_transcript.done"})
AUDIO_DELTAS = frozenset({"response.audio.delta", "response.output_audio.delta"})
FUNCTION_CALLS_MADE = "\n\n[Function calls were made during processing]"


@dataclass
class Call:
    """A function call the model asked for."""

    call_id: str
    name: str
    arguments: str


@dataclass
class Reply:
    """One request's answer: the current response's text, audio and calls, and what every
    response of the request (tool rounds included) reported."""

    text: str = ""
    audio: list[bytes] = field(default_factory=list)
    pending: list[Call] = field(default_factory=list)
    called: bool = False
    results: list[str] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    response_id: str = ""
    message_id: str = ""

    def read(self, event: dict[str, Any]) -> None:
        """Take one server event into account (other events are ignored)."""
        kind = event.get("type")
        if kind in TEXT_DELTAS:
            self.text += str(event.get("delta") or "")
        elif kind in TEXT_DONE:
            if event.get("text") or event.get("transcript"):
                self.text = str(event.get("text") or event.get("transcript"))
        elif kind in AUDIO_DELTAS:
            data = event.get("delta") or event.get("audio")
            if isinstance(data, str) and data:
                self.audio.append(base64.b64decode(data))
        elif kind == "response.created":
            self.response_id = str((event.get("response") or {}).get("id") or "")
        elif kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                self.called = True
                self.pending.append(Call(str(item.get("call_id") or ""), str(item.get("name") or ""), str(item.get("arguments") or "{}")))
            elif item.get("type") == "text" and item.get("text"):
                self.text += str(item["text"])
        elif kind == "response.function_call_arguments.done":
            for call in self.pending:
                if call.call_id == event.get("call_id"):
                    call.arguments = str(event.get("arguments") or "{}")
        elif kind == "response.done":
            response = event.get("response") or {}
            usage = response.get("usage") or event.get("usage")
            if isinstance(usage, dict):
                self.usage.append(usage)

    def next_round(self, results: list[str]) -> None:
        """After the function calls were answered: the next response starts afresh."""
        self.results.extend(results)
        self.text = ""
        self.audio = []
        self.pending = []

    def response(self, model: str, config: dict[str, Any]) -> ProviderResponse:
        """The call's result as promptfoo returns it (an error when nothing came back)."""
        usage = token_usage(self.usage)
        cost = session_cost(model, config, self.usage)
        metadata: dict[str, Any] = {"responseId": self.response_id, "messageId": self.message_id, "usage": self.usage[-1] if self.usage else None,
                                    "usageEvents": self.usage, "functionCallOccurred": self.called}
        if self.results:
            metadata["functionCallResults"] = self.results
        audio = encode_audio(b"".join(self.audio), str(config.get("output_audio_format") or "pcm16")) if self.audio else None
        if not self.text and audio is None and not self.results:
            attempted = [call.name for call in self.pending if call.name]
            if self.called:
                hint = "A function_call was emitted by the model but no functionCallHandler was configured to respond."
                metadata["attemptedFunctionCalls"] = [{"name": name} for name in attempted]
            else:
                hint = "No text, audio, or function-call output was returned. This often indicates a wire-shape mismatch with the Realtime API."
            tail = f" Attempted: {', '.join(attempted)}." if attempted else ""
            return ProviderResponse(error=f"OpenAI Realtime returned an empty response. {hint}{tail}", token_usage=usage, cost=cost, metadata=metadata)
        output = self.text or "[Audio response received]"
        if self.results:
            output += FUNCTION_CALLS_MADE
        if audio is not None:
            audio["transcript"] = self.text or None
        return ProviderResponse(output=output, token_usage=usage, cost=cost, metadata=metadata, audio=audio)


def encode_audio(data: bytes, audio_format: str) -> dict[str, Any]:
    """PCM16 as a base64 WAV file (16-bit mono at 24 kHz), other formats as they came."""
    if audio_format != "pcm16":
        return {"data": base64.b64encode(data).decode(), "format": audio_format}
    return {"data": pcm16_wav(data, SAMPLE_RATE), "format": "wav"}


def _number(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _details(usage: dict[str, Any], *names: str) -> dict[str, Any]:
    return next((usage[name] for name in names if isinstance(usage.get(name), dict)), {})


def token_usage(events: list[dict[str, Any]]) -> TokenUsage:
    """The tokens of every `response.done` of the call, summed (input, output, cached input)."""
    if not events:
        return TokenUsage(num_requests=1)
    prompt = sum(_number(u.get("input_tokens", u.get("prompt_tokens"))) for u in events)
    completion = sum(_number(u.get("output_tokens", u.get("completion_tokens"))) for u in events)
    total = sum(_number(u["total_tokens"]) if "total_tokens" in u else _number(u.get("input_tokens")) + _number(u.get("output_tokens")) for u in events)
    cached = sum(_number(_details(u, "input_token_details", "input_tokens_details", "prompt_tokens_details").get("cached_tokens")) for u in events)
    return TokenUsage.of(prompt, completion, total, cached=cached, requests=len(events))


def session_cost(model: str, config: dict[str, Any], events: list[dict[str, Any]]) -> float | None:
    """The call's cost: each response's, summed (None when the model's price is unknown)."""
    costs = [usage_cost(model, config, usage) for usage in events]
    if not events or any(cost is None for cost in costs):
        return None if events or price_entry(model, "openai") is None else 0.0
    return sum(cost for cost in costs if cost is not None)


def usage_cost(model: str, config: dict[str, Any], usage: dict[str, Any]) -> float | None:
    """One response's cost, priced per modality as promptfoo prices realtime usage."""
    rates = price_entry(model, "openai")
    if rates is None:
        return None
    inputs = _details(usage, "input_token_details", "input_tokens_details", "prompt_tokens_details")
    outputs = _details(usage, "output_token_details", "output_tokens_details", "completion_tokens_details")
    total_in = _number(usage.get("input_tokens", usage.get("prompt_tokens")))
    total_out = _number(usage.get("output_tokens", usage.get("completion_tokens")))
    audio_in, image_in = _number(inputs.get("audio_tokens")), _number(inputs.get("image_tokens"))
    text_in = _number(inputs["text_tokens"]) if "text_tokens" in inputs else max(total_in - audio_in - image_in, 0)
    audio_out = _number(outputs.get("audio_tokens"))
    text_out = _number(outputs["text_tokens"]) if "text_tokens" in outputs else max(total_out - audio_out, 0)
    if "imageInput" not in rates:  # images are billed as text where the model has no image rate
        text_in, image_in = text_in + image_in, 0
    cached_text, cached_audio, cached_image = _cached_split(_number(inputs.get("cached_tokens")), inputs.get("cached_tokens_details") or {}, text_in, audio_in, image_in)
    text_price = config.get("inputCost", config.get("cost", rates["input"]))
    cached_price = config.get("inputCost", config.get("cost", rates.get("cachedInput", text_price)))
    output_price = config.get("outputCost", config.get("cost", rates.get("output", 0.0)))
    audio_price = config.get("audioInputCost", config.get("audioCost", rates.get("audioInput", 0.0)))
    audio_cached_price = config.get("audioInputCost", config.get("audioCost", rates.get("audioCachedInput", audio_price)))
    audio_out_price = config.get("audioOutputCost", config.get("audioCost", rates.get("audioOutput", 0.0)))
    image_price = float(rates.get("imageInput", 0.0))
    return float(
        (text_in - cached_text) * text_price + cached_text * cached_price + text_out * output_price
        + (audio_in - cached_audio) * audio_price + cached_audio * audio_cached_price + audio_out * audio_out_price
        + (image_in - cached_image) * image_price + cached_image * float(rates.get("imageCachedInput", image_price))
    )


def _cached_split(cached: int, details: dict[str, Any], text: int, audio: int, image: int) -> tuple[int, int, int]:
    """Cached input tokens per modality: as the API breaks them down, else all of the one
    modality the input had, else text (promptfoo's `splitCachedInputTokens`)."""
    if cached <= 0:
        return 0, 0, 0
    if any(_number(details.get(k)) for k in ("text_tokens", "audio_tokens", "image_tokens")):
        return min(_number(details.get("text_tokens")), text), min(_number(details.get("audio_tokens")), audio), min(_number(details.get("image_tokens")), image)
    if not text and not image and audio:
        return 0, min(cached, audio), 0
    if not text and not audio and image:
        return 0, 0, min(cached, image)
    return min(cached, text), 0, 0
