"""Typed promptfoo configuration (the subset of promptfoo's schema that ci-grade reads).

Models accept unknown keys (promptfoo grows faster than any copy of its schema); the loader warns
about them once. Field names keep promptfoo's camelCase so error paths match what users wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Score = Annotated[float, Field(strict=True, allow_inf_nan=False)]
"""A threshold or weight: a finite number as written (not `true`, not `.nan`, not text), as promptfoo's schema has it."""
Weight = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)]
"""An assertion's weight: a `Score` of 0 or more (a negative weight would turn a failure into credit)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, arbitrary_types_allowed=True)

    def extra_keys(self) -> list[str]:
        return list((self.model_extra or {}).keys())


class Assertion(_Model):
    """One entry of an `assert:` list; `assert-set` carries children in `assert`."""

    type: str
    value: Any = None
    threshold: Score | None = None
    weight: Weight | None = None
    metric: str | None = None
    provider: Any = None
    rubricPrompt: Any = None
    transform: str | None = None
    contextTransform: str | None = None
    config: dict[str, Any] | None = None
    assert_: list[Assertion] | None = Field(default=None, alias="assert")

    @property
    def base_type(self) -> str:
        return self.type[4:] if self.type.startswith("not-") else self.type

    @property
    def inverse(self) -> bool:
        return self.type.startswith("not-")

    @property
    def effective_weight(self) -> float:
        return 1.0 if self.weight is None else float(self.weight)


class TestOptions(_Model):
    """A test's `options` (prompt, output and grading settings)."""

    prefix: str | None = None
    suffix: str | None = None
    transform: str | None = None
    postprocess: str | None = None
    transformVars: str | None = None
    storeOutputAs: str | None = None
    provider: Any = None
    rubricPrompt: Any = None
    factuality: dict[str, float] | None = None
    disableVarExpansion: bool | None = None
    disableConversationVar: bool | None = None
    disableDefaultAsserts: bool | None = None
    runSerially: bool | None = None
    repeat: int | None = Field(default=None, ge=1)
    """How many times this test runs, replacing `--repeat` / `evaluateOptions.repeat` for it."""

    @property
    def output_transform(self) -> str | None:
        return self.transform or self.postprocess


NO_OPTIONS = TestOptions()
"""The options of every test that sets none (one shared instance; options are never changed in place)."""


class TestCase(_Model):
    """One test (or `defaultTest`)."""

    description: str | None = None
    vars: dict[str, Any] | None = None
    provider: Any = None
    providers: list[str] | None = None
    prompts: list[str] | None = None
    assert_: list[Assertion] | None = Field(default=None, alias="assert")
    options: TestOptions = Field(default_factory=lambda: NO_OPTIONS)
    threshold: Score | None = None
    metadata: dict[str, Any] | None = None
    providerOutput: Any = None
    assertScoringFunction: str | None = None

    @field_validator("options", mode="before")
    @classmethod
    def _none_options(cls, v: Any) -> Any:
        return {} if v is None else v

    @property
    def own_provider_id(self) -> str | None:
        """The id of the provider the test names for itself (`provider:`), if it names one."""
        own = self.provider
        return own if isinstance(own, str) else own.get("id") if isinstance(own, dict) else None

    @field_validator("providers", "prompts", mode="before")
    @classmethod
    def _one_name(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class Prompt(_Model):
    """A prompt template. `key` is the stable identity used in test ids."""

    raw: str
    label: str
    id: str | None = None
    key: str
    config: dict[str, Any] | None = None
    function: str | None = None
    """A Python prompt function (`/abs/prompts.py:fn`) or script (`/abs/prompt.py`) that makes the
    template per row; `raw` is then its source."""

    def allowed_by(self, patterns: list[str] | None) -> bool:
        """Whether a `prompts:` filter (None: no filter) selects this prompt, by label or id."""
        if patterns is None:
            return True
        names = [self.label, *([self.id] if self.id else [])]
        return any(name_matches(pattern, name) for pattern in patterns for name in names)


class ProviderSpec(_Model):
    """A provider under test (or a grader), as configured."""

    id: str
    label: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    prompts: list[str] | None = None
    transform: str | None = None
    delay: int | None = Field(default=None, ge=0)
    """Milliseconds to wait after each call this provider answers (not from the cache)."""
    env: dict[str, Any] | None = None

    @field_validator("config", mode="before")
    @classmethod
    def _none_config(cls, v: Any) -> Any:
        return {} if v is None else v

    @field_validator("prompts", mode="before")
    @classmethod
    def _one_prompt(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @property
    def display(self) -> str:
        return self.label or self.id

    def allowed_by(self, patterns: list[str] | None) -> bool:
        """Whether a test's `providers:` filter (None: no filter) selects this provider, by label or id."""
        if patterns is None:
            return True
        return any(name_matches(pattern, self.display) or name_matches(pattern, self.id) for pattern in patterns)


def name_matches(pattern: str, name: str) -> bool:
    """Exact name, a group prefix (`group` matches `group:x`), or a wildcard (`group:*`)."""
    if pattern == name:
        return True
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return name.startswith(pattern + ":")


class Scenario(_Model):
    """A scenario: every `config` entry crossed with every test."""

    description: str | None = None
    config: list[TestCase]
    tests: list[TestCase] = Field(default_factory=list)


class EvaluateOptions(_Model):
    maxConcurrency: int | None = Field(default=None, ge=1)
    repeat: int | None = Field(default=None, ge=1)
    delay: int | None = Field(default=None, ge=0)
    cache: bool | None = None
    timeoutMs: int | None = Field(default=None, ge=0)
    maxEvalTimeMs: int | None = Field(default=None, ge=0)


_OTLP_FORMATS: tuple[Literal["json", "protobuf"], ...] = ("json", "protobuf")


class OtlpHttp(_Model):
    """`tracing.otlp.http`: the OTLP/HTTP receiver (promptfoo's defaults)."""

    enabled: bool = True
    port: int = Field(default=4318, ge=0, le=65535)
    host: str = "127.0.0.1"
    acceptFormats: list[Literal["json", "protobuf"]] = Field(default_factory=lambda: list(_OTLP_FORMATS))
    redactAttributes: list[str] | None = None


class Otlp(_Model):
    http: OtlpHttp | None = None


class Tracing(_Model):
    """`tracing:` as promptfoo reads it. `forwarding`, `storage` and `otlp.grpc` are accepted and
    not used (promptfoo 0.123.1 does not forward either; spans live only for the run)."""

    enabled: bool = False
    failOnReceiverStartFailure: bool | None = None
    commandToolNames: list[str] | None = None
    otlp: Otlp | None = None

    @property
    def receiver(self) -> OtlpHttp | None:
        """The receiver to serve: tracing on and `otlp.http` enabled."""
        http = self.otlp.http if self.otlp else None
        return http if self.enabled and http is not None and http.enabled else None


class DerivedMetric(_Model):
    """A metric computed from the named metrics: `value` is an expression (`tp / (tp + fp)`)."""

    name: str
    value: str


class Config(_Model):
    """A whole, loaded config: prompts, providers and tests are already expanded from files."""

    description: str | None = None
    prompts: list[Prompt] = Field(default_factory=list)
    providers: list[ProviderSpec] = Field(default_factory=list)
    tests: list[TestCase] = Field(default_factory=list)
    defaultTest: TestCase | None = None
    scenarios: list[Scenario] | None = None
    env: dict[str, str | int | float | bool | None] | None = None
    evaluateOptions: EvaluateOptions = Field(default_factory=EvaluateOptions)
    outputPath: list[str] | None = None
    tracing: Tracing | None = None
    metadata: Any = None
    tags: dict[str, Any] | None = None
    extensions: list[str] | None = None
    """`file://hooks.py:fn` hooks run around the eval (`run.hooks`)."""
    derivedMetrics: list[DerivedMetric] | None = None
    commandLineOptions: dict[str, Any] | None = None
    """Defaults for promptfoo's flags; its values are checked where they are read (`command_line`)."""

    @field_validator("evaluateOptions", mode="before")
    @classmethod
    def _none_eval_options(cls, v: Any) -> Any:
        return {} if v is None else v

    @field_validator("extensions", mode="before")
    @classmethod
    def _one_extension(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("outputPath", mode="before")
    @classmethod
    def _one_path(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    def env_overrides(self) -> dict[str, str]:
        """`env:` values as strings (booleans as JavaScript spells them)."""
        return env_strings(self.env)


def env_strings(env: Mapping[str, Any] | None) -> dict[str, str]:
    """An `env:` block's values as strings (booleans as JavaScript spells them; nulls left out)."""
    return {k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in (env or {}).items() if v is not None}


KNOWN_TOP_LEVEL_KEYS = {
    "description",
    "prompts",
    "providers",
    "targets",
    "tests",
    "defaultTest",
    "scenarios",
    "env",
    "evaluateOptions",
    "outputPath",
    "metadata",
    "tags",
    "sharing",
    "nunjucksFilters",
    "derivedMetrics",
    "extensions",
    "commandLineOptions",
    "redteam",
    "writeLatestResults",
    "tracing",
    "assertionTemplates",
}
"""Keys promptfoo defines; the ones ci-grade does not act on are accepted silently or noted."""
