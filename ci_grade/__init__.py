"""ci-grade: LLM evaluation gate for pull requests (promptfoo-compatible)."""

__version__ = "0.1.0"
