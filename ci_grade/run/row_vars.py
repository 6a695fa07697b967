"""A row's variables at run time, just before its prompt renders, in promptfoo's order.

First `_conversation` and the outputs earlier rows stored (`storeOutputAs`), then the values of
var loader scripts (`file://vars.py`), which see the variables so far. New text loses one trailing
newline and fills `{{ name }}` references in the other variables, as at planning. Results record
a loader's variable as written (`file://vars.py`), as promptfoo does.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ci_grade.config import var_files
from ci_grade.plan.build import PlannedRow
from ci_grade.run import var_loaders
from ci_grade.run.conversation import Conversations
from ci_grade.templating import nunjucks


async def prepare(row: PlannedRow, template: str, base_dir: Path, conversations: Conversations) -> PlannedRow:
    """`row` with its run-time variables (raises ScriptError when a var loader fails)."""
    variables = conversations.variables(row)
    shown = row.shown_vars
    if row.script_vars:
        loaded = await var_loaders.load(variables, row.script_vars, template, base_dir)
        variables = {**loaded, **var_files.strip_newline({k: loaded[k] for k in row.script_vars})}
        shown = shown if shown is not None else row.vars  # results record the loader as written
    if variables is row.vars:
        return row
    variables = nunjucks.resolve_references(variables)
    return dataclasses.replace(row, vars=variables, shown_vars=shown, test=row.test.model_copy(update={"vars": variables}))
