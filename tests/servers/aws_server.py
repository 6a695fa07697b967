"""Loopback stand-ins for Bedrock Runtime, SageMaker Runtime and STS, reached through boto3.

Like the real services, every request must carry a valid signature: a SigV4 `Authorization`
header whose credential scope names the expected region and service (`bedrock`, `sagemaker`)
and whose signature verifies with a known secret key (and the session token, when one was
issued), or, for Bedrock, `Bearer <API key>`. Otherwise the reply is AWS's 403 error.

- `POST /model/{modelId}/converse`: the Converse API (messages, system, inferenceConfig checked).
- `POST /model/{modelId}/invoke`: InvokeModel, with the body each model family takes checked
  (Claude Messages, Nova, Titan text and embeddings, Llama, Mistral, Cohere, AI21, DeepSeek and
  the OpenAI-shaped families) and the reply in that family's format. With a guardrail header,
  the reply carries `amazon-bedrock-guardrailAction`: INTERVENED (and the guardrail's canned
  text) when the prompt holds a word in `guardrail_blocks`, else NONE.
- Nova 2 reasoning (`reasoningConfig` of type `enabled`, in the body or in Converse's
  `additionalModelRequestFields`) refuses sampling parameters, and a token cap at `high` effort,
  and answers with a `reasoningContent` block before the text.
- Bedrock Agent Runtime (InvokeAgent's event stream, RetrieveAndGenerate, Retrieve): see `agent_runtime`.
- `POST /endpoints/{name}/invocations`: SageMaker InvokeEndpoint (`endpoints` maps a name to a
  function of the JSON body that returns the JSON reply).
- `POST /` with `Action=AssumeRoleWithWebIdentity`: STS, trading a web identity token for
  temporary keys (as in GitHub Actions with aws-actions/configure-aws-credentials).

Errors are AWS's: `fail_next(status, code, message, retry_after)` queues error replies
(ThrottlingException 429, ValidationException 400, ServiceUnavailableException 503, ...), and an
invalid body is a 400 ValidationException.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.servers import agent_runtime
from tests.servers.llm_server import LLMServer, Recorded, Response, bag_of_words_embedding

KEY_ID = "AKIACIGRADETEST0001"
SECRET = "ci-grade-test-secret-key-0123456789abcdef"
REGION = "us-west-2"
_AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$")
_PATHS = [
    (re.compile(r"/model/([^/]+)/converse"), "bedrock", "converse"),
    (re.compile(r"/model/([^/]+)/invoke"), "bedrock", "invoke"),
    (re.compile(r"/endpoints/([^/]+)/invocations"), "sagemaker", "invocations"),
]


def aws_error(status: int, code: str, message: str, retry_after: str | None = None) -> Response:
    headers = {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return Response(status, json={"message": message}, headers=headers)


def last_text(body: dict[str, Any]) -> str:
    """The last user turn's text, in whichever request shape the body has."""
    for key in ("inputText", "prompt", "message"):
        if isinstance(body.get(key), str):
            turns = re.findall(r"user<\|(?:end_header_id|header_end)\|>\n\n(.*?)<\|eot(?:_id)?\|>", body[key], re.S)
            return turns[-1] if turns else str(body[key]).removesuffix("<think>\n").strip()
    messages = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    content = messages[-1].get("content") if messages else ""
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


class AwsServer(LLMServer):
    """Bedrock Runtime, SageMaker Runtime and STS on one loopback port."""

    def __init__(self, region: str = "us-east-1") -> None:
        super().__init__()
        self.region = region
        self.keys: dict[str, tuple[str, str | None]] = {}
        """Access key id -> (secret, session token) that sign valid requests."""
        self.bearer_tokens: set[str] = set()
        self.reply: Callable[[str, dict[str, Any]], str] = lambda model, body: f"echo: {last_text(body)}"
        """The model's answer text for a request (model id, body)."""
        self.endpoints: dict[str, Callable[[Any], Any]] = {}
        self.agent_runtime = agent_runtime.AgentRuntime()
        """The agents and knowledge bases of Bedrock Agent Runtime (`agent_runtime`)."""
        self.web_identity: tuple[str, str] | None = None
        """(role ARN, token) that STS accepts; it then issues the key `ASIAWEBIDENTITY`."""
        self.auth_seen: list[str] = []
        self.guardrail_blocks: set[str] = set()
        """Words a guardrail intervenes on (lower case)."""
        self._errors: list[Response] = []
        self._error_lock = threading.Lock()

    def fail_next(self, status: int, code: str, message: str, retry_after: str | None = None, times: int = 1) -> AwsServer:
        with self._error_lock:
            self._errors.extend(aws_error(status, code, message, retry_after) for _ in range(times))
        return self

    def handle(self, recorded: Recorded) -> Any:
        path = urllib.parse.unquote(recorded.path.split("?")[0])
        if recorded.method == "POST" and path == "/":
            return self._sts(recorded)
        if recorded.method == "POST" and agent_runtime.handles(path):
            if (denied := self._check_auth(recorded, "bedrock")) is not None:
                return denied
            return agent_runtime.handle(self.agent_runtime, path, recorded, aws_error)
        for pattern, service, kind in _PATHS:
            found = pattern.fullmatch(path)
            if found and recorded.method == "POST":
                if (denied := self._check_auth(recorded, service)) is not None:
                    return denied
                with self._error_lock:
                    if self._errors:
                        return self._errors.pop(0)
                body = recorded.json
                if kind == "invocations":
                    handler = self.endpoints.get(found.group(1))
                    if handler is None:
                        return aws_error(400, "ValidationError", f"Endpoint {found.group(1)} of account 123456789012 not found.")
                    return Response(200, json=handler(body))
                if not isinstance(body, dict):
                    return aws_error(400, "ValidationException", "Malformed input request, please reformat your input and try again.")
                try:
                    reply = self._converse(found.group(1), body) if kind == "converse" else self._invoke(found.group(1), body, recorded)
                except ValueError as exc:
                    return aws_error(400, "ValidationException", str(exc))
                return Response(200, json=reply)
        return aws_error(404, "UnknownOperationException", f"no route for {recorded.method} {path}")

    # -- auth -------------------------------------------------------------------------------------

    def _check_auth(self, recorded: Recorded, service: str) -> Response | None:
        headers = {k.lower(): v for k, v in recorded.headers.items()}
        auth = headers.get("authorization", "")
        if auth.startswith("Bearer ") and service == "bedrock":
            self.auth_seen.append("bearer")
            return None if auth[7:] in self.bearer_tokens else aws_error(403, "AccessDeniedException", "Authentication failed: invalid API key")
        found = _AUTH.match(auth)
        if not found:
            return aws_error(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
        key, date, region, scope_service, signed, signature = found.groups()
        amz_date = headers.get("x-amz-date", "")
        if key not in self.keys or region != self.region or scope_service != service or not amz_date.startswith(date):
            return aws_error(403, "UnrecognizedClientException", f"The security token included in the request is invalid ({key}/{region}/{scope_service}).")
        if not {"host", "x-amz-date"} <= set(signed.split(";")):
            return aws_error(403, "InvalidSignatureException", "host and x-amz-date must be signed")
        secret, token = self.keys[key]
        if token is not None and headers.get("x-amz-security-token") != token:
            return aws_error(403, "UnrecognizedClientException", "The security token included in the request is invalid.")
        request = AWSRequest(recorded.method, f"http://{headers['host']}{recorded.path}", {h: headers[h] for h in signed.split(";")}, recorded.body)
        request.context["timestamp"] = amz_date
        signer = SigV4Auth(Credentials(key, secret, token), service, region)
        if signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request) != signature:
            return aws_error(403, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided.")
        self.auth_seen.append(f"sigv4:{key}")
        return None

    def _sts(self, recorded: Recorded) -> Response:
        form = dict(urllib.parse.parse_qsl(recorded.body.decode()))
        if form.get("Action") != "AssumeRoleWithWebIdentity" or self.web_identity is None:
            return Response(400, body=b"<ErrorResponse><Error><Code>InvalidAction</Code><Message>no</Message></Error></ErrorResponse>", headers={"Content-Type": "text/xml"})
        if (form.get("RoleArn"), form.get("WebIdentityToken")) != self.web_identity:
            xml = b"<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>bad token</Message></Error></ErrorResponse>"
            return Response(400, body=xml, headers={"Content-Type": "text/xml"})
        self.keys["ASIAWEBIDENTITY"] = ("web-identity-secret-key-0123456789", "web-identity-session-token-0123456789")
        xml = (
            '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>'
            "<Credentials><AccessKeyId>ASIAWEBIDENTITY</AccessKeyId><SecretAccessKey>web-identity-secret-key-0123456789</SecretAccessKey>"
            "<SessionToken>web-identity-session-token-0123456789</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>"
            "<SubjectFromWebIdentityToken>repo:org/repo</SubjectFromWebIdentityToken>"
            f"<AssumedRoleUser><Arn>{form['RoleArn']}/ci</Arn><AssumedRoleId>AROA:ci</AssumedRoleId></AssumedRoleUser>"
            "</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>"
        )
        return Response(200, body=xml.encode(), headers={"Content-Type": "text/xml"})

    # -- Converse and InvokeModel -----------------------------------------------------------------

    def _converse(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or messages[0].get("role") != "user":
            raise ValueError("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
        for message in messages:
            if message.get("role") not in ("user", "assistant") or not isinstance(message.get("content"), list):
                raise ValueError("messages: each message needs a role (user or assistant) and a content list")
        if not set(body.get("inferenceConfig") or {}) <= {"maxTokens", "temperature", "topP", "stopSequences"}:
            raise ValueError("inferenceConfig: unknown field")
        reasoning = _nova_reasoning(model, (body.get("additionalModelRequestFields") or {}).get("reasoningConfig"), body.get("inferenceConfig") or {}, ("maxTokens", "temperature", "topP"))
        text = self.reply(model, body)
        tokens_in, tokens_out = max(1, len(json.dumps(messages)) // 4), max(1, len(text) // 4)
        if body.get("toolConfig", {}).get("toolChoice", {}).get("tool"):
            name = body["toolConfig"]["toolChoice"]["tool"]["name"]
            content: list[dict[str, Any]] = [{"toolUse": {"toolUseId": "tooluse_1", "name": name, "input": json.loads(text)}}]
            stop = "tool_use"
        else:
            content, stop = [*reasoning, {"text": text}], "end_turn"
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out, "totalTokens": tokens_in + tokens_out},
            "metrics": {"latencyMs": 5},
        }

    def _invoke(self, model: str, body: dict[str, Any], recorded: Recorded) -> dict[str, Any]:
        headers = {k.lower(): v for k, v in recorded.headers.items()}
        if headers.get("content-type") != "application/json":
            raise ValueError("Content-Type must be application/json")
        bare = re.sub(r"^(us|eu|apac|global|us-gov|jp|au)\.", "", model)
        if bare.startswith("amazon.titan-embed") or bare.startswith("cohere.embed"):
            return self._embed(bare, body)
        guarded = "x-amzn-bedrock-guardrailidentifier" in headers
        intervened = guarded and any(word in json.dumps(body).lower() for word in self.guardrail_blocks)
        text = "Sorry, the model cannot answer this question." if intervened else self.reply(model, body)
        reply = self._invoke_reply(bare, body, text)
        if guarded:
            reply["amazon-bedrock-guardrailAction"] = "INTERVENED" if intervened else "NONE"
        return reply

    def _invoke_reply(self, bare: str, body: dict[str, Any], text: str) -> dict[str, Any]:
        count_in, count_out = max(1, len(json.dumps(body)) // 4), max(1, len(text) // 4)
        openai_usage = {"prompt_tokens": count_in, "completion_tokens": count_out, "total_tokens": count_in + count_out}
        if bare.startswith("anthropic."):
            _require(body, {"anthropic_version": str, "max_tokens": int, "messages": list})
            if body["anthropic_version"] != "bedrock-2023-05-31":
                raise ValueError("anthropic_version: invalid version")
            usage = {"input_tokens": count_in, "output_tokens": count_out}
            return {"id": "msg_bdrk_1", "type": "message", "role": "assistant", "model": bare, "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": usage}
        if bare.startswith("amazon.nova"):
            _require(body, {"messages": list})
            if any(not isinstance(m.get("content"), list) for m in body["messages"]):
                raise ValueError("messages.content: expected a list of content blocks")
            reasoning = _nova_reasoning(bare, body.get("reasoningConfig"), body.get("inferenceConfig") or {}, ("max_new_tokens", "temperature", "top_p"))
            usage = {"inputTokens": count_in, "outputTokens": count_out, "totalTokens": count_in + count_out}
            return {"output": {"message": {"role": "assistant", "content": [*reasoning, {"text": text}]}}, "stopReason": "end_turn", "usage": usage}
        if bare.startswith("amazon.titan-text"):
            _require(body, {"inputText": str, "textGenerationConfig": dict})
            return {"inputTextTokenCount": count_in, "results": [{"tokenCount": count_out, "outputText": text, "completionReason": "FINISH"}]}
        if bare.startswith("meta.llama"):
            _require(body, {"prompt": str, "max_gen_len": int})
            return {"generation": text, "prompt_token_count": count_in, "generation_token_count": count_out, "stop_reason": "stop"}
        if bare.startswith("mistral.") and "prompt" in body:
            _require(body, {"prompt": str, "max_tokens": int})
            return {"outputs": [{"text": text, "stop_reason": "stop"}]}
        if bare.startswith("cohere.command-r"):
            _require(body, {"message": str, "chat_history": list})
            return {"text": text, "finish_reason": "COMPLETE", "chat_history": body["chat_history"]}
        if bare.startswith("deepseek.r1"):
            _require(body, {"prompt": str})
            return {"choices": [{"text": f"thinking...</think>{text}", "stop_reason": "stop"}], "usage": openai_usage}
        _require(body, {"messages": list})  # AI21, Mistral chat, DeepSeek v3, gpt-oss, Qwen and the OpenAI-shaped families
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        return {"id": "chatcmpl-1", "object": "chat.completion", "model": bare, "choices": [choice], "usage": openai_usage}

    def _embed(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        if model.startswith("cohere.embed"):
            _require(body, {"texts": list, "input_type": str})
            return {"id": "emb-1", "response_type": "embeddings_floats", "texts": body["texts"], "embeddings": [bag_of_words_embedding(t) for t in body["texts"]]}
        _require(body, {"inputText": str})
        return {"embedding": bag_of_words_embedding(body["inputText"]), "inputTextTokenCount": max(1, len(body["inputText"]) // 4)}


def _nova_reasoning(model: str, reasoning: Any, inference: dict[str, Any], limits: tuple[str, str, str]) -> list[dict[str, Any]]:
    """Nova 2's reasoning rules (`limits`: the token cap's, temperature's and top-p's field names);
    the reasoning block to answer with first."""
    if "nova-2" not in model or not isinstance(reasoning, dict) or reasoning.get("type") != "enabled":
        return []
    cap, *sampling = limits
    if any(name in inference for name in sampling):
        raise ValueError("temperature and topP are not supported when reasoning is enabled")
    if reasoning.get("maxReasoningEffort") == "high" and cap in inference:
        raise ValueError(f"{cap} is not supported when maxReasoningEffort is high")
    return [{"reasoningContent": {"reasoningText": {"text": "Let me think it through."}}}]


def _require(body: dict[str, Any], fields: dict[str, type]) -> None:
    for name, kind in fields.items():
        if not isinstance(body.get(name), kind) or isinstance(body.get(name), bool):
            raise ValueError(f"Malformed input request: #: required key [{name}] not found or not a {kind.__name__}, please reformat your input and try again.")
