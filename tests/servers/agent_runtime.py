"""Bedrock Agent Runtime routes for the AWS stand-in (`aws_server`): agents and knowledge bases.

- `POST /agents/{agentId}/agentAliases/{aliasId}/sessions/{sessionId}/text`: InvokeAgent. The
  agent and alias must exist (`agents`), `inputText` must be text; the reply is an AWS event
  stream (`application/vnd.amazon.eventstream`: each message's prelude, headers, JSON payload and
  CRC32s, as AWS frames it), with the answer in two `chunk` events (bytes as base64, citations in
  `attribution`), a `trace` event when `enableTrace` is set, and the session and memory ids in
  headers.
- `POST /retrieveAndGenerate`: RetrieveAndGenerate on a known knowledge base (`knowledge_bases`:
  id -> passages) with a model ARN; the answer cites the passages. `/retrieveAndGenerateStream`
  sends the same as an event stream (`output` text parts and a `citation` event).
- `POST /knowledgebases/{id}/retrieve`: Retrieve, the passages as results.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.servers.llm_server import Recorded, Response

AGENT = re.compile(r"/agents/([^/]+)/agentAliases/([^/]+)/sessions/([^/]+)/text")
RETRIEVE = re.compile(r"/knowledgebases/([^/]+)/retrieve")
MODEL_ARN = re.compile(r"arn:aws(-[a-z-]+)?:bedrock:[a-z0-9-]+:(\d{12})?:(foundation-model|inference-profile)/.+|(us|eu|apac|global)\..+")


def event_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: total and header lengths, prelude CRC, string headers, payload, message CRC."""
    encoded = b"".join(struct.pack(">B", len(k)) + k.encode() + struct.pack(">BH", 7, len(v)) + v.encode() for k, v in headers.items())
    prelude = struct.pack(">II", 16 + len(encoded) + len(payload), len(encoded))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", binascii.crc32(message))


def event(kind: str, body: dict[str, Any]) -> bytes:
    return event_message({":event-type": kind, ":content-type": "application/json", ":message-type": "event"}, json.dumps(body).encode())


@dataclass
class AgentRuntime:
    """What the agents and knowledge bases answer."""

    agents: dict[str, str] = field(default_factory=dict)
    """Agent id -> its alias id."""
    knowledge_bases: dict[str, list[str]] = field(default_factory=dict)
    answer: Callable[[str, str], str] = lambda agent, text: f"agent {agent} says: {text}"
    memory: dict[str, list[str]] = field(default_factory=dict)
    """Session id -> the inputs the agent saw in it."""


def handles(path: str) -> bool:
    return bool(AGENT.fullmatch(path) or RETRIEVE.fullmatch(path)) or path in ("/retrieveAndGenerate", "/retrieveAndGenerateStream")


def handle(runtime: AgentRuntime, path: str, recorded: Recorded, error: Callable[..., Response]) -> Response:
    """The reply to an agent-runtime request."""
    body = recorded.json if isinstance(recorded.json, dict) else {}
    if found := AGENT.fullmatch(path):
        agent, alias, session = found.groups()
        if runtime.agents.get(agent) != alias:
            return error(404, "ResourceNotFoundException", f"Failed to retrieve resource because it doesn't exist. Agent {agent} alias {alias}.")
        if not isinstance(body.get("inputText"), str):
            return error(400, "ValidationException", "inputText: required")
        runtime.memory.setdefault(session, []).append(body["inputText"])
        text = runtime.answer(agent, body["inputText"])
        half = len(text) // 2
        chunks = [{"bytes": base64.b64encode(part.encode()).decode()} for part in (text[:half], text[half:])]
        chunks[-1]["attribution"] = {"citations": [{"generatedResponsePart": {"textResponsePart": {"text": text}}, "retrievedReferences": [{"content": {"text": "agent notes"}}]}]}
        events = [event("chunk", chunks[0])]
        if body.get("enableTrace"):
            events.append(event("trace", {"agentId": agent, "sessionId": session, "trace": {"orchestrationTrace": {"rationale": {"text": "thinking"}}}}))
        events.append(event("chunk", chunks[1]))
        headers = {"Content-Type": "application/vnd.amazon.eventstream", "x-amzn-bedrock-agent-content-type": "application/json", "x-amz-bedrock-agent-session-id": session}
        if body.get("memoryId"):
            headers["x-amz-bedrock-agent-memory-id"] = str(body["memoryId"])
        return Response(200, body=b"".join(events), headers=headers)
    if path in ("/retrieveAndGenerate", "/retrieveAndGenerateStream"):
        setup = body.get("retrieveAndGenerateConfiguration") or {}
        kb = setup.get("knowledgeBaseConfiguration") or {}
        if setup.get("type") != "KNOWLEDGE_BASE" or not isinstance((body.get("input") or {}).get("text"), str):
            return error(400, "ValidationException", "input.text and retrieveAndGenerateConfiguration.type KNOWLEDGE_BASE are required")
        if kb.get("knowledgeBaseId") not in runtime.knowledge_bases:
            return error(404, "ResourceNotFoundException", f"Knowledge base {kb.get('knowledgeBaseId')} does not exist")
        if not MODEL_ARN.fullmatch(str(kb.get("modelArn"))):
            return error(400, "ValidationException", f"modelArn: {kb.get('modelArn')!r} is not a model ARN")
        passages = runtime.knowledge_bases[kb["knowledgeBaseId"]]
        answer = f"From the knowledge base: {' '.join(passages)}"
        references = [{"content": {"text": p}, "location": {"type": "S3", "s3Location": {"uri": f"s3://docs/{i}.md"}}} for i, p in enumerate(passages)]
        citation = {"generatedResponsePart": {"textResponsePart": {"text": answer, "span": {"start": 0, "end": len(answer)}}}, "retrievedReferences": references}
        if path.endswith("Stream"):
            half = len(answer) // 2
            events = [event("output", {"text": answer[:half]}), event("citation", {"citation": citation}), event("output", {"text": answer[half:]})]
            headers = {"Content-Type": "application/vnd.amazon.eventstream", "x-amzn-bedrock-knowledge-base-session-id": "kb-session-2"}
            return Response(200, body=b"".join(events), headers=headers)
        return Response(200, json={"output": {"text": answer}, "citations": [citation], "sessionId": "kb-session-1"})
    if found := RETRIEVE.fullmatch(path):
        if found.group(1) not in runtime.knowledge_bases:
            return error(404, "ResourceNotFoundException", f"Knowledge base {found.group(1)} does not exist")
        results = [{"content": {"text": p}, "score": 0.9} for p in runtime.knowledge_bases[found.group(1)]]
        return Response(200, json={"retrievalResults": results})
    return error(404, "UnknownOperationException", f"no route for {path}")
