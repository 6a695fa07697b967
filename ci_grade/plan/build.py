"""Expand a loaded config into rows: test x vars combination x repeat x provider x prompt.

Merges `defaultTest` into each test by promptfoo's rules, crosses scenarios, expands array and
glob variables, applies filters, loads `file://` variables, and gives every row a stable id
(from the test's description or variables, the prompt's key and the provider) so a baseline
from another run matches the same test even when tests are reordered. With a shard, only the
shard's groups of rows are kept (see `shard.py`); the plan still records the whole plan's size
and fingerprint, so shards can be merged and checked for completeness.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ci_grade.config import files
from ci_grade.config.loader import LoadedConfig
from ci_grade.config.models import Prompt, ProviderSpec, TestCase
from ci_grade.config.sources import Location
from ci_grade.errors import ConfigError
from ci_grade.plan import filters
from ci_grade.plan.cases import Case, cases_of, default_test
from ci_grade.plan.earlier import EarlierRows
from ci_grade.plan.filters import EvalFilters
from ci_grade.plan.shard import Shard, deal
from ci_grade.plan.variables import VarLoader, transform_vars, var_choices

DEFAULT_MAX_ROWS = 100_000
"""Rows (tests x variable combinations x prompts x providers x repeats) one eval may plan (CI_GRADE_MAX_ROWS)."""


@dataclass
class PlanOptions:
    repeat: int = 1
    max_rows: int = DEFAULT_MAX_ROWS
    filters: EvalFilters = field(default_factory=EvalFilters)
    earlier: list[EarlierRows] = field(default_factory=list)
    """The rows `filters.earlier` names, read from their results files."""
    cli_vars: dict[str, str] = field(default_factory=dict)
    only_test_ids: frozenset[str] | None = None
    """Keep only these tests (stable ids), e.g. to rerun some of them."""
    grader: str | None = None
    test_repeats: bool = True
    """A test's own `options.repeat` (after the defaultTest merge) replaces `repeat` for its rows,
    as in promptfoo; off for reruns that set the repeats themselves (`--confirm`)."""
    prompt_prefix: str | None = None
    prompt_suffix: str | None = None
    """`--prompt-prefix` / `--prompt-suffix`: defaultTest's `options.prefix` / `suffix`."""
    shard: Shard | None = None
    release: bool = False
    """Release the loaded config's tests once the plan's cases hold them (`LoadedConfig.release`):
    a large config's data, source lines and models are not all kept while the rows are built."""


@dataclass(slots=True)
class PlannedRow:
    """One provider call to make and grade."""

    index: int
    test_index: int
    repeat_index: int
    test: TestCase
    vars: dict[str, Any]
    prompt: Prompt
    prompt_index: int
    provider: ProviderSpec
    provider_index: int
    test_id: str
    fingerprint: str
    location: Location | None
    script_vars: tuple[str, ...] = ()
    """Variables computed per row by a var loader script (`file://vars.py`); their values are still references."""
    shown_vars: dict[str, Any] | None = None
    """The variables as the config writes them (`file://` references, text with its last newline),
    which results record as promptfoo does; None when they are `vars`."""
    column_index: int = 0
    """promptfoo's `promptIdx`: the row's prompt x provider column (providers in order, each with
    the prompts its `prompts:` allows)."""


@dataclass
class Plan:
    """The rows to run; `groups`, `total_rows` and `fingerprint` describe the whole plan, before
    any shard was taken (a group is one test case x variable combination, all its rows);
    `total_rows` and `fingerprint` count only what the earlier-results filters keep."""

    rows: list[PlannedRow]
    prompts: list[Prompt]
    providers: list[ProviderSpec]
    groups: int = 0
    total_rows: int = 0
    repeat: int = 1
    """The most repeats any test has (`--repeat`, or a test's own `options.repeat`)."""
    fingerprint: str = ""
    shard: Shard | None = None


def build_plan(loaded: LoadedConfig, options: PlanOptions | None = None) -> Plan:
    """Expand every row of a loaded (and preflight-checked) config."""
    options = options or PlanOptions()
    config = loaded.config
    default = default_test(loaded, options.cli_vars, options.grader, options.prompt_prefix, options.prompt_suffix)
    if options.release:
        _ = loaded.config_hash  # computed (the whole config encoded once) before the cases exist
    cases = cases_of(loaded, default, in_place=options.release)
    if options.release:
        loaded.release()
    cases = filters.select(cases, options.filters)
    wanted_provider = filters.provider_filter(options.filters.providers, config.providers)
    wanted_prompt = filters.prompt_filter(options.filters.prompts, config.prompts)
    columns = _columns(config.prompts, config.providers, wanted_provider, wanted_prompt)

    var_loader = VarLoader(loaded.base_dir)
    cells: list[_Cell] = []
    group_keys: list[str] = []
    group = 0
    planned = planned_rows = 0
    repeat_counts: set[int] = set()
    for case in cases:
        pairs = [pair for pair in _pairs(case, config.prompts, config.providers) if wanted_provider(pair[1][1]) and wanted_prompt(pair[0][1])]
        keys, choices = var_choices(case.test, loaded.base_dir, case.location, case.path)
        repeats = _repeats(case, options)
        combinations = math.prod(len(c) for c in choices) * len(pairs)
        planned += combinations
        planned_rows += combinations * repeats
        repeat_counts.add(repeats)
        _check_size(planned_rows, planned, repeat_counts, options, loaded, case)
        for combo in itertools.product(*choices):
            identity_vars = dict(zip(keys, combo, strict=True))
            variables, script_vars = var_loader.row_variables(identity_vars, case.location, case.path)
            if case.test.options.transformVars:
                variables = transform_vars(case.test, variables, case.location, case.path, loaded.base_dir)
            if case.test.vars is not None and _same_vars(variables, case.test.vars):
                test, variables = case.test, case.test.vars  # the test's own variables: shared, not copied
            else:
                test = case.test.model_copy(update={"vars": variables})
            shown = None if case.test.options.transformVars or variables == identity_vars else identity_vars
            identity = _identity(case.test, identity_vars)
            canonical_vars = _canonical(identity_vars)
            tiebreak = _digest(canonical_vars, _canonical(case.test.model_dump(mode="json", by_alias=True, exclude_none=True)))
            vars_key = _digest("v", canonical_vars)
            group_keys.append(_digest(identity, tiebreak, _canonical(variables)))
            for (prompt_index, prompt), (provider_index, provider) in pairs:
                provider_key = provider.label or provider.id
                cells.append(
                    _Cell(
                        group=group,
                        case=case,
                        test=test,
                        vars=variables,
                        prompt=prompt,
                        prompt_index=prompt_index,
                        provider=provider,
                        provider_index=provider_index,
                        base_id=_digest(identity, prompt.key, provider_key),
                        tiebreak=tiebreak,
                        vars_key=vars_key,
                        fingerprint=_digest(canonical_vars, prompt.key, provider_key),
                        script_vars=script_vars,
                        shown_vars=shown,
                        repeats=repeats,
                    )
                )
            group += 1
    _assign_ids(cells)
    keeps = _keeper(cells, options)
    live = cells if keeps is None else [cell for cell in cells if keeps(cell)]
    kept = _shard_groups(live, group_keys, options)
    rows = _rows(cells, columns, kept, keeps)
    most = max((cell.repeats for cell in cells), default=options.repeat)
    fingerprint = _digest(loaded.config_hash, str(options.repeat), *(f"{c.test_id}:{group_keys[c.group]}" for c in live))
    return Plan(
        rows=rows, prompts=config.prompts, providers=config.providers, groups=group,
        total_rows=sum(cell.repeats for cell in live), repeat=most, fingerprint=fingerprint, shard=options.shard,
    )


def _keeper(cells: list[_Cell], options: PlanOptions) -> Callable[[_Cell], bool] | None:
    """Which cells `only_test_ids` and the earlier-results filters keep (None: all of them). An
    earlier-results filter keeps whole groups (a test with its variables, on every prompt and
    provider) of which any row did not pass, as promptfoo reruns whole tests."""
    only, earlier = options.only_test_ids, options.earlier
    if only is None and not earlier:
        return None
    groups = {cell.group for cell in cells if any(rows.keeps(cell.test_id, cell.shown_vars or cell.vars, cell.test.own_provider_id) for rows in earlier)}
    return lambda cell: (only is None or cell.test_id in only) and (not earlier or cell.group in groups)


def _rows(cells: list[_Cell], columns: dict[tuple[int, int], int], kept: set[int] | None, keeps: Callable[[_Cell], bool] | None) -> list[PlannedRow]:
    """The rows in promptfoo's order, which its `testIdx` numbers: test by test, each test's
    repeats one after another, each repeat's variable combinations in turn. A row's `index` is
    its place in the whole plan (before a shard or `keeps` keeps some)."""
    rows: list[PlannedRow] = []
    index = test_index = 0
    for _, grouped in itertools.groupby(cells, key=lambda cell: id(cell.case)):
        block = list(grouped)
        first, combinations = block[0].group, block[-1].group - block[0].group + 1
        for repeat_index in range(block[0].repeats):
            for cell in block:
                index += 1
                if (kept is not None and cell.group not in kept) or (keeps is not None and not keeps(cell)):
                    continue
                rows.append(
                    PlannedRow(
                        index=index - 1,
                        test_index=test_index + repeat_index * combinations + cell.group - first,
                        repeat_index=repeat_index,
                        test=cell.test,
                        vars=cell.vars,
                        prompt=cell.prompt,
                        prompt_index=cell.prompt_index,
                        provider=cell.provider,
                        provider_index=cell.provider_index,
                        test_id=cell.test_id,
                        fingerprint=cell.fingerprint,
                        location=cell.case.location,
                        script_vars=cell.script_vars,
                        shown_vars=cell.shown_vars,
                        column_index=columns[(cell.provider_index, cell.prompt_index)],
                    )
                )
        test_index += block[0].repeats * combinations
    return rows


def _own_repeat(case: Case, options: PlanOptions) -> int | None:
    """The case's own `options.repeat`, when the plan honours it."""
    return case.test.options.repeat if options.test_repeats else None


def _repeats(case: Case, options: PlanOptions) -> int:
    """How many times the case's rows run: its own `options.repeat`, else `options.repeat`."""
    return _own_repeat(case, options) or options.repeat


def _same_vars(variables: dict[str, Any], test_vars: dict[str, Any]) -> bool:
    """Whether a row's variables are the test's own, key for key and value for value."""
    return len(variables) == len(test_vars) and all(
        key == other and value is test_vars[other] for (key, value), other in zip(variables.items(), test_vars, strict=True)
    )


def _shard_groups(cells: list[_Cell], group_keys: list[str], options: PlanOptions) -> set[int] | None:
    """The groups of the shard in `options` (None: no shard, every group), dealt by the rows of
    `cells` (the cells the filters keep) so that shards of a filtered plan are balanced too."""
    shard = options.shard
    if shard is None:
        return None
    sizes = [0] * len(group_keys)
    for cell in cells:
        sizes[cell.group] += cell.repeats
    return {group for group, index in enumerate(deal(group_keys, sizes, shard.count)) if index == shard.index}


@dataclass(slots=True)
class _Cell:
    group: int
    case: Case
    test: TestCase
    vars: dict[str, Any]
    prompt: Prompt
    prompt_index: int
    provider: ProviderSpec
    provider_index: int
    base_id: str
    tiebreak: str
    vars_key: str
    fingerprint: str
    script_vars: tuple[str, ...] = ()
    shown_vars: dict[str, Any] | None = None
    repeats: int = 1
    test_id: str = ""


def _assign_ids(cells: list[_Cell]) -> None:
    """Stable ids: the base id; where different tests share one (the same description, say), the
    base plus a digest of their variables, so that editing a test's assertions keeps its id, or,
    where the variables are the same too, of the whole test; cells identical in every respect
    are numbered in order."""
    tiebreaks: dict[str, set[str]] = {}
    by_vars: dict[tuple[str, str], set[str]] = {}
    for cell in cells:
        tiebreaks.setdefault(cell.base_id, set()).add(cell.tiebreak)
        by_vars.setdefault((cell.base_id, cell.vars_key), set()).add(cell.tiebreak)
    seen: dict[str, int] = {}
    for cell in cells:
        if len(tiebreaks[cell.base_id]) == 1:
            test_id = cell.base_id
        elif len(by_vars[(cell.base_id, cell.vars_key)]) == 1:
            test_id = f"{cell.base_id}-{cell.vars_key[:6]}"
        else:
            test_id = f"{cell.base_id}-{cell.tiebreak[:6]}"
        seen[test_id] = seen.get(test_id, 0) + 1
        cell.test_id = test_id if seen[test_id] == 1 else f"{test_id}-{seen[test_id]}"


def _columns(
    prompts: list[Prompt], providers: list[ProviderSpec], wanted_provider: Callable[[ProviderSpec], bool], wanted_prompt: Callable[[Prompt], bool]
) -> dict[tuple[int, int], int]:
    """promptfoo's result columns: for each provider in order, the prompts it allows."""
    columns: dict[tuple[int, int], int] = {}
    for provider_index, provider in enumerate(providers):
        if wanted_provider(provider):
            for prompt_index, prompt in enumerate(prompts):
                if prompt.allowed_by(provider.prompts) and wanted_prompt(prompt):
                    columns[(provider_index, prompt_index)] = len(columns)
    return columns


def _pairs(case: Case, prompts: list[Prompt], providers: list[ProviderSpec]) -> list[tuple[tuple[int, Prompt], tuple[int, ProviderSpec]]]:
    """The prompt x provider pairs a test runs on, after provider and test filters."""
    test = case.test
    pairs = []
    for provider_index, provider in enumerate(providers):
        if not provider.allowed_by(test.providers):
            continue
        for prompt_index, prompt in enumerate(prompts):
            if prompt.allowed_by(provider.prompts) and prompt.allowed_by(test.prompts):
                pairs.append(((prompt_index, prompt), (provider_index, provider)))
    if not pairs:
        loc = case.location
        chosen = []
        if test.prompts is not None:
            chosen.append(f"prompts {test.prompts}")
        if test.providers is not None:
            chosen.append(f"providers {test.providers}")
        detail = " and ".join(chosen) or "its providers' prompts: filters"
        raise ConfigError(
            f"this test runs on no prompt x provider ({detail} match nothing; prompts are {[p.label for p in prompts]}, providers {[p.label or p.id for p in providers]})",
            file=loc.file if loc else None,
            line=loc.line if loc else None,
            path=case.path,
        )
    return pairs


def _check_size(rows: int, combinations: int, repeats: set[int], options: PlanOptions, loaded: LoadedConfig, case: Case) -> None:
    """Refuse, before anything is built, an eval of more rows than `options.max_rows` (pointing at
    the repeats that multiply it, or else at the test whose variables fan out past it)."""
    if rows <= options.max_rows:
        return
    own = _own_repeat(case, options)
    if own is not None and own > 1:
        loc, where = case.location, f"{case.path}.options.repeat"
    elif options.repeat > 1 and loaded.config.evaluateOptions.repeat == options.repeat:
        loc, where = loaded.sources.location(loaded.raw.get("evaluateOptions"), "repeat"), "evaluateOptions.repeat"
    elif options.repeat > 1:
        loc, where = Location(files.display_path(loaded.files[0])) if loaded.files else None, "repeat"
    else:
        loc, where = case.location, case.path
    repeated = max(repeats) > 1
    if not repeated:
        times = ""
    elif len(repeats) == 1:
        times = f" x {max(repeats):,} repeats"
    else:
        times = ", each test x its repeats"
    advice = "lower the repeats" if repeated else "use fewer variable values"
    raise ConfigError.at(
        f"this eval would run at least {rows:,} rows ({combinations:,} combination{'s' if combinations > 1 else ''} of test, variables, prompt and provider{times}), "
        f"more than the limit of {options.max_rows:,}; {advice} or split the eval (CI_GRADE_MAX_ROWS sets the limit)",
        loc,
        where,
    )


def _identity(test: TestCase, identity_vars: dict[str, Any]) -> str:
    return f"d:{test.description}" if test.description else f"v:{_canonical(identity_vars)}"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:12]
