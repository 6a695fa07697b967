"""Structured-output assertions: is-/contains- json, xml, html and sql.

Every check is local (no model call). Parsers are the standard library's (json, expat,
html.parser) plus `jsonschema` and `sqlglot`, imported on first use. A value that cannot be
used (a broken schema, an unknown SQL dialect) is a grader error, never a failure or a pass.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any
from xml.etree import ElementTree

from ci_grade.errors import GraderError, InputRejected
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion

# --------------------------------------------------------------------------------------------
# JSON


def parse_json(text: str) -> tuple[bool, Any]:
    """Strict JSON (as JavaScript's JSON.parse: no NaN or Infinity); returns (ok, value)."""
    try:
        return True, json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return False, None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_OUTSIDE_STRING = re.compile(r'["{}\[\]]')
_INSIDE_STRING = re.compile(r'\\.|"', re.S)
_CLOSERS = {"{": "}", "[": "]"}
_OPENER = re.compile(r"[{\[]")
_SCAN_BUDGET = 1_000_000  # characters examined while looking for JSON in one output


def extract_json(text: str) -> list[Any]:
    """JSON objects and arrays embedded in text (prose, fenced blocks), outermost first.

    Each `{` or `[` starts a string-aware scan for its balanced closer; a balanced span that
    parses as JSON is taken whole and scanning resumes after it. Total work is bounded.
    """
    values: list[Any] = []
    budget = _SCAN_BUDGET
    match = _OPENER.search(text)
    while match and budget > 0:
        start = match.start()
        end = _balanced_end(text, start)
        budget -= (end or len(text)) - start
        if end is not None:
            ok, value = parse_json(text[start:end])
            if ok:
                values.append(value)
                match = _OPENER.search(text, end)
                continue
        match = _OPENER.search(text, start + 1)
    return values


def _balanced_end(text: str, start: int) -> int | None:
    """The index just past the bracket closing the one at `start`, or None if unbalanced."""
    closers: list[str] = []
    pos = start
    while True:
        found = _OUTSIDE_STRING.search(text, pos)
        if found is None:
            return None
        char, pos = found.group(), found.end()
        if char == '"':
            while True:
                inside = _INSIDE_STRING.search(text, pos)
                if inside is None:
                    return None
                pos = inside.end()
                if inside.group() == '"':
                    break
        elif char in _CLOSERS:
            closers.append(_CLOSERS[char])
        else:
            if closers.pop() != char:
                return None
            if not closers:
                return pos


def json_schema_validator(ctx: AssertionContext) -> Any | None:
    """A validator for the assertion's schema value (mapping, boolean or YAML/JSON text), or None."""
    schema = ctx.value
    if schema is None or schema == "":
        return None
    if isinstance(schema, str):
        from ci_grade.config import yaml12

        try:
            schema = yaml12.loads(schema)
        except Exception as exc:
            raise GraderError(f"{ctx.type} value is not a JSON schema: it does not parse as YAML or JSON ({_first_line(exc)})") from None
    if not isinstance(schema, dict | bool):
        raise GraderError(f"{ctx.type} value must be a JSON schema (a mapping), got {type(schema).__name__}")
    return schema_validator(schema, "JSON schema")


def schema_validator(schema: dict[str, Any] | bool, what: str) -> Any:
    """A jsonschema validator honouring `$schema` (draft 7 by default), with format checks.

    An invalid schema is a GraderError naming `what`. The registry is empty, so a `$ref` to a
    remote document is an error, never a network fetch.
    """
    import jsonschema
    import referencing
    from jsonschema import validators

    declared = schema.get("$schema") if isinstance(schema, dict) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cls = validators.validator_for(schema, default=None)  # type: ignore[arg-type]
    if cls is None:
        if declared is not None:
            raise GraderError(f"invalid {what}: unknown $schema {declared!r}")
        cls = jsonschema.Draft7Validator
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise GraderError(f"invalid {what}: {exc.message}") from None
    return cls(schema, format_checker=cls.FORMAT_CHECKER, registry=referencing.Registry())


def schema_errors(validator: Any, instance: Any) -> list[str]:
    """Readable schema violations of `instance` (empty when it conforms)."""
    from jsonschema.exceptions import relevance

    try:
        errors = sorted(validator.iter_errors(instance), key=relevance)
    except Exception as exc:  # e.g. an unresolvable $ref
        raise GraderError(f"JSON schema could not be applied: {_first_line(exc)}") from None
    return [f"{_json_path(e.absolute_path)}: {_clip(e.message, 200)}" for e in errors]


def _json_path(parts: Any) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _schema_failure(errors: list[str]) -> str:
    shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
    return f"JSON does not conform to the provided schema. Errors: {shown}"


@assertion("is-json", handles_inverse=True)
async def is_json(ctx: AssertionContext) -> Grade:
    validator = json_schema_validator(ctx)
    ok, value = parse_json(ctx.output_text)
    if not ok:
        return ctx.check(False, "be valid JSON")
    if validator is None:
        return ctx.check(True, "be valid JSON")
    errors = schema_errors(validator, value)
    if ctx.inverse:
        return ctx.check(not errors, "be JSON conforming to the provided schema")
    return Grade(True, 1.0, "Assertion passed") if not errors else Grade(False, 0.0, _schema_failure(errors))


@assertion("contains-json", handles_inverse=True)
async def contains_json(ctx: AssertionContext) -> Grade:
    validator = json_schema_validator(ctx)
    values = extract_json(ctx.output_text)
    if not values:
        return ctx.check(False, "contain valid JSON")
    if validator is None:
        return ctx.check(True, "contain valid JSON")
    first_errors: list[str] = []
    for value in values:
        errors = schema_errors(validator, value)
        if not errors:
            return ctx.check(True, "contain JSON conforming to the provided schema")
        first_errors = first_errors or errors
    if ctx.inverse:
        return Grade(True, 1.0, "Assertion passed")
    found = f" ({len(values)} JSON values found, none conforms)" if len(values) > 1 else ""
    return Grade(False, 0.0, _schema_failure(first_errors) + found)


# --------------------------------------------------------------------------------------------
# XML


def parse_xml(text: str) -> ElementTree.Element:
    """Parse a whole XML document with expat; DTD internal subsets and entity declarations are refused.

    Raises InputRejected for refused features and ValueError (with expat's message) when not well-formed.
    """
    from xml.parsers import expat

    builder = ElementTree.TreeBuilder()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def doctype(name: str, system_id: str | None, public_id: str | None, has_internal_subset: bool) -> None:
        if has_internal_subset:
            raise InputRejected("DTD internal subsets are not supported")

    def entity(*_args: Any) -> None:
        raise InputRejected("entity declarations are not supported")

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        raise ValueError(expat.errors.messages.get(exc.code, str(exc)) + f" (line {exc.lineno}, column {exc.offset + 1})") from None
    return builder.close()


def has_element_path(root: ElementTree.Element, path: str) -> bool:
    """Whether a dotted path such as `root.child.0.leaf` exists; the first part names the root.

    A numeric part picks one of the elements matched so far (as in fast-xml-parser's arrays),
    and a final `@_name` part names an attribute.
    """
    parts = [p.strip() for p in path.split(".")]
    if not parts or parts[0] != root.tag:
        return False
    current = [root]
    for index, part in enumerate(parts[1:], start=1):
        if part.startswith("@_") and index == len(parts) - 1:
            return any(part[2:] in element.attrib for element in current)
        if part.isdigit():
            position = int(part)
            current = [current[position]] if position < len(current) else []
        else:
            current = [child for element in current for child in element if child.tag == part]
        if not current:
            return False
    return True


def required_elements(ctx: AssertionContext) -> list[str]:
    value = ctx.value
    if value is None or value == "" or value == {} or value == []:
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, list):
        return [str(p).strip() for p in value if str(p).strip()]
    if isinstance(value, dict) and isinstance(value.get("requiredElements"), list):
        return [str(p).strip() for p in value["requiredElements"] if str(p).strip()]
    raise GraderError(f"{ctx.type} value must be {{requiredElements: [paths]}}, a list of paths or a comma-separated string")


def _check_xml(text: str, paths: list[str]) -> tuple[bool, bool, str]:
    """(valid, well_formed, reason) for one XML document against required element paths."""
    try:
        root = parse_xml(text)
    except InputRejected as exc:
        return False, False, str(exc)
    except ValueError as exc:
        return False, False, f"XML parsing failed: {exc}"
    missing = [p for p in paths if not has_element_path(root, p)]
    if missing:
        return False, True, f"XML is missing required elements: {', '.join(missing)}"
    return True, True, "XML is valid and contains all required elements"


_XML_TAG = re.compile(r"""<(/?)([A-Za-z_][\w.:\-]*)((?:[^<>"']|"[^"]*"|'[^']*')*?)(/?)>""")


def xml_fragments(text: str) -> list[tuple[int, int]]:
    """Spans of balanced elements found in text, outermost (then leftmost) first."""
    stack: list[tuple[str, int]] = []
    spans: list[tuple[int, int]] = []
    for tag in _XML_TAG.finditer(text):
        closing, name, self_closing = tag.group(1), tag.group(2), tag.group(4)
        if closing:
            if stack and stack[-1][0] == name:
                spans.append((stack.pop()[1], tag.end()))
            else:
                stack.clear()
        elif self_closing:
            spans.append((tag.start(), tag.end()))
        else:
            stack.append((name, tag.start()))
    return sorted(spans, key=lambda s: (s[0], -s[1]))


@assertion("is-xml", handles_inverse=True)
async def is_xml(ctx: AssertionContext) -> Grade:
    paths = required_elements(ctx)
    text = ctx.output_text.strip()
    if not text:
        return _verdict(ctx, False, "Output is empty", "be an XML document")
    valid, _, reason = _check_xml(text, paths)
    return _verdict(ctx, valid, reason, "be an XML document" + (" with the required elements" if paths else ""))


@assertion("contains-xml", handles_inverse=True)
async def contains_xml(ctx: AssertionContext) -> Grade:
    paths = required_elements(ctx)
    text = ctx.output_text
    fragments = xml_fragments(text)
    if not fragments:
        return _verdict(ctx, False, "No XML content found in the output", "contain XML")
    well_formed: list[tuple[int, int]] = []
    reason = "No well-formed XML content found in the output"
    for start, end in fragments:
        if any(outer_start <= start and end <= outer_end for outer_start, outer_end in well_formed):
            continue
        valid, ok, why = _check_xml(text[start:end], paths)
        if valid:
            return _verdict(ctx, True, why, "contain XML" + (" with the required elements" if paths else ""))
        if ok:
            well_formed.append((start, end))
            reason = why
    return _verdict(ctx, False, reason, "contain XML" + (" with the required elements" if paths else ""))


def _verdict(ctx: AssertionContext, ok: bool, reason: str, expectation: str) -> Grade:
    """A binary verdict whose failure reason explains the check (or the inversion)."""
    if ok != ctx.inverse:
        return Grade(True, 1.0, "Assertion passed")
    if ctx.inverse:
        return Grade(False, 0.0, f"Expected output to not {expectation}")
    return Grade(False, 0.0, reason)


# --------------------------------------------------------------------------------------------
# HTML

def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


HTML_ELEMENTS = _names(
    """
    a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption
    cite code col colgroup data datalist dd del details dfn dialog div dl dt em embed fieldset
    figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins
    kbd label legend li link main map mark math menu meta meter nav noscript object ol optgroup option
    output p param picture pre progress q rp rt ruby s samp script search section select slot small
    source span strong style sub summary sup svg table tbody td template textarea tfoot th thead time
    title tr track u ul var video wbr
    """
)
VOID_ELEMENTS = _names("area base br col embed hr img input link meta param source track wbr")
COMMON_ELEMENTS = _names(
    "html head body div span p a img h1 h2 h3 h4 h5 h6 ul ol li table tr td th form input button script style link meta br hr"
)
_ENTITY = re.compile(r"&(?:([A-Za-z][A-Za-z0-9]*)|#[0-9]+|#[xX][0-9A-Fa-f]+);")


class _HtmlScan(HTMLParser):
    """Collects what an HTML check needs: tags, attributes, comments, doctype, top-level text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.start_tags: list[str] = []
        self.end_tags: list[str] = []
        self.self_closing: list[str] = []
        self.attributes = 0
        self.comments = 0
        self.doctype_html = False
        self.top_level_text = False
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.start_tags.append(tag)
        self.attributes += sum(1 for _, value in attrs if value is not None)
        if tag not in VOID_ELEMENTS:
            self._open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.self_closing.append(tag)
        self.attributes += sum(1 for _, value in attrs if value is not None)

    def handle_endtag(self, tag: str) -> None:
        self.end_tags.append(tag)
        if tag in self._open:
            while self._open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not self._open and data.strip():
            self.top_level_text = True

    def handle_comment(self, data: str) -> None:
        self.comments += 1

    def handle_decl(self, decl: str) -> None:
        if re.match(r"doctype\s+html\b", decl, re.I):
            self.doctype_html = True

    @property
    def tags(self) -> list[str]:
        return self.start_tags + self.self_closing + self.end_tags


def _scan_html(text: str) -> _HtmlScan:
    scan = _HtmlScan()
    scan.feed(text)
    scan.close()
    return scan


def html_indicators(text: str) -> int:
    """How strongly text looks like HTML: tags, entities, attributes, comments, doctype."""
    from html.entities import html5

    scan = _scan_html(text)
    score = 0
    if scan.start_tags and scan.end_tags:
        score += 2
    elif scan.start_tags or scan.end_tags:
        score += 1
    if scan.self_closing:
        score += 1
    if any(m.group(1) is None or f"{m.group(1)};" in html5 for m in _ENTITY.finditer(text)):
        score += 1
    if scan.doctype_html:
        score += 2
    if scan.comments:
        score += 1
    if scan.attributes:
        score += 1
    if any(tag in COMMON_ELEMENTS for tag in scan.tags):
        score += 2
    return score


def html_document_problem(text: str) -> str | None:
    """Why the whole text is not HTML, or None when it is."""
    text = text.strip()
    if not text:
        return "Output is empty"
    if re.match(r"<\?xml", text, re.I):
        return "Output appears to be XML, not HTML"
    if not re.match(r"<(?:!doctype\s+html\b|[a-z])", text, re.I):
        return "Output does not start with an HTML tag or DOCTYPE"
    if not text.endswith(">"):
        return "Output does not end with an HTML tag"
    scan = _scan_html(text)
    if scan.top_level_text:
        return "Output contains text outside of HTML tags"
    if not any(tag in HTML_ELEMENTS or "-" in tag for tag in scan.tags):
        return "Output does not contain recognized HTML elements"
    return None


@assertion("is-html", handles_inverse=True)
async def is_html(ctx: AssertionContext) -> Grade:
    problem = html_document_problem(ctx.output_text)
    return _verdict(ctx, problem is None, problem or "", "be HTML")


@assertion("contains-html", handles_inverse=True)
async def contains_html(ctx: AssertionContext) -> Grade:
    return ctx.check(html_indicators(ctx.output_text) >= 2, "contain HTML content")


# --------------------------------------------------------------------------------------------
# SQL

# node-sql-parser's database names (promptfoo's `databaseType`) -> sqlglot dialects.
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
        return [f"{syntax}: {_first_line(exc)}"]
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
    from sqlglot import exp
    from sqlglot.errors import ErrorLevel
    from sqlglot.tokens import TokenType

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
            raise InputRejected(f"{_clip(' '.join(source.split()), 80)!r} is not a SQL statement")
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
    return statement.key.lower()


def _sql_candidates(text: str) -> Iterator[str]:
    """contains-sql: fenced ```sql (or untagged) blocks, then the whole output."""
    for block in _FENCED_SQL.finditer(text):
        yield block.group(1)
    yield text


@assertion("is-sql", handles_inverse=True)
async def is_sql(ctx: AssertionContext) -> Grade:
    options = _SqlOptions(ctx)
    problems = sql_problems(ctx.output_text, options)
    return _verdict(ctx, not problems, " ".join(problems), "be valid SQL")


@assertion("contains-sql", handles_inverse=True)
async def contains_sql(ctx: AssertionContext) -> Grade:
    options = _SqlOptions(ctx)
    first: list[str] = []
    for candidate in _sql_candidates(ctx.output_text):
        problems = sql_problems(candidate, options)
        if not problems:
            return _verdict(ctx, True, "", "contain valid SQL")
        first = first or problems
    return _verdict(ctx, False, " ".join(first), "contain valid SQL")


# --------------------------------------------------------------------------------------------


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return _clip(re.sub(r"\x1b\[[0-9;]*m", "", text.splitlines()[0] if text else type(exc).__name__), 200)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
