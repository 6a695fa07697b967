"""Stand-ins for image and speech generation APIs on an LLMServer: xAI's `images/generations`
and `images/edits`, Hyperbolic's `image/generation` and `audio/generation`, fal.ai's queue, and
Imagen's `:predict` on the Gemini API and Vertex AI.

Each route checks what the API checks (path, the key in its header, the body's required fields
and types) and answers in the API's format, errors included.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable
from typing import Any

from tests.servers.google_server import ServiceAccount, google_error, header
from tests.servers.llm_server import LLMServer, Recorded, Response

# Enough of a PNG and an MP3 (ID3 tag) for their first bytes to say what they are.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"
PNG_B64 = base64.b64encode(PNG).decode()
MP3_B64 = base64.b64encode(b"ID3\x04\x00\x00\x00\x00\x00\x00fake-frames").decode()


def _bearer(recorded: Recorded, key: str) -> bool:
    return header(recorded, "authorization") == f"Bearer {key}"


def install_xai_images(server: LLMServer, key: str, *, usage: dict[str, Any] | None = None) -> LLMServer:
    """`POST /v1/images/generations` and `/v1/images/edits`: JSON with `model` and `prompt`; one
    image per `n`, as a URL or `b64_json` per `response_format`."""

    def handle(recorded: Recorded) -> Response:
        if not _bearer(recorded, key):
            return Response(401, json={"code": "Client specified an invalid argument", "error": "Incorrect API key provided"})
        body = recorded.json
        if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not isinstance(body.get("prompt"), str):
            return Response(422, json={"code": "Client specified an invalid argument", "error": "model and prompt are required"})
        if body.get("response_format", "url") not in ("url", "b64_json"):
            return Response(400, json={"error": f"unknown response_format {body['response_format']!r}"})
        n = int(body.get("n", 1))
        items = [{"b64_json": PNG_B64} if body.get("response_format") == "b64_json" else {"url": f"https://imgen.x.ai/xai-imgen/tmp-{i}.jpeg"} for i in range(n)]
        return Response(200, json={"data": [{**item, "revised_prompt": ""} for item in items], **({"usage": usage} if usage else {})})

    server.route("POST", "/v1/images/generations", handle)
    return server.route("POST", "/v1/images/edits", handle)


def install_openai_images(server: LLMServer, key: str) -> LLMServer:
    """OpenAI's `POST /v1/images/generations`, checked as OpenAI checks it: DALL-E's sizes and
    `response_format`, DALL-E 3's single image, GPT Image's refusal of `response_format` (it always
    answers in base64, with token usage)."""
    sizes = {"dall-e-2": ("256x256", "512x512", "1024x1024"), "dall-e-3": ("1024x1024", "1792x1024", "1024x1792")}

    def handle(recorded: Recorded) -> Response:
        if not _bearer(recorded, key):
            return Response(401, json={"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
        body = recorded.json
        if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not isinstance(body.get("prompt"), str):
            return Response(400, json={"error": {"message": "model and prompt are required", "type": "invalid_request_error"}})
        model, n = body["model"], int(body.get("n", 1))
        if model.startswith("gpt-image"):
            if "response_format" in body:
                return Response(400, json={"error": {"message": "Unknown parameter: 'response_format'.", "type": "invalid_request_error"}})
            usage = {"input_tokens": 12, "output_tokens": 272, "total_tokens": 284}
            return Response(200, json={"created": 1, "data": [{"b64_json": PNG_B64}] * n, "usage": usage})
        if body.get("size", "1024x1024") not in sizes.get(model, ()):
            return Response(400, json={"error": {"message": f"Invalid size for {model}", "type": "invalid_request_error"}})
        if model == "dall-e-3" and n != 1:
            return Response(400, json={"error": {"message": "You must provide n=1 for this model.", "type": "invalid_request_error"}})
        b64 = body.get("response_format") == "b64_json"
        items = [{"b64_json": PNG_B64} if b64 else {"url": f"https://oaidalleapiprodscus.blob.core.windows.net/private/img-{i}.png"} for i in range(n)]
        return Response(200, json={"created": 1, "data": [{**item, "revised_prompt": body["prompt"]} for item in items]})

    return server.route("POST", "/v1/images/generations", handle)


def install_hyperbolic(server: LLMServer, key: str) -> LLMServer:
    """`POST /v1/image/generation` (`model_name`, `prompt`, integer `height`/`width`) and
    `POST /v1/audio/generation` (`text`); errors as `{"detail": ...}`."""

    def image(recorded: Recorded) -> Response:
        if not _bearer(recorded, key):
            return Response(401, json={"detail": "Invalid API key"})
        body = recorded.json
        if not isinstance(body, dict) or not isinstance(body.get("model_name"), str) or not isinstance(body.get("prompt"), str):
            return Response(422, json={"detail": "model_name and prompt are required"})
        if not all(isinstance(body.get(k), int) for k in ("height", "width")):
            return Response(422, json={"detail": "height and width must be integers"})
        return Response(200, json={"images": [{"index": 0, "image": PNG_B64, "random_seed": 7}], "inference_time": 1.2})

    def audio(recorded: Recorded) -> Response:
        if not _bearer(recorded, key):
            return Response(401, json={"detail": "Invalid API key"})
        body = recorded.json
        if not isinstance(body, dict) or not isinstance(body.get("text"), str) or not body["text"]:
            return Response(422, json={"detail": "text is required"})
        return Response(200, json={"audio": MP3_B64})

    server.route("POST", "/v1/image/generation", image)
    return server.route("POST", "/v1/audio/generation", audio)


def install_fal(server: LLMServer, key: str, model: str, result: Callable[[dict[str, Any]], dict[str, Any]], *, queued: int = 1) -> list[dict[str, Any]]:
    """fal's queue for `model`: `POST /<model>` (`Authorization: Key <key>`, a JSON object with a
    `prompt`) queues a request whose status is `IN_QUEUE` for `queued` reads, then `COMPLETED`
    (with `error` when `result` raises ValueError); its result is `result(input)`. The status
    and result URLs are under the app (`owner/alias`), as fal names them. Returns the inputs."""
    app = "/".join(model.split("/")[:2])
    inputs: list[dict[str, Any]] = []
    ids = itertools.count(1)

    def authorized(recorded: Recorded) -> Response | None:
        return None if header(recorded, "authorization") == f"Key {key}" else Response(401, json={"detail": "No user found for Key ID and Secret"})

    def submit(recorded: Recorded) -> Response:
        if refused := authorized(recorded):
            return refused
        body = recorded.json
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return Response(422, json={"detail": [{"loc": ["body", "prompt"], "msg": "field required", "type": "value_error.missing"}]})
        inputs.append(body)
        request_id = f"req-{next(ids)}"
        base = f"{server.url}/{app}/requests/{request_id}"
        reads = [0]
        try:
            answer: dict[str, Any] | None = result(body)
            error = None
        except ValueError as exc:
            answer, error = None, str(exc)

        def status(recorded: Recorded) -> Response:
            if refused := authorized(recorded):
                return refused
            reads[0] += 1
            if reads[0] <= queued:
                return Response(202, json={"status": "IN_QUEUE", "queue_position": 0, "request_id": request_id, "response_url": base})
            done = {"status": "COMPLETED", "request_id": request_id, "response_url": base, "logs": None, "metrics": {"inference_time": 0.4}}
            return Response(200, json={**done, **({"error": error, "error_type": "runner_error"} if error else {})})

        def fetch(recorded: Recorded) -> Response:
            if refused := authorized(recorded):
                return refused
            return Response(200, json=answer) if answer is not None else Response(500, json={"detail": error})

        server.route("GET", f"/{app}/requests/{request_id}/status", status)
        server.route("GET", f"/{app}/requests/{request_id}", fetch)
        return Response(200, json={"request_id": request_id, "status": "IN_QUEUE", "response_url": base, "status_url": f"{base}/status",
                                   "cancel_url": f"{base}/cancel", "queue_position": 0})

    server.route("POST", f"/{model}", submit)
    return inputs


def _predict(recorded: Recorded, images: int | None) -> Response:
    body = recorded.json
    instances = body.get("instances") if isinstance(body, dict) else None
    if not instances or not isinstance(instances[0].get("prompt"), str) or not instances[0]["prompt"]:
        return google_error(400, "instances[0].prompt is required")
    count = images if images is not None else int((body.get("parameters") or {}).get("sampleCount", 1))
    if count == 0:
        return Response(200, json={"predictions": [{"raiFilteredReason": "The prompt could not be submitted: it may violate our policies."}]})
    return Response(200, json={"predictions": [{"bytesBase64Encoded": PNG_B64, "mimeType": "image/png"} for _ in range(count)]})


def install_imagen(server: LLMServer, key: str, model: str, *, images: int | None = None) -> LLMServer:
    """The Gemini API's `POST /v1beta/models/<model>:predict` behind `x-goog-api-key`: one image
    per `sampleCount` (or `images`; 0: filtered, with its reason)."""

    def handle(recorded: Recorded) -> Response:
        if header(recorded, "x-goog-api-key") != key:
            return google_error(400, "API key not valid. Please pass a valid API key.")
        return _predict(recorded, images)

    return server.route("POST", f"/v1beta/models/{model}:predict", handle)


def install_vertex_imagen(server: LLMServer, account: ServiceAccount, model: str, region: str = "us-central1") -> LLMServer:
    """Vertex AI's `publishers/google/models/<model>:predict` behind the account's tokens."""

    def handle(recorded: Recorded) -> Response:
        return account.authorized(recorded) or _predict(recorded, None)

    return server.route("POST", f"/v1/projects/{account.project}/locations/{region}/publishers/google/models/{model}:predict", handle)
