"""OpenAI-compatible provider families as data: one row per promptfoo prefix that speaks the Chat
Completions (and, where offered, Embeddings) wire format with its own base URL and key.

Read from promptfoo 0.123.1's provider sources (`src/providers/*.ts`, `registry.ts`). Each row says
how promptfoo parses the id (`parse`), where the calls go (`base_url`, a template whose `{names}`
come from `params`; `url_vars`, environment variables that replace it; `alt_urls`, templates a
config key selects), which variables hold the key (`keys`, in promptfoo's order), which config keys
go into the request body or headers as promptfoo sends them, the kinds of call the family offers
and the price table promptfoo bills it from (`prices.json`). `compatible` builds providers from rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Parse = Literal["rest", "typed", "last", "second"]
"""How promptfoo reads the id after the prefix:
`rest`: all of it is the model (`groq:openai/gpt-oss-120b`);
`typed`: `chat:<model>`, `embedding[s]:<model>` or `<model>` (`togetherai:embedding:m`);
`last`: `chat:<model>` / `embedding:<model>`, else the last part (`mistral:foo:bar` is `bar`);
`second`: only the part after the prefix, up to the next colon (`cloudera:<model>`)."""


@dataclass(frozen=True)
class Param:
    """A `{name}` in a URL template: from `config[config_key]`, else the first variable set, else `default`."""

    name: str
    config_key: str | None = None
    env: tuple[str, ...] = ()
    default: str | None = None


@dataclass(frozen=True)
class Family:
    prefixes: tuple[str, ...]
    base_url: str
    keys: tuple[str, ...] = ()
    parse: Parse = "rest"
    url_vars: tuple[str, ...] = ()
    """Variables holding a full base URL, read before `base_url` (after `config.apiBaseUrl`)."""
    host_vars: tuple[str, ...] = ()
    """Variables holding a host: `https://<host>/v1`."""
    url_suffix: str = ""
    """Appended to a URL from `url_vars` (Docker Model Runner's `/engines/v1`)."""
    ensure_suffix: str = ""
    """Appended to the URL, wherever it came from, unless it already ends so (Envoy's `/v1`)."""
    config_url: bool = True
    """Whether `config.apiBaseUrl` / `config.apiHost` replace the URL (F5 reads `apiBaseUrl` as a param)."""
    params: tuple[Param, ...] = ()
    alt_urls: tuple[tuple[str, str], ...] = ()
    """(config key, template) pairs: the first whose key is set replaces `base_url`."""
    default_key: str | None = None
    """Sent when no key is set (local servers and gateways that need none); None: a key is required."""
    embeddings: bool = False
    embedding_model: str | None = None
    """The family's default embedding model, which also serves `similar` for a grader of this family."""
    default_model: str | None = None
    refused: tuple[str, ...] = ()
    """Kinds (`<prefix>:<kind>:...`) promptfoo serves with other APIs, which ci-grade does not run."""
    retired: str | None = None
    """Why the service no longer answers: every id of the family is refused with it, as promptfoo does."""
    body_keys: tuple[tuple[str, str], ...] = ()
    """(config key, body field) sent in the request body as promptfoo sends them."""
    all_options: bool = False
    """Every config key that is not a ci-grade/promptfoo setting goes into the body (promptfoo's
    `passthrough` of model parameters for these families)."""
    header_keys: tuple[tuple[str, str], ...] = ()
    """(config key, header) sent as headers (objects as JSON)."""
    header_prefix: tuple[str, str] | None = None
    """(config key prefix, header prefix): `portkeyVirtualKey` -> `x-portkey-virtual-key`."""
    omit_defaults: bool = False
    """No sampling defaults (temperature 0, 1024 tokens) unless configured: the gateway decides."""
    prices: str = "openai"
    docs: str = ""


FAMILIES: tuple[Family, ...] = (
    Family(("xai",), "https://api.x.ai/v1", ("XAI_API_KEY",), url_vars=("XAI_API_BASE_URL",),
           alt_urls=(("region", "https://{region}.api.x.ai/v1"),), refused=("embedding", "embeddings", "image", "video", "responses", "voice"),
           body_keys=(("search_parameters", "search_parameters"),), prices="xai", docs="xAI Grok"),
    Family(("mistral",), "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",), parse="last", url_vars=("MISTRAL_API_BASE_URL",),
           host_vars=("MISTRAL_API_HOST",), embeddings=True, embedding_model="mistral-embed", prices="mistral",
           body_keys=tuple((k, k) for k in ("safe_prompt", "random_seed", "prompt_mode", "prediction", "guardrails", "prompt_cache_key")), docs="Mistral AI"),
    Family(("groq",), "https://api.groq.com/openai/v1", ("GROQ_API_KEY",), refused=("responses",),
           body_keys=tuple((k, k) for k in ("reasoning_format", "include_reasoning", "compound_custom", "search_settings")), docs="Groq"),
    Family(("openrouter",), "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",),
           body_keys=tuple((k, k) for k in ("transforms", "models", "route", "provider")), docs="OpenRouter"),
    Family(("orcarouter",), "https://api.orcarouter.ai/v1", ("ORCAROUTER_API_KEY",), body_keys=(("models", "models"), ("route", "route")), docs="OrcaRouter"),
    Family(("togetherai",), "https://api.together.xyz/v1", ("TOGETHER_API_KEY",), parse="typed", embeddings=True, refused=("completion",),
           all_options=True, docs="Together AI"),
    Family(("deepseek",), "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",), default_model="deepseek-chat", prices="deepseek", docs="DeepSeek"),
    Family(("perplexity",), "https://api.perplexity.ai", ("PERPLEXITY_API_KEY",), default_model="sonar",
           body_keys=tuple((k, k) for k in ("search_domain_filter", "search_recency_filter", "return_related_questions", "return_images",
                                            "search_after_date_filter", "search_before_date_filter", "web_search_options")), docs="Perplexity"),
    Family(("fireworks",), "https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",), docs="Fireworks AI"),
    Family(("cerebras",), "https://api.cerebras.ai/v1", ("CEREBRAS_API_KEY",), all_options=True, docs="Cerebras"),
    Family(("hyperbolic",), "https://api.hyperbolic.xyz/v1", ("HYPERBOLIC_API_KEY",), refused=("image", "audio"), prices="hyperbolic", docs="Hyperbolic"),
    Family(("github",), "https://models.github.ai/inference", ("GITHUB_TOKEN",), docs="GitHub Models",
           retired="GitHub Models was retired on July 30, 2026, including its inference API; configure another provider with its own credentials"),
    Family(("huggingface:chat", "hf:chat"), "https://router.huggingface.co/v1", ("HF_TOKEN", "HF_API_TOKEN"),
           alt_urls=(("apiEndpoint", "{apiEndpoint}"),), docs="Hugging Face Inference Providers (chat)"),
    Family(("litellm",), "http://0.0.0.0:4000", ("LITELLM_API_KEY",), parse="typed", url_vars=("LITELLM_API_BASE",), default_key="",
           embeddings=True, refused=("completion",), omit_defaults=True, docs="LiteLLM proxy"),
    Family(("localai",), "http://localhost:8080/v1", (), parse="typed", url_vars=("LOCALAI_BASE_URL",), default_key="",
           embeddings=True, refused=("completion",), docs="LocalAI"),
    Family(("docker",), "http://localhost:12434/engines/v1", ("DOCKER_MODEL_RUNNER_API_KEY",), parse="typed",
           url_vars=("DOCKER_MODEL_RUNNER_BASE_URL",), url_suffix="/engines/v1", default_key="dmr", embeddings=True, refused=("completion",),
           docs="Docker Model Runner"),
    Family(("databricks",), "{workspaceUrl}/serving-endpoints", ("DATABRICKS_TOKEN",),
           params=(Param("workspaceUrl", "workspaceUrl", ("DATABRICKS_WORKSPACE_URL",)),), body_keys=(("usageContext", "usage_context"),),
           docs="Databricks Mosaic AI"),
    Family(("mlflow-gateway",), "{gatewayUrl}/gateway/mlflow/v1", ("MLFLOW_GATEWAY_API_KEY",), default_key="",
           params=(Param("gatewayUrl", "gatewayUrl", ("MLFLOW_GATEWAY_URL",)),), docs="MLflow AI Gateway"),
    Family(("cloudflare-ai",), "https://api.cloudflare.com/client/v4/accounts/{accountId}/ai/v1", ("CLOUDFLARE_API_KEY",), parse="typed",
           params=(Param("accountId", "accountId", ("CLOUDFLARE_ACCOUNT_ID",)),), embeddings=True, refused=("completion",),
           all_options=True, docs="Cloudflare Workers AI"),
    Family(("portkey",), "https://api.portkey.ai/v1", ("PORTKEY_API_KEY",), url_vars=("PORTKEY_API_BASE_URL",),
           alt_urls=(("portkeyApiBaseUrl", "{portkeyApiBaseUrl}"),), header_prefix=("portkey", "x-portkey-"), docs="Portkey gateway"),
    Family(("llamaapi",), "https://api.llama.com/compat/v1", ("LLAMA_API_KEY",), parse="typed", docs="Meta Llama API"),
    Family(("alibaba", "dashscope", "alicloud", "aliyun"), "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", ("DASHSCOPE_API_KEY",),
           parse="last", embeddings=True, docs="Alibaba Cloud Model Studio (DashScope)"),
    Family(("nscale",), "https://inference.api.nscale.com/v1", ("NSCALE_SERVICE_TOKEN", "NSCALE_API_KEY"), parse="typed", embeddings=True,
           refused=("completion", "image"), all_options=True, docs="Nscale"),
    Family(("novita",), "https://api.novita.ai/openai/v1", ("NOVITA_API_KEY",), parse="typed", embeddings=True, refused=("completion",), docs="Novita AI"),
    Family(("aimlapi",), "https://api.aimlapi.com/v1", ("AIML_API_KEY",), parse="typed", embeddings=True, refused=("completion",), docs="AI/ML API"),
    Family(("cometapi",), "https://api.cometapi.com/v1", ("COMETAPI_KEY",), parse="typed", embeddings=True, refused=("completion", "image"), docs="CometAPI"),
    Family(("truefoundry",), "https://llm-gateway.truefoundry.com", ("TRUEFOUNDRY_API_KEY",), embeddings=True,
           header_keys=(("metadata", "X-TFY-METADATA"), ("loggingConfig", "X-TFY-LOGGING-CONFIG")),
           body_keys=(("mcp_servers", "mcp_servers"), ("iteration_limit", "iteration_limit")), docs="TrueFoundry AI Gateway"),
    Family(("helicone",), "{baseUrl}/ai", ("HELICONE_API_KEY",), default_key="placeholder-api-key",
           params=(Param("baseUrl", "baseUrl", (), "http://localhost:8080"),), alt_urls=(("router", "{baseUrl}/router/{router}"),),
           docs="Helicone AI Gateway"),
    Family(("envoy",), "{gateway}", ("OPENAI_API_KEY",), default_key="", params=(Param("gateway", None, ("ENVOY_API_BASE_URL",)),), ensure_suffix="/v1",
           docs="Envoy AI Gateway"),
    Family(("snowflake",), "https://{accountIdentifier}.snowflakecomputing.com/api/v2/cortex/v1", ("SNOWFLAKE_API_KEY",),
           params=(Param("accountIdentifier", "accountIdentifier", ("SNOWFLAKE_ACCOUNT_IDENTIFIER",)),), docs="Snowflake Cortex"),
    Family(("atlascloud",), "https://api.atlascloud.ai/v1", ("ATLASCLOUD_API_KEY",), docs="Atlas Cloud"),
    Family(("cloudera",), "https://{domain}/namespaces/{namespace}/endpoints/{endpoint}/v1", ("CDP_TOKEN",), parse="second",
           params=(Param("domain", "domain", ("CDP_DOMAIN",)), Param("namespace", "namespace", (), "serving-default"), Param("endpoint", "endpoint")),
           docs="Cloudera AI Inference"),
    Family(("jfrog", "qwak"), "{baseUrl}/{model}", ("QWAK_TOKEN",), params=(Param("baseUrl", "baseUrl", (), "https://models.qwak-prod.qwak.ai/v1"),),
           docs="JFrog ML (Qwak)"),
    Family(("f5",), "{apiBaseUrl}/{model}", ("F5_API_KEY",), params=(Param("apiBaseUrl", "apiBaseUrl"),), config_url=False, docs="F5 AI Gateway"),
    Family(("nvidia",), "https://integrate.api.nvidia.com/v1", ("NVIDIA_API_KEY",), url_vars=("NVIDIA_API_BASE_URL",), docs="NVIDIA NIM"),
    Family(("moonshot",), "https://api.moonshot.ai/v1", ("MOONSHOT_API_KEY",), parse="typed", default_model="kimi-k3", docs="Moonshot AI (Kimi)"),
    Family(("minimax",), "https://api.minimax.io/v1", ("MINIMAX_API_KEY",), default_model="MiniMax-M3", prices="minimax", docs="MiniMax"),
    Family(("ai21",), "https://api.ai21.com/studio/v1", ("AI21_API_KEY",), parse="second", url_vars=("AI21_API_BASE_URL",), prices="ai21", docs="AI21 Labs"),
    Family(("abliteration",), "https://api.abliteration.ai/v1", ("ABLIT_KEY",), parse="typed", url_vars=("ABLIT_API_BASE_URL",),
           body_keys=(("reasoning_effort", "reasoning_effort"),), docs="Abliteration"),
)
