"""`is-sql` and `contains-sql`: statements that parse in the chosen dialect (sqlglot), within allowed tables and columns."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

from ci_grade.errors import GraderError, InputRejected
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.grading.structured import clip, first_line

SQL_DIALECTS = {
    "mysql": "mysql",
    "mariadb": "mysql",
    "postgresql": "postgres",
    "postgres": "postgres",
    "bigquery": "bigquery",
    "athena": "athena",
    "hive": "hive",
    "redshift": "redshift",
    "snowflake": "snowflake",
    "sqlite": "sqlite",
    "transactsql": "tsql",
    "tsql": "tsql",
    "db2": "",
    "flinksql": "",
    "noql": "",
    "duckdb": "duckdb",
    "oracle": "oracle",
    "trino": "trino",
    "presto": "presto",
    "spark": "spark",
    "databricks": "databricks",
    "clickhouse": "clickhouse",
    "teradata": "teradata",
}
_FENCED_SQL = re.compile(r"```[ \t]*(?:sql)?[ \t]*\r?\n(.*?)```", re.S | re.I)


class _SqlOptions:
    def __init__(self, ctx: AssertionContext):
        value = ctx.value
        if value is None or value == "":
            value = {}
        if not isinstance(value, dict):
            raise GraderError(f"{ctx.type} value must be a mapping {{databaseType, allowedTables, allowedColumns}}, got {type(value).__name__}")
        self.database = str(value.get("databaseType") or "MySQL")
        key = self.database.lower().replace(" ", "").replace("(alpha)", "")
        if key not in SQL_DIALECTS:
            raise GraderError(f"unsupported databaseType {self.database!r}; supported: {', '.join(sorted(SQL_DIALECTS))}")
        self.dialect = SQL_DIALECTS[key]
        self.tables = self._patterns(value, "allowedTables")
        self.columns = self._patterns(value, "allowedColumns")

    @staticmethod
    def _patterns(value: dict[str, Any], key: str) -> list[re.Pattern[str]] | None:
        items = value.get(key)
        if items is None:
            return None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise GraderError(f"{key} must be a list of strings like '(select|update)::null::table'")
        try:
            return [re.compile(rf"^(?:{item})$", re.I) for item in items]
        except re.error as exc:
            raise GraderError(f"{key} has an invalid pattern: {exc}") from None


def sql_problems(text: str, options: _SqlOptions) -> list[str]:
    """Why `text` is not acceptable SQL for `options` (empty when it is)."""
    from sqlglot.errors import ParseError, TokenError

    if not text.strip():
        return ["Output is empty"]
    syntax = f"SQL statement does not conform to the provided {options.database} database syntax"
    try:
        statements = parse_sql(text, options.dialect)
    except (ParseError, TokenError) as exc:
        return [f"{syntax}: {first_line(exc)}"]
    except InputRejected as exc:
        return [f"{syntax}: {exc}"]
    if not statements:
        return ["Output contains no SQL statement"]
    tables: set[str] = set()
    columns: set[str] = set()
    for statement in statements:
        stmt_tables, stmt_columns = sql_authorities(statement)
        tables |= stmt_tables
        columns |= stmt_columns
    problems: list[str] = []
    for kind, allowed, used in (("table", options.tables, tables), ("column", options.columns, columns)):
        if allowed is None:
            continue
        denied = sorted(u for u in used if not any(p.match(u) for p in allowed))
        if denied:
            problems.append(f"SQL validation failed: authority '{', '.join(denied)}' is not in the allowed {kind} list")
    return problems


_TRANSACTION_WORDS = frozenset({"BEGIN", "START", "TRANSACTION", "COMMIT", "ROLLBACK", "WORK"})


def parse_sql(text: str, dialect: str) -> list[Any]:
    """Statements in `text`, each checked to be a real statement rather than prose sqlglot tolerated."""
    import sqlglot
    from sqlglot import TokenType, exp
    from sqlglot.errors import ErrorLevel

    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # no "falling back to Command" chatter
    chunks: list[list[Any]] = [[]]
    for token in sqlglot.tokenize(text, read=dialect or None):
        if token.token_type == TokenType.SEMICOLON:
            chunks.append([])
        else:
            chunks[-1].append(token)
    statements = []
    for tokens in (c for c in chunks if c):
        source = text[tokens[0].start : tokens[-1].end + 1]
        statement = sqlglot.parse_one(source, read=dialect or None, error_level=ErrorLevel.RAISE)
        words = {t.text.upper() for t in tokens}
        acceptable = (
            (isinstance(statement, exp.Query) and not isinstance(statement, exp.Values))
            or (isinstance(statement, exp.Insert) and statement.expression is not None)
            or (isinstance(statement, exp.Update) and bool(statement.expressions))
            or (isinstance(statement, exp.Describe) and (isinstance(statement.this, exp.Query) or tokens[0].text.upper() in ("DESC", "DESCRIBE")))
            or (isinstance(statement, exp.Transaction | exp.Commit | exp.Rollback) and words <= _TRANSACTION_WORDS)
            or isinstance(statement, exp.Delete | exp.Merge | exp.Create | exp.Drop | exp.Alter | exp.TruncateTable | exp.Show | exp.Use | exp.Set | exp.Grant)
        )
        if not acceptable or isinstance(statement, exp.Command):
            raise InputRejected(f"{clip(' '.join(source.split()), 80)!r} is not a SQL statement")
        statements.append(statement)
    return statements


def sql_authorities(statement: Any) -> tuple[set[str], set[str]]:
    """node-sql-parser's authority strings: `action::db::table` and `action::table::column`."""
    from sqlglot import exp

    action = _sql_action(statement)
    target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
    targets = {id(t) for t in [target, *(statement.args.get("tables") or [])] if isinstance(t, exp.Table)}
    ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
    aliases: dict[str, str] = {}
    tables: set[str] = set()
    for table in statement.find_all(exp.Table):
        if not table.name or (not table.db and table.name in ctes):
            continue
        if table.alias:
            aliases[table.alias] = table.name
        tables.add(f"{action if id(table) in targets else 'select'}::{table.db or 'null'}::{table.name}")
    columns: set[str] = set()
    assigned = {id(eq.this) for eq in statement.expressions if isinstance(eq, exp.EQ)} if isinstance(statement, exp.Update) else set()
    for column in statement.find_all(exp.Column):
        name = "(.*)" if isinstance(column.this, exp.Star) else column.name
        qualifier = aliases.get(column.table, column.table) or "null"
        columns.add(f"{'update' if id(column) in assigned else 'select'}::{qualifier}::{name}")
    for select in statement.find_all(exp.Select):
        if any(isinstance(e, exp.Star) for e in select.expressions):
            columns.add("select::null::(.*)")
    target_name = target.name if isinstance(target, exp.Table) else "null"
    if isinstance(statement, exp.Insert):
        if isinstance(statement.this, exp.Schema):
            columns |= {f"insert::{target_name}::{ident.name}" for ident in statement.this.expressions}
        else:
            columns.add(f"insert::{target_name}::(.*)")
    elif isinstance(statement, exp.Delete):
        columns.add(f"delete::{target_name}::(.*)")
    return tables, columns


def _sql_action(statement: Any) -> str:
    from sqlglot import exp

    if isinstance(statement, exp.Query):
        return "select"
    return str(statement.key).lower()


def _sql_candidates(text: str) -> Iterator[str]:
    """contains-sql: fenced ```sql (or untagged) blocks, then the whole output."""
    for block in _FENCED_SQL.finditer(text):
        yield block.group(1)
    yield text


@assertion("is-sql", handles_inverse=True)
async def is_sql(ctx: AssertionContext) -> Grade:
    options = _SqlOptions(ctx)
    problems = sql_problems(ctx.output_text, options)
    return ctx.verdict(not problems, " ".join(problems), "be valid SQL")


@assertion("contains-sql", handles_inverse=True)
async def contains_sql(ctx: AssertionContext) -> Grade:
    options = _SqlOptions(ctx)
    first: list[str] = []
    for candidate in _sql_candidates(ctx.output_text):
        problems = sql_problems(candidate, options)
        if not problems:
            return ctx.verdict(True, "", "contain valid SQL")
        first = first or problems
    return ctx.verdict(False, " ".join(first), "contain valid SQL")
