"""`google:live:<model>`: the Gemini Live API (`BidiGenerateContent` over a websocket) through
the `google-genai` SDK's `client.aio.live.connect`.

One session per call, as promptfoo runs it: the setup carries the model, the generation options
(top-level `temperature`, `topP`, `topK`, `stopSequences`, `maxOutputTokens`, then
`generationConfig`, where `response_modalities`, `speechConfig`, `outputAudioTranscription` and
the like go to the session's config), `speechConfig`, `systemInstruction` and `tools`; each user
message of the prompt is then sent as one turn and the model's turn read until `turnComplete`.
Function calls are answered locally (`live_tools`) and sent back as tool responses. The output is
promptfoo's: `{"text", "toolCall": {"functionCalls": [...]}, "statefulApiState"?, "thinking"?}`,
the text being the audio's transcript when the model spoke; spoken audio is kept as a WAV file
(base64) in the response's `audio`. `timeoutMs` (default 30 s) bounds the wait for each message.

The key and endpoint are read as for `google:` (see `ai_studio` and `endpoint`): `config.apiKey`, GOOGLE_API_KEY,
GEMINI_API_KEY; the SDK connects to the endpoint's host with `wss://`. The API version is
`config.apiVersion`, else `v1beta` for native-audio and 3.1 Live models (which take text as
realtime input and answer in audio with a transcript), else `v1alpha`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import CallContext, Capability, ModelProvider, ProviderResponse
from ci_grade.providers.google import endpoint, live_tools, request
from ci_grade.providers.google.auth import VertexAuthed
from ci_grade.providers.media import pcm16_wav
from ci_grade.providers.pricing import estimate_cost
from ci_grade.providers.retry import RETRYABLE_STATUS, RetryPolicy, retry_after_seconds, with_retries
from ci_grade.results.usage import TokenUsage

if TYPE_CHECKING:
    from google.genai import types

DEFAULT_TIMEOUT_MS = 30_000
V1BETA_MODELS = ("gemini-3.1-flash-live", "gemini-2.5-flash-native-audio-", "gemini-live-2.5-flash-preview-native-audio-")
SAMPLE_RATE = 24_000  # the Live API's audio output: 16-bit mono PCM at 24 kHz
RETRYABLE_CLOSE = frozenset({1011, 1013})
"""Close codes for a failure on the service's side (internal error, try again later)."""
MISSING_SDK = "the google-genai package is not installed: pip install 'ci-grade[google]'"


@dataclass
class _Transcript:
    """What one session produced."""

    text: str = ""
    transcript: str = ""
    audio: list[bytes] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    usage: list[types.UsageMetadata] = field(default_factory=list)
    grounding: dict[str, Any] = field(default_factory=dict)


class GoogleLiveProvider(ModelProvider):
    """The Gemini Live API, one websocket session per call."""

    key_names = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    price_family: ClassVar[str | None] = "google"
    always_transcribed: ClassVar[bool] = False
    """Whether spoken answers are transcribed even when no text was asked for (Vertex, as promptfoo)."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None):
        super().__init__(spec, env, model, max_concurrency)
        self._client: Any = None
        # A stateful API's script listens on one port: its sessions run one at a time.
        self._one_at_a_time = asyncio.Lock() if live_tools.stateful_api(spec.config) else None

    def supports(self, kind: Capability) -> bool:
        return kind == "text"

    def api_version(self) -> str:
        configured = self.spec.config.get("apiVersion")
        return str(configured) if configured else ("v1beta" if self._model.startswith(V1BETA_MODELS) else "v1alpha")

    def _audio_only(self) -> bool:
        """Whether the session answers in audio only (text answers come as its transcript): v1beta
        models, as promptfoo reads them."""
        return self.api_version() == "v1beta"

    def _realtime_text(self) -> bool:
        """Whether text goes as realtime input rather than a client turn (v1beta models)."""
        return self._audio_only()

    def base_url(self) -> str:
        return endpoint.base_url(self.spec.config, self.env_value)

    def client_kwargs(self) -> dict[str, Any]:
        """How `genai.Client` authenticates: the API key."""
        return {"api_key": self.api_key()}

    def missing_credentials(self) -> str | None:
        return self.missing_key_error()

    def client(self) -> Any:
        """The provider's `genai.Client` (built once: it loads TLS settings and credentials)."""
        if self._client is None:
            self._client = self._new_client()
        return self._client

    def _new_client(self) -> Any:
        try:
            from google import genai
            from google.genai import types
        except ImportError:
            raise ProviderError(MISSING_SDK) from None
        headers = {str(k): str(v) for k, v in (self.spec.config.get("headers") or {}).items()}
        options = types.HttpOptions(base_url=self.base_url(), api_version=self.api_version(), headers=headers or None)
        return genai.Client(http_options=options, **self.client_kwargs())

    def connect_config(self, system: dict[str, Any] | None) -> types.LiveConnectConfig:
        """The session's setup as the SDK's config (ProviderError for an option it does not know)."""
        from google.genai import types

        config = self.spec.config
        options = {key: config[key] for key in request.OPTION_KEYS if config.get(key) is not None}
        options.update(config.get("generationConfig") or {})
        if config.get("speechConfig") is not None and "speechConfig" not in options:
            options["speechConfig"] = config["speechConfig"]
        session: dict[str, Any] = {}
        generation: dict[str, Any] = {}
        for key, value in options.items():
            if value is None:
                continue
            if (name := _field(types.LiveConnectConfig, key)) not in (None, "http_options", "generation_config"):
                session[str(name)] = value
            elif (name := _field(types.GenerationConfig, key)) is not None:
                generation[name] = value
            else:
                raise ProviderError(f"generationConfig.{key} is not an option of the Live API ({self.id})")
        modalities = [str(m).upper() for m in session.get("response_modalities") or []]
        if self._audio_only():  # text answers come as audio with its transcript
            wanted_text = "TEXT" in modalities
            modalities = [m for m in modalities if m != "TEXT"] or ["AUDIO"]
            if wanted_text or self.always_transcribed:
                session.setdefault("output_audio_transcription", {})
        if modalities:
            session["response_modalities"] = modalities
        if generation:
            session["generation_config"] = generation
        if tools := request.tools(config):
            session["tools"] = tools
        if system is not None:
            session["system_instruction"] = system
        try:
            return types.LiveConnectConfig.model_validate(session)
        except ValueError as exc:
            raise ProviderError(f"invalid Live API options for {self.id}: {exc}") from None

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        try:
            if missing := self.missing_credentials():
                return ProviderResponse(error=missing)
            contents, system = request.contents_and_system(prompt, self.spec.config)
            if any(turn["role"] != "user" for turn in contents):
                raise ProviderError("the Live API takes user messages only: the prompt has another role")
            settings = self.connect_config(system)
            policy = RetryPolicy.from_env()
            async with self._one_at_a_time or contextlib.nullcontext():
                try:
                    return await with_retries(lambda: self._session([turn["parts"] for turn in contents], settings), policy)
                except TransientError as exc:
                    return ProviderResponse(error=f"{exc} (gave up after {policy.attempts} attempts)")
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))

    async def _session(self, turns: list[list[dict[str, Any]]], settings: types.LiveConnectConfig) -> ProviderResponse:
        """One session; a failure before the first turn was sent that the service may not repeat
        (429, 5xx, a refused connection, close codes 1011 and 1013) is a TransientError, retried."""
        idle = float(self.spec.config.get("timeoutMs") or DEFAULT_TIMEOUT_MS) / 1000
        result = _Transcript()
        state: Any = None
        sent = False
        async with live_tools.serving(self.spec.config, self.env, self.base_dir) as http:
            try:
                async with self.client().aio.live.connect(model=self._model, config=settings) as session:
                    for parts in turns:
                        sent = True
                        await self._send_turn(session, parts)
                        await self._read_turn(session, result, http, idle)
            except TimeoutError:
                return ProviderResponse(error=f"WebSocket request timed out after {idle * 1000:g}ms of inactivity")
            except Exception as exc:
                message, transient, retry_after = self._failure(exc)
                if transient and not sent:
                    raise TransientError(message, retry_after) from None
                return ProviderResponse(error=message)
            if live_tools.stateful_api(self.spec.config) is not None:
                state = await live_tools.final_state(http, self.spec.config)
        return self.to_response(result, state)

    def _failure(self, exc: Exception) -> tuple[str, bool, float | None]:
        """(message, worth another attempt, seconds the service asked to wait); other errors raise."""
        import websockets
        from google.auth import exceptions as auth_errors
        from google.genai import errors

        if isinstance(exc, auth_errors.GoogleAuthError):
            return f"Google authentication failed: {exc}", isinstance(exc, auth_errors.TransportError), None
        if isinstance(exc, errors.APIError):
            return f"Google Live API error {exc.code}: {exc.message or exc.status or exc.details}", exc.code in RETRYABLE_CLOSE, None
        if isinstance(exc, websockets.exceptions.ConnectionClosed):  # closed while the SDK was sending
            code, reason = (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (1006, "connection closed")
            return f"Google Live API error {code}: {reason}", code in RETRYABLE_CLOSE, None
        if isinstance(exc, websockets.exceptions.InvalidStatus):
            status = exc.response.status_code
            wait = retry_after_seconds(dict(exc.response.headers.raw_items()))
            return f"WebSocket error for model {self._model}: HTTP {status} at the handshake", status in RETRYABLE_STATUS, wait
        if isinstance(exc, OSError | websockets.exceptions.WebSocketException):
            return f"WebSocket error for model {self._model}: {type(exc).__name__}: {exc}", isinstance(exc, OSError), None
        raise exc

    async def _send_turn(self, session: Any, parts: list[dict[str, Any]]) -> None:
        from google.genai import types

        if not all("text" in part for part in parts):
            raise ProviderError("ci-grade sends text to the Live API: audio, image and video input are not supported")
        if self._realtime_text():
            await session.send_realtime_input(text="\n".join(str(part["text"]) for part in parts))
            return
        if len(parts) != 1:
            raise ProviderError("the Live API takes one text part per user message")
        await session.send_client_content(turns=types.Content(role="user", parts=[types.Part(text=str(parts[0]["text"]))]), turn_complete=True)

    async def _read_turn(self, session: Any, result: _Transcript, http: Any, idle: float) -> None:
        """Messages until the model's turn is complete; a `turnComplete` that only closes a tool
        call (no content since the tool response) is not the end, as promptfoo reads it."""
        from google.genai import types

        waiting_for_tool_followup = False
        stream = session.receive()
        while True:
            message = await asyncio.wait_for(anext(stream, None), idle)
            if message is None:
                if not waiting_for_tool_followup:
                    return
                waiting_for_tool_followup = False
                stream = session.receive()
                continue
            if message.usage_metadata is not None:
                result.usage.append(message.usage_metadata)
            content = message.server_content
            if content is not None:
                parts = content.model_turn.parts if content.model_turn and content.model_turn.parts else []
                heard = content.output_transcription.text if content.output_transcription else None
                if parts or heard or content.generation_complete:
                    waiting_for_tool_followup = False
                for part in parts:
                    result.text += part.text or ""
                    if part.inline_data and part.inline_data.data and "audio" in (part.inline_data.mime_type or ""):
                        result.audio.append(part.inline_data.data)
                result.transcript += heard or ""
                if content.grounding_metadata is not None:
                    result.grounding = content.grounding_metadata.model_dump(mode="json", by_alias=True, exclude_none=True)
            if message.tool_call is not None and message.tool_call.function_calls:
                responses = []
                for call in message.tool_call.function_calls:
                    result.calls.append(call.model_dump(mode="json", by_alias=True, exclude_none=True))
                    if call.id and call.name:
                        answer = await live_tools.answer(call.name, call.args, self.spec.config, self.base_dir, http)
                        responses.append(types.FunctionResponse(id=call.id, name=call.name, response=answer))
                if responses:
                    waiting_for_tool_followup = True
                    await session.send_tool_response(function_responses=responses)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aio.aclose()
            client.close()

    def to_response(self, result: _Transcript, state: Any) -> ProviderResponse:
        text, thinking = result.text, None
        if result.audio and result.transcript:
            text, thinking = result.transcript, result.text or None
        output: dict[str, Any] = {"text": text, "toolCall": {"functionCalls": result.calls}}
        if state is not None:
            output["statefulApiState"] = state
        if thinking:
            output["thinking"] = thinking
        usage, cost = self.usage_and_cost(result.usage)
        audio = {"data": pcm16_wav(b"".join(result.audio), SAMPLE_RATE), "format": "wav", "transcript": result.transcript or result.text or None} if result.audio else None
        metadata = {"groundingMetadata": result.grounding} if result.grounding else {}
        return ProviderResponse(output=output, token_usage=usage, cost=cost, audio=audio, metadata=metadata)

    def usage_and_cost(self, frames: list[types.UsageMetadata]) -> tuple[TokenUsage, float | None]:
        """The session's usage summed over its turns; thinking tokens are billed as output."""
        if not frames:
            return TokenUsage(), None
        prompt = sum((u.prompt_token_count or 0) + (u.tool_use_prompt_token_count or 0) for u in frames)
        completion = sum(u.response_token_count or 0 for u in frames)
        thoughts = sum(u.thoughts_token_count or 0 for u in frames)
        cached = sum(u.cached_content_token_count or 0 for u in frames)
        total = sum(u.total_token_count or 0 for u in frames) or prompt + completion + thoughts
        tokens = TokenUsage.of(prompt, completion, total, cached=cached, reasoning=thoughts, requests=len(frames))
        cost = estimate_cost(self._model, self.spec.config, prompt, completion + thoughts, family="google", cached_tokens=cached)
        return tokens, cost


class VertexLiveProvider(VertexAuthed, GoogleLiveProvider):
    """`vertex:live:<model>`: the Live API on Vertex AI, with Application Default Credentials.

    Project, region, endpoint and credentials are read as for `vertex:` (see `auth`); the API
    version is `config.apiVersion` (`v1` or `v1beta1`), else `v1`. As promptfoo sends it, text goes
    as client turns and the answer comes in audio with its transcript.
    """

    always_transcribed = True

    def describe(self) -> str:
        return f"vertex:live:{self._model}"

    def api_version(self) -> str:
        return str(self.spec.config.get("apiVersion") or "v1")

    def _audio_only(self) -> bool:
        return True

    def _realtime_text(self) -> bool:
        return False

    def base_url(self) -> str:
        return self.auth.base_url()

    def client_kwargs(self) -> dict[str, Any]:
        return {"vertexai": True, "project": self.auth.project(), "location": self.auth.region(), "credentials": self.auth.credentials()}

    def missing_credentials(self) -> str | None:
        if self.api_version() not in ("v1", "v1beta1"):
            return "Vertex Live apiVersion must be v1 or v1beta1."
        if not re.fullmatch(r"[a-z0-9-]+", self.auth.region()):
            return "Vertex Live region must be a Google Cloud location ID."
        self.client_kwargs()  # the credentials and project load now (ProviderError when they cannot)
        return None


def _field(model: Any, key: str) -> str | None:
    """The SDK field a config key names (snake_case or camelCase), None if none."""
    if key in model.model_fields:
        return key
    return next((name for name, info in model.model_fields.items() if info.alias == key), None)
