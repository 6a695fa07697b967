"""What `similar` records: its threshold, and per expected value the value and its measure (the
distance for euclidean)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers.llm_server import LLMServer
from tests.test_model_graded_similarity import AT_06, AT_08, OUT, OUT_VEC, grade


@pytest.fixture
def vectors(openai_env: LLMServer) -> LLMServer:
    openai_env.set_embedding(OUT, OUT_VEC)
    openai_env.set_embedding("three fifths", AT_06)
    openai_env.set_embedding("four fifths", AT_08)
    return openai_env


def test_each_comparison_names_its_expected_value_and_measure(tmp_path: Path, vectors: LLMServer) -> None:
    cosine, euclidean = grade(
        tmp_path,
        {"type": "similar", "value": ["three fifths", "four fifths"]},
        {"type": "similar:euclidean", "value": "three fifths", "threshold": 10},
    )
    assert cosine.status == "pass" and cosine.raw["metadata"]["threshold"] == 0.75
    assert cosine.raw["metadata"]["comparisons"] == [
        {"expected": "three fifths", "cosine": pytest.approx(0.6)},
        {"expected": "four fifths", "cosine": pytest.approx(0.8)},
    ]
    assert euclidean.raw["metadata"]["comparisons"] == [{"expected": "three fifths", "distance": pytest.approx(20 ** 0.5)}]
