"""Bedrock Agents (`bedrock-agent:`) and knowledge bases (`bedrock:kb:`) through boto3's
`bedrock-agent-runtime` client against the loopback AWS stand-in (SigV4 checked, the agent's
reply a real AWS event stream)."""

from __future__ import annotations

from pathlib import Path

from tests.provider_helpers import call, eval_rows
from tests.servers.aws_server import AwsServer

pytest_plugins = ["tests.aws_helpers"]  # the `aws` fixture


def test_eval_agents_and_a_knowledge_base_with_citations_for_context_assertions(aws: AwsServer, tmp_path: Path) -> None:
    aws.agent_runtime.agents.update({"ABCDEFGHIJ": "PROD_ALIAS_ID", "TECH_AGENT_ID": "TECH_ALIAS_ID"})
    aws.agent_runtime.knowledge_bases["0VMCLLCVGB"] = ["Configs are YAML files listing prompts and providers."]
    code, rows = eval_rows(tmp_path, """
        prompts: ['{{query}}']
        providers:
          - id: bedrock-agent:my-agent
            config: {agentId: ABCDEFGHIJ, agentAliasId: PROD_ALIAS_ID, enableTrace: true, memoryId: SHORT_TERM_MEMORY, sessionId: session-123}
          - id: tech-agent
            provider: bedrock-agent:TECH_AGENT_ID
            config: {agentAliasId: TECH_ALIAS_ID}
          - id: bedrock:kb:us.anthropic.claude-sonnet-4-20250514-v1:0
            label: Claude KB
            config: {knowledgeBaseId: '0VMCLLCVGB', temperature: 0.0, max_tokens: 1000, numberOfResults: 3}
        tests:
          - vars: {query: Calculate the sum of 100 and 250}
            providers: ['bedrock-agent:*']
            assert:
              - {type: contains, value: 'sum of 100'}
              - type: javascript
                value: 'context.metadata === undefined || output.length > 10'
          - vars: {query: How do I write a config?}
            providers: [Claude KB]
            assert:
              - {type: contains, value: YAML}
              - type: equals
                value: Configs are YAML files listing prompts and providers.
                transform: context.metadata.citations[0].retrievedReferences[0].content.text
        """)
    assert code == 0, [r["gradingResult"]["reason"] for r in rows]
    assert len(rows) == 3
    agent, tech, kb_only = rows
    assert agent["response"]["output"] == "agent ABCDEFGHIJ says: Calculate the sum of 100 and 250"
    assert tech["response"]["output"] == "agent TECH_AGENT_ID says: Calculate the sum of 100 and 250"
    assert tech["provider"] == {"id": "bedrock-agent:TECH_AGENT_ID", "label": "tech-agent"}
    metadata = agent["response"]["metadata"]
    assert (metadata["sessionId"], metadata["memoryId"], metadata["contentType"]) == ("session-123", "SHORT_TERM_MEMORY", "application/json")
    assert metadata["trace"][0]["trace"]["orchestrationTrace"]["rationale"]["text"] == "thinking"
    assert metadata["citations"][0]["retrievedReferences"][0]["content"]["text"] == "agent notes"
    assert "trace" not in tech["response"]["metadata"] and tech["response"]["metadata"]["sessionId"].startswith("session-")
    assert kb_only["response"]["output"].startswith("From the knowledge base: Configs are YAML")
    invocations = [r for r in aws.requests if r.path.endswith("/text")]
    assert {r.path for r in invocations} >= {"/agents/ABCDEFGHIJ/agentAliases/PROD_ALIAS_ID/sessions/session-123/text"}
    sent = next(r.json for r in invocations if "session-123" in r.path)
    assert sent == {"inputText": "Calculate the sum of 100 and 250", "enableTrace": True, "memoryId": "SHORT_TERM_MEMORY"}
    (rag, *_) = [r.json for r in aws.requests if r.path == "/retrieveAndGenerate"]
    kb_setup = rag["retrieveAndGenerateConfiguration"]["knowledgeBaseConfiguration"]
    assert kb_setup["modelArn"] == "us.anthropic.claude-sonnet-4-20250514-v1:0"
    assert kb_setup["generationConfiguration"] == {"inferenceConfig": {"textInferenceConfig": {"temperature": 0.0, "maxTokens": 1000}}}
    assert kb_setup["retrievalConfiguration"] == {"vectorSearchConfiguration": {"numberOfResults": 3}}
    assert all(a.startswith("sigv4:") for a in aws.auth_seen)


def test_agent_errors_missing_alias_and_knowledge_base_retrieve(aws: AwsServer) -> None:
    aws.agent_runtime.agents["AGENT1"] = "ALIAS1"
    aws.agent_runtime.knowledge_bases["KB00000001"] = ["first passage", "second passage"]
    missing = call({"id": "bedrock-agent:AGENT1", "config": {"agentAliasId": "WRONG"}}, "hi")
    assert missing.error == "Agent or alias not found. Verify agentId: AGENT1 and agentAliasId: WRONG"
    assert call("bedrock-agent:AGENT1", "hi").error == "Agent Alias ID is required. Set agentAliasId in the provider config."
    found = call({"id": "bedrock:agents:AGENT1", "config": {"agentAliasId": "ALIAS1"}}, "hello")
    assert found.error is None and found.output == "agent AGENT1 says: hello"
    retrieved = call({"id": "bedrock:kb:default", "config": {"knowledgeBaseId": "KB00000001", "operation": "retrieve"}}, "q")
    assert retrieved.error is None and [r["content"]["text"] for r in retrieved.metadata["retrievalResults"]] == ["first passage", "second passage"]
    assert call({"id": "bedrock:kb:default", "config": {"knowledgeBaseId": "KB00000001"}}, "q").error == (
        "A generation model is required for Bedrock Knowledge Bases. Set bedrock:kb:<model-id> or provide config.modelArn."
    )
    arn = call({"id": "bedrock:kb:amazon.nova-pro-v1:0", "config": {"knowledgeBaseId": "KBNONE0001", "top_k": 5}}, "q")
    assert arn.error is not None and arn.error.startswith("Bedrock Knowledge Base API error: ResourceNotFoundException (404)")
    sent = [r.json for r in aws.requests if r.path == "/retrieveAndGenerate"][-1]["retrieveAndGenerateConfiguration"]["knowledgeBaseConfiguration"]
    assert sent["modelArn"] == "arn:aws:bedrock:us-west-2::foundation-model/amazon.nova-pro-v1:0"
    assert sent["generationConfiguration"] == {"additionalModelRequestFields": {"inferenceConfig": {"topK": 5}}}


def test_knowledge_base_streaming_reads_the_event_stream(aws: AwsServer) -> None:
    aws.agent_runtime.knowledge_bases["KB00000002"] = ["Streams arrive in parts."]
    spec = {"id": "bedrock:kb:anthropic.claude-3-haiku-20240307-v1:0", "config": {"knowledgeBaseId": "KB00000002", "streaming": True}}
    response = call(spec, "how?")
    assert response.error is None
    assert response.output == "From the knowledge base: Streams arrive in parts."
    assert response.metadata["sessionId"] == "kb-session-2"
    assert response.metadata["citations"][0]["retrievedReferences"][0]["content"]["text"] == "Streams arrive in parts."
    assert [r.path for r in aws.requests] == ["/retrieveAndGenerateStream"]
