"""InvokeModel request and response bodies per model family, as promptfoo's `bedrock:<model>` sends them.

Each `Family` builds the JSON body from the prompt and config and reads the output and token
counts from the reply. `family_for(model, config)` picks one as promptfoo does: by the model id
(a geo prefix such as `us.` or `eu.` is ignored), or for an inference-profile ARN by
`config.inferenceModelType`. Defaults (temperature 0, max tokens 1024 where promptfoo sets them)
and the environment variables promptfoo reads (AWS_BEDROCK_MAX_TOKENS, AWS_BEDROCK_TEMPERATURE,
AWS_BEDROCK_TOP_P, AWS_BEDROCK_MAX_GEN_LEN, MISTRAL_*, COHERE_*) are promptfoo's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ci_grade.errors import UnknownProviderError
from ci_grade.providers.anthropic import output_text as claude_output
from ci_grade.providers.anthropic import refuses_sampling
from ci_grade.providers.base import parse_chat_messages
from ci_grade.providers.bedrock_converse import as_dict, chat_messages, role_turns
from ci_grade.results.usage import TokenUsage

EnvValue = Callable[[str], str | None]
Body = Callable[[str, dict[str, Any], EnvValue, str], dict[str, Any]]
GEO_PREFIX = re.compile(r"^(?:us|us-gov|eu|apac|global|jp|au|ca|in)\.")


@dataclass(frozen=True)
class Family:
    name: str
    body: Body
    output: Callable[[dict[str, Any], dict[str, Any]], Any]
    usage: Callable[[dict[str, Any]], TokenUsage]


def _number(text: str | None, cast: Callable[[str], Any]) -> Any:
    try:
        return None if text in (None, "") else cast(str(text))
    except ValueError:
        return None


def _put(params: dict[str, Any], key: str, value: Any, env: str | None = None, default: Any = None, *, read: EnvValue, cast: Callable[[str], Any] = float) -> None:
    """promptfoo's `addConfigParam`: the config value, else the variable, else the default; unset if none."""
    if value is None and env is not None:
        value = _number(read(env), cast)
    if value is None:
        value = default
    if value is not None:
        params[key] = value


def _messages(prompt: str) -> list[dict[str, Any]]:
    return parse_chat_messages(prompt)


def _openai_usage(data: dict[str, Any]) -> TokenUsage:
    usage = as_dict(data.get("usage")) or data
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    details = as_dict(usage.get("prompt_tokens_details"))
    reasoning = as_dict(usage.get("completion_tokens_details")).get("reasoning_tokens")
    return TokenUsage.of(_int(prompt), _int(completion), _int(usage.get("total_tokens")), cached=_int(details.get("cached_tokens")), reasoning=_int(reasoning))


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _first_message(data: dict[str, Any]) -> Any:
    if data.get("error"):
        raise ValueError(f"API error: {data['error']}")
    choices = data.get("choices") or [{}]
    return (choices[0].get("message") or {}).get("content")


# -- Anthropic Claude (Messages body) ------------------------------------------------------------


def _claude_body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
    chat = chat_messages(prompt)
    system: Any = None
    if chat is not None:
        systems = [m for m in chat if m["role"] == "system"]
        others = [m for m in chat if m["role"] != "system"]
        if len(systems) == 1 and not others:  # a lone system prompt (a grader's) is sent as the user turn
            others, systems = [{"role": "user", "content": systems[0].get("content")}], []
        messages = [{"role": m["role"], "content": m.get("content") if isinstance(m.get("content"), list) else [{"type": "text", "text": m.get("content")}]} for m in others]
        system = systems[0].get("content") if systems else None
    else:
        turns, system = role_turns(prompt)
        messages = [{"role": role, "content": [{"type": "text", "text": text}]} for role, text in turns]
    params: dict[str, Any] = {"messages": messages, "anthropic_version": config.get("anthropic_version") or "bedrock-2023-05-31"}
    _put(params, "max_tokens", config.get("max_tokens"), "AWS_BEDROCK_MAX_TOKENS", 1024, read=env, cast=int)
    if not refuses_sampling(model):
        _put(params, "temperature", config.get("temperature"), None, 0, read=env)
    for key in ("tools", "tool_choice", "thinking"):
        if config.get(key) is not None:
            params[key] = config[key]
    if system:
        params["system"] = system
    return params


def _claude_usage(data: dict[str, Any]) -> TokenUsage:
    usage = data.get("usage") or {}
    read, written = _int(usage.get("cache_read_input_tokens")) or 0, _int(usage.get("cache_creation_input_tokens")) or 0
    fresh = _int(usage.get("input_tokens", usage.get("prompt_tokens"))) or 0
    return TokenUsage.of(fresh + read + written, _int(usage.get("output_tokens", usage.get("completion_tokens"))), cached=read)


CLAUDE = Family("claude", _claude_body, lambda c, d: claude_output([b for b in d.get("content") or [] if isinstance(b, dict)], bool(c.get("showThinking", True))), _claude_usage)


# -- Amazon Nova and Titan ---------------------------------------------------------------------


def _nova_body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
    chat = chat_messages(prompt)
    system: Any = None
    if chat is not None:
        messages = [{"role": m["role"], "content": m.get("content") if isinstance(m.get("content"), list) else [{"text": m.get("content")}]} for m in chat if m["role"] != "system"]
        found = next((m for m in chat if m["role"] == "system"), None)
        system = [{"text": found.get("content")}] if found else None
    else:
        turns, text = role_turns(prompt)
        messages, system = [{"role": r, "content": [{"text": t}]} for r, t in turns], ([{"text": text}] if text else None)
    params: dict[str, Any] = {"messages": messages}
    if system:
        params["system"] = system
    interface = dict(config.get("interfaceConfig") or {})
    reasoning = as_dict(config.get("reasoningConfig"))
    reasoning_on = "nova-2" in model and reasoning.get("type") == "enabled"
    inference = {k: v for k, v in interface.items() if k not in ("max_new_tokens", "temperature")}
    if not (reasoning_on and reasoning.get("maxReasoningEffort") == "high"):
        _put(inference, "max_new_tokens", interface.get("max_new_tokens"), "AWS_BEDROCK_MAX_TOKENS", read=env, cast=int)
    if not reasoning_on:
        _put(inference, "temperature", interface.get("temperature"), "AWS_BEDROCK_TEMPERATURE", 0, read=env)
    params["inferenceConfig"] = inference
    if config.get("toolConfig"):
        params["toolConfig"] = config["toolConfig"]
    if "nova-2" in model and reasoning:
        params["reasoningConfig"] = reasoning
    return params


def _nova_output(config: dict[str, Any], data: dict[str, Any]) -> Any:
    blocks = [b for b in ((data.get("output") or {}).get("message") or {}).get("content") or [] if isinstance(b, dict)]
    if any((b.get("toolUse") or {}).get("toolUseId") for b in blocks):
        return "\n\n".join(json.dumps(b["toolUse"]) for b in blocks if b.get("toolUse"))
    parts = []
    for block in blocks:
        reasoning = ((block.get("reasoningContent") or {}).get("reasoningText") or {}).get("text")
        if reasoning and config.get("showThinking", True) is not False:
            parts.append(f"<thinking>\n{reasoning}\n</thinking>")
        elif "text" in block:
            parts.append(str(block["text"]))
    return "\n\n".join(parts)


def _nova_usage(data: dict[str, Any]) -> TokenUsage:
    usage = data.get("usage") or {}
    cached = _int(usage.get("cacheReadInputTokenCount", usage.get("cacheReadInputTokens")))
    return TokenUsage.of(_int(usage.get("inputTokens")), _int(usage.get("outputTokens")), _int(usage.get("totalTokens")), cached=cached)


def _titan_body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
    given = config.get("textGenerationConfig") or {}
    generation: dict[str, Any] = {}
    _put(generation, "maxTokenCount", given.get("maxTokenCount"), "AWS_BEDROCK_MAX_TOKENS", 1024, read=env, cast=int)
    _put(generation, "temperature", given.get("temperature"), "AWS_BEDROCK_TEMPERATURE", 0, read=env)
    _put(generation, "topP", given.get("topP"), "AWS_BEDROCK_TOP_P", 1, read=env)
    _put(generation, "stopSequences", given.get("stopSequences"), read=env)
    return {"inputText": prompt, "textGenerationConfig": generation}


def _titan_usage(data: dict[str, Any]) -> TokenUsage:
    results = data.get("results") or [{}]
    return TokenUsage.of(_int(data.get("inputTextTokenCount")), _int(results[0].get("tokenCount")))


NOVA = Family("nova", _nova_body, _nova_output, _nova_usage)
TITAN = Family("titan", _titan_body, lambda c, d: (d.get("results") or [{}])[0].get("outputText"), _titan_usage)


# -- Meta Llama (prompt formats per version) -----------------------------------------------------


def _text(content: Any, model: str) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        if any(isinstance(b, dict) and (b.get("type") in ("image", "image_url") or "image" in b or "image_url" in b) for b in content):
            raise ValueError(f"images in the prompt: the InvokeModel Llama body takes text only; use bedrock:converse:{model}")
        return " ".join(str(b if isinstance(b, str) else b.get("text", "")) for b in content).strip()
    return str(content).strip()


def _llama2(messages: list[dict[str, Any]], model: str) -> str:
    text, system_done = "<s>", False
    for index, message in enumerate(messages):
        content, role = _text(message.get("content"), model), message["role"]
        if role == "system":
            if not system_done:
                text += f"[INST] <<SYS>>\n{content}\n<</SYS>>\n\n"
                system_done = True
        elif role == "user":
            if index == 0:
                text += f"{content} [/INST]" if system_done else f"[INST] {content} [/INST]"
            elif messages[index - 1]["role"] == "assistant":
                text += f"<s>[INST] {content} [/INST]"
            else:
                text += f"{content} [/INST]"
        elif role == "assistant":
            text += f" {content} </s>"
        else:
            raise ValueError(f"Unexpected role: {role}")
    return text if messages else ""


def _llama3(messages: list[dict[str, Any]], model: str) -> str:
    turns = "".join(f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{_text(m.get('content'), model)}<|eot_id|>" for m in messages)
    return f"<|begin_of_text|>{turns}<|start_header_id|>assistant<|end_header_id|>"


def _llama4(messages: list[dict[str, Any]], model: str) -> str:
    turns = "".join(f"<|header_start|>{m['role']}<|header_end|>\n\n{_text(m.get('content'), model)}<|eot|>" for m in messages)
    return f"<|begin_of_text|>{turns}<|header_start|>assistant<|header_end|>"


def _llama(format_prompt: Callable[[list[dict[str, Any]], str], str]) -> Body:
    def body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
        params: dict[str, Any] = {"prompt": format_prompt(_messages(prompt), model)}
        _put(params, "temperature", config.get("temperature"), "AWS_BEDROCK_TEMPERATURE", 0, read=env)
        _put(params, "top_p", config.get("top_p"), "AWS_BEDROCK_TOP_P", 1, read=env)
        _put(params, "max_gen_len", config.get("max_gen_len"), "AWS_BEDROCK_MAX_GEN_LEN", 1024, read=env, cast=int)
        return params

    return body


def _llama_usage(data: dict[str, Any]) -> TokenUsage:
    if isinstance(data.get("usage"), dict):
        return _openai_usage(data)
    return TokenUsage.of(_int(data.get("prompt_token_count")), _int(data.get("generation_token_count")))


def _llama_family(name: str, format_prompt: Callable[[list[dict[str, Any]], str], str]) -> Family:
    return Family(name, _llama(format_prompt), lambda c, d: d.get("generation"), _llama_usage)


LLAMA2, LLAMA3, LLAMA4 = _llama_family("llama2", _llama2), _llama_family("llama3", _llama3), _llama_family("llama4", _llama4)


# -- Mistral, Cohere, AI21, DeepSeek, OpenAI gpt-oss, Qwen and the OpenAI-shaped families ----------


def _mistral_body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
    params: dict[str, Any] = {"prompt": prompt, "stop": []}
    _put(params, "max_tokens", config.get("max_tokens"), "MISTRAL_MAX_TOKENS", 1024, read=env, cast=int)
    _put(params, "temperature", config.get("temperature"), "MISTRAL_TEMPERATURE", 0, read=env)
    _put(params, "top_p", config.get("top_p"), "MISTRAL_TOP_P", 1, read=env)
    _put(params, "top_k", config.get("top_k"), "MISTRAL_TOP_K", read=env)
    return params


def _mistral_chat_body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
    params: dict[str, Any] = {"messages": _messages(prompt)}
    _put(params, "max_tokens", config.get("max_tokens"), "MISTRAL_MAX_TOKENS", 1024, read=env, cast=int)
    _put(params, "temperature", config.get("temperature"), "MISTRAL_TEMPERATURE", 0, read=env)
    _put(params, "top_p", config.get("top_p"), "MISTRAL_TOP_P", 1, read=env)
    return params


def _cohere_r_body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
    messages = _messages(prompt)
    if not all(isinstance(m.get("content"), str) for m in messages):
        raise ValueError(f"Message content must be a string, but got: {json.dumps(messages)}")
    params: dict[str, Any] = {
        "message": messages[-1]["content"],
        "chat_history": [{"role": "CHATBOT" if m["role"] == "assistant" else "USER", "message": m["content"]} for m in messages[:-1]],
    }
    keys = ("documents", "search_queries_only", "preamble", "max_tokens", "temperature", "p", "k", "prompt_truncation", "frequency_penalty", "presence_penalty", "seed", "return_prompt", "tools", "tool_results", "raw_prompting")
    params.update({key: config[key] for key in keys if config.get(key) is not None})
    return params


def _cohere_body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
    params: dict[str, Any] = {"prompt": prompt}
    _put(params, "temperature", config.get("temperature"), "COHERE_TEMPERATURE", 0, read=env)
    _put(params, "p", config.get("p"), "COHERE_P", 1, read=env)
    _put(params, "k", config.get("k"), "COHERE_K", 0, read=env, cast=int)
    _put(params, "max_tokens", config.get("max_tokens"), "COHERE_MAX_TOKENS", 1024, read=env, cast=int)
    defaults = {"return_likelihoods": "NONE", "stream": False, "num_generations": 1, "logit_bias": {}, "truncate": "NONE"}
    params.update({key: config.get(key, default) for key, default in defaults.items()})
    return params


def _cohere_usage(data: dict[str, Any]) -> TokenUsage:
    billed = (data.get("meta") or {}).get("billed_units") or {}
    return TokenUsage.of(_int(billed.get("input_tokens")), _int(billed.get("output_tokens")))


def _chat_body(temperature: float | None, max_key: str = "max_tokens", extra: tuple[str, ...] = ()) -> Body:
    """An OpenAI-shaped body (`messages`) with promptfoo's defaults for the family."""

    def body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
        params: dict[str, Any] = {"messages": _messages(prompt)}
        _put(params, max_key, config.get(max_key), "AWS_BEDROCK_MAX_TOKENS", read=env, cast=int)
        _put(params, "temperature", config.get("temperature"), "AWS_BEDROCK_TEMPERATURE", temperature, read=env)
        _put(params, "top_p", config.get("top_p"), "AWS_BEDROCK_TOP_P", 1.0 if temperature is not None else None, read=env)
        if config.get("stop"):
            params["stop"] = config["stop"]
        _put(params, "frequency_penalty", config.get("frequency_penalty"), "AWS_BEDROCK_FREQUENCY_PENALTY", read=env)
        _put(params, "presence_penalty", config.get("presence_penalty"), "AWS_BEDROCK_PRESENCE_PENALTY", read=env)
        params.update({key: config[key] for key in extra if config.get(key) is not None})
        return params

    return body


def _deepseek_body(prompt: str, config: dict[str, Any], env: EnvValue, model: str) -> dict[str, Any]:
    params: dict[str, Any] = {"prompt": f"\n{prompt}\n<think>\n"}
    _put(params, "max_tokens", config.get("max_tokens"), "AWS_BEDROCK_MAX_TOKENS", read=env, cast=int)
    _put(params, "temperature", config.get("temperature"), "AWS_BEDROCK_TEMPERATURE", 0, read=env)
    _put(params, "top_p", config.get("top_p"), "AWS_BEDROCK_TOP_P", 1.0, read=env)
    return params


def _deepseek_output(config: dict[str, Any], data: dict[str, Any]) -> Any:
    if data.get("error"):
        raise ValueError(f"DeepSeek API error: {data['error']}")
    text = ((data.get("choices") or [{}])[0]).get("text")
    if not text:
        return None
    thinking, _, answer = text.partition("</think>")
    return answer.strip() if thinking and answer and config.get("showThinking") is False else text


def _reasoning_output(config: dict[str, Any], data: dict[str, Any]) -> Any:
    """gpt-oss: the reply as is, unless `showThinking` says to surface (`Thinking: ...`) or drop
    the leading `<reasoning>` block."""
    content = _first_message(data)
    show = config.get("showThinking")
    found = re.match(r"^\s*<reasoning>([\s\S]*?)</reasoning>\s*([\s\S]*)$", content) if isinstance(content, str) and show is not None else None
    if found is None:
        return content
    reasoning, answer = found.groups()
    if show:
        return f"Thinking: {reasoning.strip()}\n\n{answer}"
    return content if not answer.strip() else answer


def _tool_calls_output(config: dict[str, Any], data: dict[str, Any]) -> Any:
    """Qwen and the OpenAI-shaped families: tool calls as `Called function ...` lines after the
    text; `showThinking: false` drops a leading `<think>`/`<reasoning>` block."""
    content = _first_message(data)
    message = ((data.get("choices") or [{}])[0]).get("message") or {}
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        lines = "\n".join(f"Called function {(c.get('function') or {}).get('name')} with arguments: {(c.get('function') or {}).get('arguments')}" for c in calls)
        return f"{content}\n\n{lines}" if content else lines
    if isinstance(content, str) and config.get("showThinking") is False:
        found = re.match(r"^\s*<(think|reasoning)>[\s\S]*?</\1>", content)
        if found:
            return content[found.end() :].strip() or content
    return content


TOOLS = ("reasoning_effort", "tools", "tool_choice")
MISTRAL = Family("mistral", _mistral_body, lambda c, d: ((d.get("outputs") or [{}])[0]).get("text"), _openai_usage)
MISTRAL_CHAT = Family("mistral-chat", _mistral_chat_body, lambda c, d: _first_message(d), _openai_usage)
COHERE_R = Family("cohere-r", _cohere_r_body, lambda c, d: d.get("text"), _cohere_usage)
COHERE = Family("cohere", _cohere_body, lambda c, d: ((d.get("generations") or [{}])[0]).get("text"), _cohere_usage)
AI21 = Family("ai21", _chat_body(0), lambda c, d: _first_message(d), _openai_usage)
DEEPSEEK = Family("deepseek", _deepseek_body, _deepseek_output, _openai_usage)
DEEPSEEK_CHAT = Family("deepseek-chat", _chat_body(0), lambda c, d: _first_message(d), _openai_usage)
OPENAI = Family("openai", _chat_body(0.1, "max_completion_tokens", ("reasoning_effort",)), _reasoning_output, _openai_usage)
QWEN = Family("qwen", _chat_body(0.7, extra=("tools", "tool_choice")), _tool_calls_output, _openai_usage)
OPENAI_COMPAT = Family("openai-compatible", _chat_body(None, extra=TOOLS), _tool_calls_output, _openai_usage)

INFERENCE_MODEL_TYPES = {
    "claude": CLAUDE, "nova": NOVA, "nova2": NOVA, "llama": LLAMA4, "llama2": LLAMA2, "llama3": LLAMA3, "llama3.1": LLAMA3,
    "llama3_1": LLAMA3, "llama3.2": LLAMA3, "llama3_2": LLAMA3, "llama3.3": LLAMA3, "llama3_3": LLAMA3, "llama4": LLAMA4,
    "mistral": MISTRAL, "cohere": COHERE_R, "ai21": AI21, "titan": TITAN, "deepseek": DEEPSEEK, "openai": OPENAI, "qwen": QWEN,
    "zai": OPENAI_COMPAT, "minimax": OPENAI_COMPAT, "moonshot": OPENAI_COMPAT, "nvidia": OPENAI_COMPAT, "writer": OPENAI_COMPAT, "gemma": OPENAI_COMPAT,
}  # fmt: skip
# (test, family), first match wins, on the model id without its geo prefix.
_RULES: list[tuple[Callable[[str], bool], Family]] = [
    (lambda m: m.startswith("ai21."), AI21),
    (lambda m: "amazon.nova" in m, NOVA),
    (lambda m: m.startswith("amazon.titan-text"), TITAN),
    (lambda m: "anthropic.claude" in m, CLAUDE),
    (lambda m: m.startswith("meta.llama2"), LLAMA2),
    (lambda m: m.startswith("meta.llama3"), LLAMA3),
    (lambda m: m.startswith("meta.llama4"), LLAMA4),
    (lambda m: m.startswith("cohere.command-r"), COHERE_R),
    (lambda m: m.startswith("cohere.command"), COHERE),
    (lambda m: m == "mistral.mistral-large-2407-v1:0" or bool(re.match(r"mistral\.(pixtral|devstral|magistral|ministral|voxtral|mistral-large-3)", m)), MISTRAL_CHAT),
    (lambda m: m.startswith("mistral."), MISTRAL),
    (lambda m: m.startswith("deepseek.v3"), DEEPSEEK_CHAT),
    (lambda m: m.startswith("deepseek."), DEEPSEEK),
    (lambda m: m.startswith("qwen."), QWEN),
    (lambda m: m.startswith("openai.gpt-oss") and bool(re.search(r"-\d+:\d+$|safeguard", m)), OPENAI),
    (lambda m: bool(re.match(r"(zai|minimax|moonshot|moonshotai|nvidia|writer)\.|google\.gemma", m)), OPENAI_COMPAT),
]
_LEGACY = ("anthropic.claude-instant-v1", "anthropic.claude-v1", "anthropic.claude-v2", "anthropic.claude-v2:1")


def family_for(model: str, config: dict[str, Any]) -> Family:
    """The body format InvokeModel takes for `model` (UnknownProviderError when none is known)."""
    if model.startswith("arn:") and "inference-profile" in model:
        kind = config.get("inferenceModelType")
        if kind not in INFERENCE_MODEL_TYPES:
            raise UnknownProviderError(f"bedrock:{model}: an inference profile needs config.inferenceModelType, one of {', '.join(INFERENCE_MODEL_TYPES)}")
        return INFERENCE_MODEL_TYPES[str(kind)]
    bare = GEO_PREFIX.sub("", model)
    if bare not in _LEGACY:
        for test, family in _RULES:
            if test(bare):
                return family
    raise UnknownProviderError(f"unknown Amazon Bedrock model {model!r} for InvokeModel; use bedrock:converse:{model} (the Converse API serves every chat model)")
