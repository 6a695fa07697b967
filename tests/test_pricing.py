"""The price table (prices.json, from promptfoo 0.123.1) and cost estimates, in unit and end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.providers.pricing import PRICES, estimate_cost, price_per_token
from tests.assertion_runs import evaluate, first
from tests.provider_helpers import call
from tests.servers import anthropic_server
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import LLMServer

DATA: dict[str, Any] = json.loads(PRICES.read_text(encoding="utf-8"))
M = 1e-6  # promptfoo writes most prices as "<USD per million> / 1e6"


def test_provenance_header() -> None:
    source = DATA["source"]
    assert source["package"] == "promptfoo@0.123.1 (npm)"
    assert source["retrieved"] == "2026-11-23"
    assert source["license"].startswith("MIT")
    assert source["generator"] == "bench/extract_prices.py" and (Path(__file__).parent.parent / source["generator"]).is_file()
    assert "src/providers/openai/util.ts" in source["files"] and "src/providers/anthropic/util.ts" in source["files"]
    assert all(k.startswith("src/providers/") and v.startswith("dist/src/") and v.endswith(".js") for k, v in source["files"].items())
    assert DATA["unit"].startswith("USD per token")


def test_every_family_and_price_is_well_formed() -> None:
    families = DATA["families"]
    assert {"openai", "azure", "anthropic", "bedrock", "google", "mistral", "xai", "deepseek"} <= set(families)
    assert sum(len(f["models"]) for f in families.values()) >= 600

    def numbers(value: Any) -> Iterator[float]:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key not in ("threshold", "aliases", "introductory", "flex"):
                    yield from numbers(inner)
        elif not isinstance(value, bool):
            yield value

    for name, family in families.items():
        assert family["match"] in ("exact", "last-path-segment", "substring"), name
        assert family["promptfoo"].startswith("src/providers/") and family["usedBy"], name
        assert family["models"], name
        for model, prices in family["models"].items():
            values = list(numbers(prices))
            assert values and all(isinstance(v, int | float) and 0 <= v < 1000 for v in values), (name, model)
            if "input" in prices:  # per-token prices are tiny; a per-million value left unconverted is not
                assert prices["input"] < 1e-3 and prices.get("output", 0) < 1e-3, (name, model)
            if "longContext" in prices:
                assert prices["longContext"]["threshold"] >= 100_000 and prices["longContext"]["input"] > prices["input"]


@pytest.mark.parametrize(
    ("family", "model", "expected"),
    [
        # Read from promptfoo 0.123.1's dist (file: line):
        # util-Di97MMn8.js:214 gpt-5.1 1.25 / 1e6, 10 / 1e6; billing-BFNzAp19.js:62-68 cached .125 / 1e6
        ("openai", "gpt-5.1", {"input": 1.25 * M, "output": 10 * M, "cachedInput": 0.125 * M}),
        # util-Di97MMn8.js:126 the May snapshot keeps its own price (5 / 15), not gpt-4o's 2.5 / 10
        ("openai", "gpt-4o-2024-05-13", {"input": 5 * M, "output": 15 * M}),
        # util-Di97MMn8.js:288 gpt-5.4, long context over 272e3 prompt tokens: 5 / 22.5
        ("openai", "gpt-5.4", {"input": 2.5 * M, "output": 15 * M}),
        # util-Di97MMn8.js:265 gpt-5.6-luna .2 / 1.2
        ("openai", "gpt-5.6-luna", {"input": 0.2 * M, "output": 1.2 * M}),
        # billing-BFNzAp19.js:734 text-embedding-3-small .02 / 1e6 (input only)
        ("openai", "text-embedding-3-small", {"input": 0.02 * M}),
        # providers-BUaNtf-O.js:1464 Azure gpt-5.6 5 / 30, cacheRead .5 (OpenAI's own table: 4 / 20)
        ("azure", "gpt-5.6", {"input": 5 * M, "output": 30 * M, "cachedInput": 0.5 * M}),
        # providers-BUaNtf-O.js:1749 Azure gpt-5.1 1.25 / 10
        ("azure", "gpt-5.1", {"input": 1.25 * M, "output": 10 * M}),
        # util-CWX8zJde.js:74 claude-opus-4-1-20250805 15 / 75; :113 claude-3-haiku 25e-5 / 1e3, .00125 / 1e3
        ("anthropic", "claude-opus-4-1-20250805", {"input": 15 * M, "output": 75 * M}),
        ("anthropic", "claude-3-haiku-20240307", {"input": 0.25 * M, "output": 1.25 * M}),
        # pricing-DMXn2-cC.js:74 Bedrock anthropic.claude-sonnet-4 3 / 15 per million
        ("bedrock", "anthropic.claude-sonnet-4", {"input": 3 * M, "output": 15 * M}),
        # util-dcGuQBH0.js:379 GEMINI_2_5_PRO_COST 1.25 / 10, cacheRead .125
        ("google", "gemini-2.5-pro", {"input": 1.25 * M, "output": 10 * M, "cachedInput": 0.125 * M}),
        # providers-BUaNtf-O.js:14582 mistral-embed .1 / .1
        ("mistral", "mistral-embed", {"input": 0.1 * M, "output": 0.1 * M}),
        # providers-BUaNtf-O.js:21398 grok-4.3 1.25 / 2.5, cache_read .2
        ("xai", "grok-4.3", {"input": 1.25 * M, "output": 2.5 * M, "cachedInput": 0.2 * M}),
        # providers-BUaNtf-O.js:7854 deepseek-chat .14 / .28, cache_read .0028
        ("deepseek", "deepseek-chat", {"input": 0.14 * M, "output": 0.28 * M, "cachedInput": 0.0028 * M}),
    ],
)
def test_prices_match_promptfoo(family: str, model: str, expected: dict[str, float]) -> None:
    prices = DATA["families"][family]["models"][model]
    assert {k: prices.get(k) for k in expected} == pytest.approx(expected, rel=1e-12)


def test_long_context_tiers_match_promptfoo() -> None:
    openai = DATA["families"]["openai"]["models"]["gpt-5.4"]["longContext"]
    assert openai == pytest.approx({"threshold": 272_000, "input": 5 * M, "output": 22.5 * M, "cachedInput": 0.5 * M})
    google = DATA["families"]["google"]["models"]["gemini-2.5-pro"]["longContext"]  # util-dcGuQBH0.js:384
    assert google == pytest.approx({"threshold": 200_000, "input": 2.5 * M, "output": 15 * M, "cachedInput": 0.25 * M})
    bedrock = DATA["families"]["bedrock"]["models"]["anthropic.claude-sonnet-4"]["longContext"]
    assert bedrock == pytest.approx({"threshold": 200_000, "input": 6 * M, "output": 22.5 * M})


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        ("gpt-5", (1.25 * M, 10 * M)),
        ("gpt-5-mini", (0.25 * M, 2 * M)),
        ("gpt-5-nano", (0.05 * M, 0.4 * M)),
        ("gpt-5.1", (1.25 * M, 10 * M)),
        ("gpt-5.1-2025-11-13", (1.25 * M, 10 * M)),
        ("gpt-5.2", (1.75 * M, 14 * M)),
        ("gpt-5.4-mini", (0.75 * M, 4.5 * M)),
        ("gpt-5.5", (5 * M, 30 * M)),
        ("gpt-5-pro", (15 * M, 120 * M)),
        ("gpt-5.1-chat-latest", (1.25 * M, 10 * M)),
        ("openai/gpt-5.2", (1.75 * M, 14 * M)),
    ],
)
def test_gpt5_models_are_priced(model: str, prices: tuple[float, float]) -> None:
    assert price_per_token(model) == pytest.approx(prices)


def test_unknown_models_and_families_have_no_price() -> None:
    assert price_per_token("gpt-5.1-2099-01-01") is None  # an unlisted snapshot is not priced as its base
    assert price_per_token("gpt-4o-latest") is None
    assert price_per_token("mystery-model") is None
    assert price_per_token(None) is None and price_per_token("") is None
    assert price_per_token("claude-sonnet-4-5") is None  # a Claude id in the OpenAI table
    assert price_per_token("gpt-4o", "anthropic") is None
    assert price_per_token("gpt-4o", "no-such-family") is None
    assert price_per_token("tts-1") is None  # listed by promptfoo without a price
    assert estimate_cost("mystery-model", {}, 100, 10) is None
    assert estimate_cost("mystery-model", {"inputCost": 1e-6}, 100, 10) is None  # half a price is no price


def test_the_family_picks_the_table_where_names_collide() -> None:
    assert price_per_token("gpt-5.6") == pytest.approx((4 * M, 20 * M))
    assert price_per_token("gpt-5.6", "azure") == pytest.approx((5 * M, 30 * M))
    assert estimate_cost("gpt-5.6", {}, 1000, 100, family="azure") == pytest.approx(1000 * 5 * M + 100 * 30 * M)


def test_aliases_fine_tunes_and_substring_matching() -> None:
    assert price_per_token("grok-latest", "xai") == pytest.approx((1.25 * M, 2.5 * M))
    assert price_per_token("grok-4-1-fast-reasoning", "xai") == pytest.approx((1.25 * M, 2.5 * M))  # promptfoo redirects it to grok-4.3
    assert price_per_token("ft:gpt-4o-mini-2024-07-18:acme::abc123") == pytest.approx((0.3 * M, 1.2 * M))
    assert price_per_token("ft:gpt-4o-mini") == pytest.approx((0.3 * M, 1.2 * M))
    assert price_per_token("us.anthropic.claude-sonnet-4-20250514-v1:0", "bedrock") == pytest.approx((3 * M, 15 * M))
    assert price_per_token("DeepSeek-R1", "hyperbolic") == pytest.approx((0.5 * M, 2.18 * M))


def test_cost_of_a_call() -> None:
    assert estimate_cost("gpt-5.1", {}, 1200, 300) == pytest.approx(1200 * 1.25 * M + 300 * 10 * M)
    assert estimate_cost("gpt-5.1", {}, 1200, 300, cached_tokens=1000) == pytest.approx(200 * 1.25 * M + 1000 * 0.125 * M + 300 * 10 * M)
    assert estimate_cost("gpt-5.1", {}, 10, 0, cached_tokens=50) == pytest.approx(10 * 0.125 * M)  # cached clamped to the prompt
    assert estimate_cost("gpt-4o-search-preview", {}, 100, 10) == pytest.approx(100 * 2.5 * M + 10 * 10 * M + 0.025)  # per-call fee
    assert estimate_cost("claude-sonnet-4-5", {}, 1300, 10, family="anthropic", cached_tokens=1000, cache_write_tokens=200) == pytest.approx(
        (100 + 0.1 * 1000 + 1.25 * 200) * 3 * M + 10 * 15 * M
    )
    assert estimate_cost("claude-fable-5-1", {}, 1000, 0, family="anthropic", cached_tokens=1000) == pytest.approx(1000 * 0.025 * 10 * M)


def test_long_context_prices_past_the_threshold() -> None:
    assert estimate_cost("gpt-5.4", {}, 272_000, 0) == pytest.approx(272_000 * 2.5 * M)
    assert estimate_cost("gpt-5.4", {}, 272_001, 1000) == pytest.approx(272_001 * 5 * M + 1000 * 22.5 * M)
    assert estimate_cost("gpt-5.4", {}, 300_000, 0, cached_tokens=100_000) == pytest.approx(200_000 * 5 * M + 100_000 * 0.5 * M)
    # xAI and Bedrock switch at the threshold itself (promptfoo compares with >=)
    assert estimate_cost("grok-4.6", {}, 200_000, 0, family="xai") == pytest.approx(200_000 * 4 * M)
    assert estimate_cost("grok-4.6", {}, 199_999, 0, family="xai") == pytest.approx(199_999 * 2 * M)


def test_embeddings_are_priced_by_prompt_tokens() -> None:
    assert estimate_cost("text-embedding-3-small", {}, 1000, 0) == pytest.approx(1000 * 0.02 * M)
    assert estimate_cost("text-embedding-3-large", {}, 1000, 0) == pytest.approx(1000 * 0.13 * M)
    assert estimate_cost("text-embedding-ada-002", {}, 500, 0) == pytest.approx(500 * 0.1 * M)
    assert estimate_cost("text-embedding-3-large", {}, 1000, 0, family="azure") == pytest.approx(1000 * 0.13 * M)


def test_embedding_provider_cost_end_to_end(openai_env: LLMServer) -> None:
    from tests.provider_helpers import use

    result = use("openai:embedding:text-embedding-3-large", lambda p: p.embed("twelve characters of text here"))
    assert result.token_usage.prompt > 0
    assert result.cost == pytest.approx(result.token_usage.prompt * 0.13 * M)


def test_config_overrides_win() -> None:
    assert estimate_cost("gpt-5.1", {"cost": 1e-6}, 100, 10) == pytest.approx(110e-6)
    assert estimate_cost("gpt-5.1", {"inputCost": 2e-6}, 100, 10) == pytest.approx(100 * 2e-6 + 10 * 10 * M)
    assert estimate_cost("gpt-5.1", {"outputCost": 2e-6}, 100, 10) == pytest.approx(100 * 1.25 * M + 10 * 2e-6)
    assert estimate_cost("gpt-5.1", {"cost": 1e-6, "inputCost": 3e-6}, 100, 10) == pytest.approx(100 * 3e-6 + 10 * 1e-6)
    assert estimate_cost("mystery-model", {"inputCost": 1e-6, "outputCost": 2e-6}, 100, 10) == pytest.approx(120e-6)
    assert estimate_cost("gpt-5.6", {"cost": 1e-6}, 100, 10, family="azure") == pytest.approx(110e-6)
    # OpenAI bills cached tokens at an overridden input price; Anthropic keeps its cache multipliers
    assert estimate_cost("gpt-5.1", {"inputCost": 2e-6}, 100, 0, cached_tokens=50) == pytest.approx(100 * 2e-6)
    assert estimate_cost("claude-sonnet-4-5", {"inputCost": 2e-6}, 100, 0, family="anthropic", cached_tokens=50) == pytest.approx(
        50 * 2e-6 + 50 * 0.1 * 2e-6
    )


def test_the_table_is_read_on_first_lookup_only() -> None:
    code = (
        "import sys, ci_grade.providers.pricing as p\n"
        "from ci_grade.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "before = p._families.cache_info().currsize\n"
        "p.price_per_token('gpt-5.1')\n"
        "print(before, p._families.cache_info().currsize, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stderr.split()[-2:] == ["0", "1"]


# -- end to end ---------------------------------------------------------------------------------


def cost_case(description: str, q: str, assertion: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "vars": {"q": q}, "assert": [assertion]}


def test_cost_assertion_on_gpt_5_1(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, "answer", usage={"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500})
    expected = 1200 * 1.25e-6 + 300 * 10e-6  # 0.0045: gpt-5.1 at promptfoo's 1.25 / 10 USD per million
    tests = [
        cost_case("under", "a", {"type": "cost", "threshold": 0.0046}),
        cost_case("over", "b", {"type": "cost", "threshold": 0.0044}),
        cost_case("metric", "c", {"type": "cost", "metric": "usd", "weight": 0}),
    ]
    rows = evaluate(tmp_path, {"prompts": ["{{q}}"], "providers": ["openai:chat:gpt-5.1"], "tests": tests})
    by = {row["description"]: row for row in rows}
    assert first(by["under"]).status == "pass"
    assert first(by["over"]).status == "fail"
    assert first(by["over"]).reason == "Cost 0.0045 is greater than threshold 0.0044"
    assert first(by["metric"]).score == pytest.approx(expected, rel=1e-12)
    assert all(row["cost"] == pytest.approx(expected, rel=1e-12) for row in rows)


def test_cost_assertion_with_cached_prompt_tokens(tmp_path: Path, openai_env: LLMServer) -> None:
    usage = {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500, "prompt_tokens_details": {"cached_tokens": 1000}}
    reply = {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-5.1-2025-11-13", "usage": usage,
             "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}  # fmt: skip
    openai_env.on_chat(None, reply)
    expected = 200 * 1.25e-6 + 1000 * 0.125e-6 + 300 * 10e-6  # 0.003375: cached input at a tenth
    tests = [cost_case("under", "a", {"type": "cost", "threshold": 0.0034}), cost_case("over", "b", {"type": "cost", "threshold": 0.0033})]
    rows = evaluate(tmp_path, {"prompts": ["{{q}}"], "providers": ["openai:chat:gpt-5.1"], "tests": tests})
    by = {row["description"]: row for row in rows}
    assert (first(by["under"]).status, first(by["over"]).status) == ("pass", "fail")
    assert by["under"]["cost"] == pytest.approx(expected, rel=1e-12)


def test_azure_prices_config_model_name_from_its_own_table(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-test-key")
    monkeypatch.setenv("AZURE_OPENAI_API_HOST", llm_server.url)
    llm_server.on_chat(None, "ok", usage={"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100})
    response = call({"id": "azureopenai:chat:team-deployment", "config": {"modelName": "gpt-5.6"}}, "q")
    assert response.cost == pytest.approx(1000 * 5e-6 + 100 * 30e-6)  # Azure's gpt-5.6, not OpenAI's 4 / 20


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    server = CountingServer()
    with server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        yield server


def test_anthropic_alias_is_priced_from_the_model_the_reply_names(anthropic: CountingServer) -> None:
    reply = {"content": "ok", "model": "claude-3-5-haiku-20241022", "usage": {"input_tokens": 1000, "output_tokens": 100}}
    anthropic_server.install(anthropic, lambda req: reply)
    response = call("anthropic:messages:claude-3-5-haiku-latest", "q")
    assert response.cost == pytest.approx(1000 * 0.8e-6 + 100 * 4e-6)
