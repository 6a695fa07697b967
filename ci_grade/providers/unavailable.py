"""File providers ci-grade cannot run (Go): every call is an error.

promptfoo runs these in their own interpreters. ci-grade runs the config anyway and
makes each of the provider's rows an ERROR with the reason, instead of refusing the whole config.
"""

from __future__ import annotations

from collections.abc import Mapping

from ci_grade.config.models import ProviderSpec
from ci_grade.providers.base import CallContext, Provider, ProviderResponse

_KINDS = {".go": "Go"}


def reason(path: str) -> str:
    """Why the file provider at `path` cannot run."""
    suffix = path[path.rfind(".") :].lower() if "." in path else ""
    kind = _KINDS.get(suffix, "this kind of")
    return f"{kind} file providers cannot run in ci-grade (Python, JavaScript, TypeScript and Ruby file providers can); serve it over http: or port it to one of those"


class UnavailableProvider(Provider):
    """A provider whose every call fails with `reason`."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], why: str, max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self.why = why

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        return ProviderResponse(error=f"{self.id}: {self.why}")
