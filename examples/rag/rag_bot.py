"""A small RAG chatbot used as a promptfoo/ci-grade Python provider (`file://rag_bot.py`).

It retrieves the sections of `docs/*.md` that share the most words with the query, asks an
OpenAI-compatible chat model (OPENAI_BASE_URL / OPENAI_API_KEY) to answer from them, and returns
the answer together with the context it used:

    output:   {"answer": "...", "context": ["section", ...]}
    metadata: {"retrieved_docs": [{"source": "docs/x.md", "content": "section", "score": 3}, ...]}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

DOCS = Path(__file__).parent / "docs"
STOPWORDS = {"the", "and", "for", "that", "what", "how", "many", "does", "doesn", "with", "this", "are", "our", "your", "any", "all", "not", "require"}
SYSTEM = (
    "You are an internal corporate chatbot. Answer the employee's question using only the policy excerpts "
    "provided. If they do not contain the answer, say that you do not know. Keep the answer to two sentences."
)


def words(text: str) -> set[str]:
    """Crude stems: the first five letters of each content word ("approval", "pre-approved" -> "appro")."""
    return {w[:5] for w in re.findall(r"[a-z0-9$]+", text.lower()) if len(w) > 2 and w not in STOPWORDS}


def sections(text: str) -> list[str]:
    """Paragraphs, with a heading line kept together with the paragraph under it."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    merged: list[str] = []
    for block in blocks:
        if merged and merged[-1].startswith("#") and "\n" not in merged[-1]:
            merged[-1] = f"{merged[-1]}\n{block}"
        else:
            merged.append(block)
    return merged


def retrieve(query: str, top_k: int) -> list[dict[str, Any]]:
    """The `top_k` sections sharing the most query stems, rarer stems counting more."""
    corpus = [(f"docs/{path.name}", section) for path in sorted(DOCS.glob("*.md")) for section in sections(path.read_text(encoding="utf-8"))]
    stems = [words(section) for _, section in corpus]
    wanted = words(query)
    found = []
    for (source, section), have in zip(corpus, stems, strict=True):
        score = sum(len(corpus) / sum(1 for other in stems if stem in other) for stem in wanted & have)
        if score:
            found.append({"source": source, "content": section, "score": round(score, 2)})
    found.sort(key=lambda d: -d["score"])
    return found[:top_k]


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    from openai import OpenAI

    config = options.get("config") or {}
    docs = retrieve(prompt, int(config.get("topK", 2)))
    chunks = [d["content"] for d in docs]
    excerpts = "\n\n".join(chunks) or "(no matching policy found)"
    try:
        with OpenAI(max_retries=3) as client:
            completion = client.chat.completions.create(
                model=config.get("model", "gpt-4.1-mini"),
                messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"Policy excerpts:\n{excerpts}\n\nQuestion: {prompt}"}],
                temperature=0,
            )
    except Exception as exc:  # the run records it as this row's error
        return {"error": f"chat model call failed: {exc}"}
    usage = completion.usage
    return {
        "output": {"answer": completion.choices[0].message.content or "", "context": chunks},
        "metadata": {"retrieved_docs": docs},
        "tokenUsage": {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens, "total": usage.total_tokens} if usage else {},
    }
