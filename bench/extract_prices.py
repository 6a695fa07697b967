"""Regenerate `ci_grade/providers/prices.json` from an unpacked promptfoo npm package.

    cd /tmp && npm pack promptfoo@0.123.1 && tar xzf promptfoo-0.123.1.tgz
    python bench/extract_prices.py /tmp/package --retrieved 2026-11-23

promptfoo's CLI (`dist/src/main.js` and the chunks it imports) carries its price tables as
JavaScript. Each source module's region (`//#region src/providers/...`) is evaluated on its own
with Node.js (`node` must be on PATH), its imports replaced by inert stand-ins, and the named
tables are read back as JSON. The tables are then folded into one entry per model, in USD per
token, grouped by the provider family whose cost function reads them. Nothing here runs at
ci-grade's runtime.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "ci_grade" / "providers" / "prices.json"

# Evaluates each region in a fresh V8 context; an undefined name becomes a stand-in and the
# region is run again, so module-level calls into imports (loggers, schema builders) are inert.
NODE_EVAL = r"""
import vm from "node:vm";
let text = "";
for await (const chunk of process.stdin) text += chunk;
const stub = new Proxy(function () {}, {
  get: (t, k) => (k === Symbol.toPrimitive ? () => 0 : k === Symbol.iterator ? function* () {} : stub),
  apply: () => stub,
  construct: () => stub,
});
const plain = (v) => {
  const tag = Object.prototype.toString.call(v);
  if (tag === "[object Map]") return Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]));
  if (tag === "[object Set]") return [...v].map(plain);
  if (tag === "[object RegExp]") return { regex: v.source, flags: v.flags };
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
};
const results = JSON.parse(text).map(({ code, names, probe }) => {
  const stubs = [];
  for (;;) {
    const fields = names.map((n) => `${n}: typeof ${n} === "undefined" ? undefined : ${n}`);
    if (probe) fields.push(`__probe: Object.fromEntries(${JSON.stringify(probe.args)}.map((a) => [a, ${probe.fn}(a)]))`);
    const tail = fields.join(", ");
    const src = `${stubs.map((n) => `var ${n} = __stub;`).join("\n")}\n${code}\n;({${tail}})`;
    try {
      return plain(vm.runInContext(src, vm.createContext({ __stub: stub })));
    } catch (err) {
      const m = /^([\w$]+) is not defined/.exec(String(err && err.message));
      if (!m || stubs.length > 200) throw err;
      stubs.push(m[1]);
    }
  }
});
process.stdout.write(JSON.stringify(results));
"""

# Source module -> the tables (module-level constants) read from it.
TABLES: dict[str, list[str]] = {
    "src/providers/openai/util.ts": ["OPENAI_BILLING_MODELS", "OPENAI_TRANSCRIPTION_MODELS"],
    "src/providers/openai/billing.ts": [
        "STANDARD_CACHED_INPUT_RATES", "LONG_CONTEXT_CACHED_INPUT_RATES", "CACHE_WRITE_MODELS", "EMBEDDING_RATES",
        "FINE_TUNED_TEXT_RATES", "FINE_TUNED_BATCH_OVERRIDES", "PRIORITY_TEXT_RATES", "FLEX_SUPPORTED_TEXT_MODELS",
        "IMAGE_MODEL_RATES", "REALTIME_MODAL_RATES",
    ],
    "src/providers/azure/errors.ts": ["AZURE_MODELS"],
    "src/providers/azure/util.ts": ["AZURE_CACHE_READ_RATES", "AZURE_LONG_CONTEXT_CACHE_READ_RATES", "AZURE_PRIORITY_MULTIPLIERS"],
    "src/providers/anthropic/util.ts": ["ANTHROPIC_MODELS", "CLAUDE_FABLE_MYTHOS_51_PATTERN"],
    "src/providers/google/shared.ts": ["GOOGLE_MODELS"],
    "src/providers/google/vertex.ts": ["VERTEX_CLAUDE_SONNET_4_5_MODELS", "VERTEX_CLAUDE_SONNET_4_5_LONG_CONTEXT_PRICING"],
    "src/providers/google/gemini-image.ts": ["GEMINI_IMAGE_TOKEN_RATES"],
    "src/providers/google/image.ts": ["IMAGEN_COSTS"],
    "src/providers/bedrock/pricing.ts": ["BEDROCK_PRICING", "BEDROCK_REGION_PRICING", "GPT_OSS_REGION_PRICING"],
    "src/providers/mistral.ts": ["MISTRAL_CHAT_MODELS", "MISTRAL_EMBEDDING_MODELS"],
    "src/providers/xai/chat.ts": ["XAI_CHAT_MODELS", "GROK_43_REDIRECTED_CHAT_MODELS"],
    "src/providers/deepseek.ts": ["DEEPSEEK_CHAT_MODELS"],
    "src/providers/ai21.ts": ["AI21_CHAT_MODELS"],
    "src/providers/meta.ts": ["META_MODEL_PRICES"],
    "src/providers/minimax.ts": ["MINIMAX_CHAT_MODELS"],
    "src/providers/hyperbolic/chat.ts": ["HYPERBOLIC_CHAT_MODELS"],
}  # fmt: skip

# Chat Completions adds a per-request search fee (getChatSearchSurcharge) for search models.
CHAT_MODULE = "src/providers/openai/chat.ts"

# Cost rules that promptfoo writes as code rather than tables; each is checked against the source.
RULES: dict[str, list[str]] = {
    "src/providers/openai/billing.ts": ["cacheWriteInput: (longContext?.input ?? model.cost.input) * 1.25", "input: text.input * .5"],
    "src/providers/anthropic/util.ts": ["? .025 : .1", "cacheCreation * baseInputRate * 1.25"],
    "src/providers/bedrock/pricing.ts": ["NOVA_CACHE_READ_RATIO = .25", "totalInputTokens >= pricing.longContext.threshold"],
    "src/providers/xai/chat.ts": ["promptTokens >= model.cost.longContext.threshold"],
}


def chunks(dist: Path) -> list[Path]:
    """The CLI entry chunk and every chunk it imports, statically or dynamically."""
    seen: set[str] = set()
    todo = ["main.js"]
    while todo:
        name = todo.pop()
        if name in seen or not (dist / name).exists():
            continue
        seen.add(name)
        todo += re.findall(r'(?:from|import)\s*\(?\s*"\./([^"]+)"', (dist / name).read_text(encoding="utf-8"))
    return [dist / name for name in sorted(seen)]


def region(files: list[Path], module: str) -> tuple[str, str]:
    """A source module's code as bundled, and the chunk holding it (exactly one copy expected)."""
    found = [
        (m.group(1), path.name)
        for path in files
        for m in re.finditer(rf"^//#region {re.escape(module)}\n(.*?)^//#endregion", path.read_text(encoding="utf-8"), re.S | re.M)
    ]
    if len(found) != 1:
        sys.exit(f"{module}: expected one region in the CLI's chunks, found {len(found)}")
    return found[0]


def evaluate(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    proc = subprocess.run(["node", "--input-type=module", "-e", NODE_EVAL], input=json.dumps(jobs), capture_output=True, text=True, check=False)
    if proc.returncode:
        sys.exit(proc.stderr)
    result: list[dict[str, Any]] = json.loads(proc.stdout)
    return result


def num(value: Any) -> Any:
    """Round away binary noise (0.025 / 1e6 -> 2.5e-08); recurse into containers."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: num(v) for k, v in value.items()}
    if isinstance(value, list):
        return [num(v) for v in value]
    return value


def renamed(cost: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's per-family spellings of the cache-read price become `cachedInput`."""
    out = {}
    for key, value in cost.items():
        key = {"cacheRead": "cachedInput", "cache_read": "cachedInput", "cacheReadAudio": "audioCachedInput", "cacheReadImage": "imageCachedInput"}.get(key, key)
        out[key] = renamed(value) if isinstance(value, dict) else value
    return out


def first_by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """id -> row for rows with a cost; the first row wins, as with promptfoo's `find`."""
    table: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("cost") and row["id"] not in table:
            table[row["id"]] = row
    return table


def per_million(cost: dict[str, Any]) -> dict[str, Any]:
    return {k: (per_million(v) if isinstance(v, dict) else v if k == "threshold" else v / 1e6) for k, v in cost.items()}


def openai(t: dict[str, Any]) -> dict[str, Any]:
    models: dict[str, dict[str, Any]] = {}
    for model_id, row in first_by_id(t["OPENAI_BILLING_MODELS"]).items():
        entry = dict(row["cost"])
        if model_id in t["STANDARD_CACHED_INPUT_RATES"]:
            entry["cachedInput"] = t["STANDARD_CACHED_INPUT_RATES"][model_id]
        if model_id in t["LONG_CONTEXT_CACHED_INPUT_RATES"]:
            entry["longContext"] = {**entry["longContext"], "cachedInput": t["LONG_CONTEXT_CACHED_INPUT_RATES"][model_id]}
        if model_id in t["CACHE_WRITE_MODELS"]:
            entry["cacheWrite"] = entry["input"] * 1.25
            if "longContext" in entry:
                entry["longContext"]["cacheWrite"] = entry["longContext"]["input"] * 1.25
        if model_id in t["PRIORITY_TEXT_RATES"]:
            entry["priority"] = t["PRIORITY_TEXT_RATES"][model_id]
        if model_id in t["FLEX_SUPPORTED_TEXT_MODELS"]:
            entry["flex"] = True
        if t["SEARCH_SURCHARGES"].get(model_id):
            entry["perRequest"] = t["SEARCH_SURCHARGES"][model_id]
        models[model_id] = entry
    for model_id, modal in t["REALTIME_MODAL_RATES"].items():  # promptfoo reads these before the text table
        entry = {**models.get(model_id, {}), **modal["text"]}
        for kind in ("audio", "image"):
            for key, value in modal.get(kind, {}).items():
                entry[kind + key[0].upper() + key[1:]] = value
        models[model_id] = entry
    for model_id, rates in t["EMBEDDING_RATES"].items():
        models[model_id] = dict(rates)
    for model_id, rates in t["FINE_TUNED_TEXT_RATES"].items():
        models[model_id] = dict(rates) | ({"batch": t["FINE_TUNED_BATCH_OVERRIDES"][model_id]} if model_id in t["FINE_TUNED_BATCH_OVERRIDES"] else {})
    return {
        "promptfoo": "src/providers/openai/util.ts OPENAI_BILLING_MODELS (chat, responses, completion, realtime, audio, deep research, "
        "retired); src/providers/openai/billing.ts STANDARD_CACHED_INPUT_RATES, LONG_CONTEXT_CACHED_INPUT_RATES, EMBEDDING_RATES, "
        "FINE_TUNED_TEXT_RATES, FINE_TUNED_BATCH_OVERRIDES, PRIORITY_TEXT_RATES, FLEX_SUPPORTED_TEXT_MODELS, REALTIME_MODAL_RATES",
        "usedBy": "openai:chat, openai:responses, openai:embedding, openai:completion, openai:realtime, openai:agents "
        "(calculateOpenAIUsageCost); OpenAI-compatible providers without a table of their own look here too",
        "match": "last-path-segment",
        "fineTunedPrefix": "ft:",
        "notes": [
            "ft:<base>:<org>::<id> is priced as ft:<base>.",
            "service_tier batch halves input, cachedInput and output; flex halves them for models marked flex; "
            "priority uses the `priority` rates. ci-grade applies none of these tiers.",
            "gpt-5.4/5.5/5.6 and gpt-6-astra bill 1.1x on regional-processing hosts (us./eu.api.openai.com); not applied by ci-grade.",
            "perRequest is a fixed fee per Chat Completions call (search models). Responses API tool calls (web search "
            "$0.01 or $0.025, file search $0.0025 per call) are not recorded here.",
            "Audio tokens are billed at audioInput/audioOutput, image tokens at imageInput; ci-grade counts text tokens only.",
        ],
        "models": models,
    }


def openai_image(t: dict[str, Any]) -> dict[str, Any]:
    models = {}
    for model_id, rates in t["IMAGE_MODEL_RATES"].items():
        entry = dict(rates["text"])
        for key, value in rates["image"].items():
            entry["image" + key[0].upper() + key[1:]] = value
        models[model_id] = entry
    return {
        "promptfoo": "src/providers/openai/billing.ts IMAGE_MODEL_RATES",
        "usedBy": "openai:image",
        "match": "exact",
        "notes": ["gpt-image-1.5-*, gpt-image-1-mini-* and gpt-image-1-* dated ids are priced as their base model."],
        "models": models,
    }


def azure(t: dict[str, Any]) -> dict[str, Any]:
    models = {}
    for model_id, row in first_by_id(t["AZURE_MODELS"]).items():
        entry = renamed(row["cost"])
        if "cachedInput" not in entry and model_id in t["AZURE_CACHE_READ_RATES"]:
            entry["cachedInput"] = t["AZURE_CACHE_READ_RATES"][model_id]
        long_context = entry.get("longContext")
        if long_context and "cachedInput" not in long_context and model_id in t["AZURE_LONG_CONTEXT_CACHE_READ_RATES"]:
            long_context["cachedInput"] = t["AZURE_LONG_CONTEXT_CACHE_READ_RATES"][model_id]
        if "priorityMultiplier" not in entry and model_id in t["AZURE_PRIORITY_MULTIPLIERS"]:
            entry["priorityMultiplier"] = t["AZURE_PRIORITY_MULTIPLIERS"][model_id]
        models[model_id] = entry
    return {
        "promptfoo": "src/providers/azure/errors.ts AZURE_MODELS; src/providers/azure/util.ts AZURE_CACHE_READ_RATES, "
        "AZURE_LONG_CONTEXT_CACHE_READ_RATES, AZURE_PRIORITY_MULTIPLIERS",
        "usedBy": "azure:chat, azure:completion, azure:responses, azure:assistant, azure:realtime, azure:foundry-agent "
        "(calculateAzureCost, by config.modelName or else the deployment name); azure:embedding reports no cost",
        "match": "exact",
        "notes": [
            "promptfoo ignores cost/inputCost/outputCost for Azure; ci-grade applies them.",
            "priorityMultiplier applies when passthrough.service_tier is priority; not applied by ci-grade.",
        ],
        "models": models,
    }


def claude_read_factor(model_id: str, pattern: dict[str, str]) -> float:
    return 0.025 if re.search(pattern["regex"], model_id, re.I) else 0.1


def anthropic(t: dict[str, Any]) -> dict[str, Any]:
    pattern = t["CLAUDE_FABLE_MYTHOS_51_PATTERN"]
    models = {}
    for model_id, row in first_by_id(t["ANTHROPIC_MODELS"]).items():
        factor = claude_read_factor(model_id, pattern)
        models[model_id] = dict(row["cost"]) | ({"cacheReadFactor": factor} if factor != 0.1 else {})
    return {
        "promptfoo": "src/providers/anthropic/util.ts ANTHROPIC_MODELS, calculateCacheInputCost; "
        "src/providers/google/vertex.ts VERTEX_CLAUDE_SONNET_4_5_LONG_CONTEXT_PRICING",
        "usedBy": "anthropic:messages (calculateAnthropicCost, by the configured model name); vertex:claude-* after "
        "stripping an `anthropic.` or `<region>.anthropic.` prefix",
        "match": "exact",
        "cacheReadFactor": 0.1,
        "cacheWriteFactor": 1.25,
        "vertexLongContext": {"models": t["VERTEX_CLAUDE_SONNET_4_5_MODELS"], **t["VERTEX_CLAUDE_SONNET_4_5_LONG_CONTEXT_PRICING"]},
        "notes": [
            "Cache reads cost cacheReadFactor x input, cache writes cacheWriteFactor x input.",
            "Claude 4.5 and later bill 1.1x on Bedrock/Vertex regional endpoints; Bedrock/Vertex ids normalising to "
            "claude-sonnet-5 are priced 3e-06/1.5e-05. Neither applies to anthropic:messages.",
        ],
        "models": models,
    }


def google(t: dict[str, Any]) -> dict[str, Any]:
    models = {}
    for model_id, row in first_by_id(t["GOOGLE_MODELS"]).items():
        entry = renamed(row["cost"])
        if "tieredCost" in row:
            entry["longContext"] = {"threshold": row["tieredCost"]["threshold"], **renamed(row["tieredCost"]["above"])}
        if "vertexCost" in row:
            entry["vertex"] = renamed(row["vertexCost"])
        if "vertexRegionalMultiplier" in row:
            entry["vertexRegionalMultiplier"] = row["vertexRegionalMultiplier"]
        if "introductoryPricing" in row:
            until = dt.datetime.fromtimestamp(row["introductoryPricing"]["expiresAt"] / 1000, dt.UTC).date().isoformat()
            entry["introductory"] = {"multiplier": row["introductoryPricing"]["multiplier"], "until": until}
        models[model_id] = entry
    return {
        "promptfoo": "src/providers/google/shared.ts GOOGLE_MODELS",
        "usedBy": "google:<model> (AI Studio), vertex:<gemini model>, google:live (calculateGoogleCost)",
        "match": "exact",
        "notes": [
            "vertex: prices used through Vertex AI; vertexRegionalMultiplier applies on the us/eu multi-regions.",
            "introductory: prices are multiplied by `multiplier` until the date `until` (UTC).",
            "priorityMultiplier/flexMultiplier apply with service_tier priority/flex.",
        ],
        "models": models,
    }


def bedrock(t: dict[str, Any], claude_pattern: dict[str, str]) -> dict[str, Any]:
    models = {}
    for key, cost in t["BEDROCK_PRICING"].items():
        entry = per_million(cost)
        if "anthropic.claude" in key:
            entry |= {"cacheReadFactor": claude_read_factor(key, claude_pattern), "cacheWriteFactor": 1.25}
        elif "amazon.nova-" in key:
            entry |= {"cacheReadFactor": 0.25, "cacheWriteFactor": 0}
        models[key] = entry
    regions: dict[str, dict[str, Any]] = {}
    for table in (t["BEDROCK_REGION_PRICING"], t["GPT_OSS_REGION_PRICING"]):
        for name, prices in table.items():
            regions.setdefault(name, {}).update({k: per_million(v) for k, v in prices.items()})
    return {
        "promptfoo": "src/providers/bedrock/pricing.ts BEDROCK_PRICING, BEDROCK_REGION_PRICING, GPT_OSS_REGION_PRICING (per million in the source)",
        "usedBy": "bedrock:converse:<model>, bedrock:<model> for Claude 5 and the models in BEDROCK_INVOKE_PRICING_MODEL_PREFIXES",
        "match": "substring",
        "longContextInclusive": True,
        "regions": regions,
        "notes": [
            "A model id is priced by the first key it contains (lower-cased), in this order; a region's table, when the "
            "region has one, is searched first.",
            "Claude 4.5 and later bill 1.1x outside global.* endpoints; service tier priority 1.75x, flex 0.5x.",
            "Models without cache factors ignore cache tokens.",
        ],
        "models": models,
    }


def simple(rows: list[dict[str, Any]], promptfoo: str, used_by: str, **extra: Any) -> dict[str, Any]:
    models = {}
    for model_id, row in first_by_id(rows).items():
        models[model_id] = renamed(row["cost"]) | ({"aliases": row["aliases"]} if row.get("aliases") else {})
    return {"promptfoo": promptfoo, "usedBy": used_by, "match": "exact", **extra, "models": models}


def xai(t: dict[str, Any]) -> dict[str, Any]:
    family = simple(
        t["XAI_CHAT_MODELS"], "src/providers/xai/chat.ts XAI_CHAT_MODELS, GROK_43_REDIRECTED_CHAT_MODELS", "xai:<model>, xai:responses:<model>",
        longContextInclusive=True,
        notes=["Ids in GROK_43_REDIRECTED_CHAT_MODELS are priced as grok-4.3 (listed as its aliases here; their own rows are unreachable in promptfoo and left out).",
               "Reasoning tokens are billed as output when the completion count is zero."],
    )  # fmt: skip
    redirected = t["GROK_43_REDIRECTED_CHAT_MODELS"]
    models = {k: v for k, v in family["models"].items() if k not in redirected}  # promptfoo checks the redirect first
    for entry in models.values():
        entry["aliases"] = [a for a in entry.get("aliases", []) if a not in redirected]
    models["grok-4.3"]["aliases"] += redirected
    family["models"] = {k: {f: v for f, v in e.items() if f != "aliases" or v} for k, e in models.items()}
    return family


def build(package: Path, retrieved: str) -> dict[str, Any]:
    meta = json.loads((package / "package.json").read_text(encoding="utf-8"))
    if meta.get("name") != "promptfoo":
        sys.exit(f"{package} is not the promptfoo package")
    files = chunks(package / "dist" / "src")
    jobs, where = [], {}
    for module, names in TABLES.items():
        code, chunk = region(files, module)
        for rule in RULES.get(module, []):
            if rule not in code:
                sys.exit(f"{module}: the cost rule `{rule}` changed; review this script")
        where[module] = f"dist/src/{chunk}"
        jobs.append({"code": re.sub(r"^(?:import|export) .*$", "", code, flags=re.M), "names": names})
    tables: dict[str, Any] = {}
    for result in evaluate(jobs):
        tables.update(result)
    missing = [name for names in TABLES.values() for name in names if tables.get(name) is None]
    if missing:
        sys.exit(f"tables not found: {', '.join(missing)}")
    chat, chunk = region(files, CHAT_MODULE)
    where[CHAT_MODULE] = f"dist/src/{chunk}"
    ids = [row["id"] for row in tables["OPENAI_BILLING_MODELS"]]
    probe = {"fn": "getChatSearchSurcharge", "args": ids}
    tables["SEARCH_SURCHARGES"] = evaluate([{"code": re.sub(r"^(?:import|export) .*$", "", chat, flags=re.M), "names": [], "probe": probe}])[0]["__probe"]
    families = {
        "openai": openai(tables),
        "openai-image": openai_image(tables),
        "openai-transcription": {
            "promptfoo": "src/providers/openai/util.ts OPENAI_TRANSCRIPTION_MODELS",
            "usedBy": "openai:transcription",
            "match": "exact",
            "notes": ["perMinute is USD per minute of audio."],
            "models": {k: v["cost"] for k, v in first_by_id(tables["OPENAI_TRANSCRIPTION_MODELS"]).items()},
        },
        "azure": azure(tables),
        "anthropic": anthropic(tables),
        "bedrock": bedrock(tables, tables["CLAUDE_FABLE_MYTHOS_51_PATTERN"]),
        "google": google(tables),
        "google-image": {
            "promptfoo": "src/providers/google/gemini-image.ts GEMINI_IMAGE_TOKEN_RATES",
            "usedBy": "google:image:<gemini model>",
            "match": "exact",
            "models": tables["GEMINI_IMAGE_TOKEN_RATES"],
        },
        "google-imagen": {
            "promptfoo": "src/providers/google/image.ts IMAGEN_COSTS",
            "usedBy": "google:image:<imagen model>, vertex:image:<imagen model>",
            "match": "exact",
            "notes": ["perImage is USD per generated image."],
            "models": {k: {"perImage": v} for k, v in tables["IMAGEN_COSTS"].items()},
        },
        "mistral": simple(tables["MISTRAL_CHAT_MODELS"] + tables["MISTRAL_EMBEDDING_MODELS"], "src/providers/mistral.ts MISTRAL_CHAT_MODELS, MISTRAL_EMBEDDING_MODELS", "mistral:<model>, mistral:embedding:<model>"),
        "xai": xai(tables),
        "deepseek": simple(tables["DEEPSEEK_CHAT_MODELS"], "src/providers/deepseek.ts DEEPSEEK_CHAT_MODELS", "deepseek:<model>"),
        "ai21": simple(tables["AI21_CHAT_MODELS"], "src/providers/ai21.ts AI21_CHAT_MODELS", "ai21:<model>"),
        "meta": {
            "promptfoo": "src/providers/meta.ts META_MODEL_PRICES",
            "usedBy": "meta:<model>",
            "match": "exact",
            "models": tables["META_MODEL_PRICES"],
        },
        "minimax": simple(tables["MINIMAX_CHAT_MODELS"], "src/providers/minimax.ts MINIMAX_CHAT_MODELS", "minimax:<model>", notes=["MiniMax-M3 with service_tier priority bills 1.5x."]),
        "hyperbolic": simple(tables["HYPERBOLIC_CHAT_MODELS"], "src/providers/hyperbolic/chat.ts HYPERBOLIC_CHAT_MODELS", "hyperbolic:<model>"),
    }  # fmt: skip
    return {
        "source": {
            "package": f"promptfoo@{meta['version']} (npm)",
            "license": f"{meta.get('license')}; the prices are copied from promptfoo's code, see its LICENSE",
            "retrieved": retrieved,
            "files": where,
            "generator": "bench/extract_prices.py",
        },
        "unit": "USD per token unless a field says otherwise (perMinute, perImage)",
        "fields": {
            "input/output": "price of a prompt/completion token; a missing output is 0 (embeddings)",
            "cachedInput": "price of a cached prompt token; absent: the input price",
            "cacheWrite": "price of a prompt token written to the cache; absent: the input price",
            "cacheReadFactor/cacheWriteFactor": "cache prices as multiples of the input price (model or family)",
            "longContext": "prices when the prompt has more than `threshold` tokens (at least, with longContextInclusive)",
            "aliases": "other ids priced the same",
            "perRequest": "USD added to each call",
            "match": "exact; last-path-segment (openai/gpt-4o -> gpt-4o); substring (first key the id contains)",
        },
        "families": num(families),
    }


def dump(data: dict[str, Any]) -> str:
    """JSON with one line per model, so a regenerated file diffs line by line."""
    lines = ["{"]
    for i, (key, value) in enumerate(data.items()):
        comma = "," if i < len(data) - 1 else ""
        if key != "families":
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, indent=2).replace(chr(10), chr(10) + '  ')}{comma}")
            continue
        lines.append('  "families": {')
        for j, (name, family) in enumerate(value.items()):
            lines.append(f"    {json.dumps(name)}: {{")
            for k, (field, content) in enumerate(family.items()):
                tail = "," if k < len(family) - 1 else ""
                if field == "models":
                    rows = [f"        {json.dumps(m)}: {json.dumps(p)}" for m, p in content.items()]
                    lines.append('      "models": {\n' + ",\n".join(rows) + "\n      }" + tail)
                elif field == "notes":
                    notes = ",\n".join(f"        {json.dumps(note)}" for note in content)
                    lines.append(f'      "notes": [\n{notes}\n      ]{tail}')
                else:
                    lines.append(f"      {json.dumps(field)}: {json.dumps(content)}{tail}")
            lines.append("    }" + ("," if j < len(value) - 1 else ""))
        lines.append("  }" + comma)
    return "\n".join(lines) + "\n}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path, help="the unpacked npm package (the folder holding package.json)")
    parser.add_argument("--retrieved", default=dt.date.today().isoformat(), help="retrieval date to record (YYYY-MM-DD)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data = build(args.package, args.retrieved)
    text = dump(data)
    json.loads(text)  # the hand-laid-out JSON must still parse
    args.out.write_text(text, encoding="utf-8")
    counts = {name: len(f["models"]) for name, f in data["families"].items()}
    print(f"wrote {args.out}: {sum(counts.values())} models", counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
