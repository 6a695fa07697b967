"""Tests read from outside the config's files, as promptfoo reads them.

- `huggingface://datasets/OWNER/NAME[?split=..&config=..&limit=N]`: the rows of a dataset from
  the Hugging Face datasets server (`/rows`, 100 a page; `split` defaults to `test`, `config` to
  `default`), each row's columns as a test's variables; `HF_TOKEN` (or `HUGGING_FACE_HUB_TOKEN`)
  is sent as a bearer token. `CI_GRADE_HF_DATASETS_URL` points at another server.
- A Google Sheets URL: a public sheet's CSV export (`/export?format=csv`, keeping its `gid`),
  read as a CSV tests file. `CI_GRADE_GOOGLE_SHEETS_URL` points at another host.
- `tests.xlsx` (`#Sheet` names a sheet, else the first): read with openpyxl (the `xlsx` extra),
  rows as CSV rows.
Any other URL (a SharePoint file, ...) is refused with what to do instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from ci_grade.config.assertion_types import AssertionVocabulary
from ci_grade.config.csv_tests import read_csv_tests, test_from_row
from ci_grade.config.sources import Location
from ci_grade.errors import ConfigError

HF_PREFIX = "huggingface://datasets/"
HF_PAGE = 100
HF_DEFAULT_URL = "https://datasets-server.huggingface.co"
SHEETS_HOST = "https://docs.google.com"
_SHEET = re.compile(r"^https://docs\.google\.com/spreadsheets/d/([^/?#]+)")
_XLSX = re.compile(r"\.xlsx?(#.*)?$", re.I)
TIMEOUT_SECONDS = 60.0

Rows = Callable[[], list[dict[str, Any]]]


def remote(ref: str, vocabulary: AssertionVocabulary, referenced_from: Location | None, where: str) -> Rows | None:
    """How to read the tests `ref` names when it is not a local file (None: it is one)."""
    if ref.startswith(HF_PREFIX):
        return lambda: huggingface_tests(ref, referenced_from, where)
    sheet = _SHEET.match(ref)
    if sheet:
        return lambda: sheet_tests(ref, sheet.group(1), vocabulary, referenced_from, where)
    if re.match(r"^[a-z][a-z0-9+.-]*://", ref, re.I) and not ref.startswith("file://"):
        raise ConfigError.at(
            f"tests from {ref.split('?')[0]!r}: ci-grade reads tests from local files, public Google Sheets and "
            "huggingface://datasets/ only; download the file and name it here (e.g. tests: file://tests.csv)",
            referenced_from,
            where,
        )
    return None


def is_spreadsheet(ref: str) -> bool:
    return bool(_XLSX.search(ref))


# -- Hugging Face datasets ----------------------------------------------------------------------


def huggingface_tests(ref: str, referenced_from: Location | None, where: str) -> list[dict[str, Any]]:
    """The dataset's rows as tests `{vars: row}` (at most `limit`)."""
    path, _, query = ref[len(HF_PREFIX) :].partition("?")
    parts = [p for p in path.split("/") if p]
    if len(parts) != 2:
        raise ConfigError.at(f"expected huggingface://datasets/OWNER/NAME, got {ref!r}", referenced_from, where)
    params = {"split": "test", "config": "default", **dict(parse_qsl(query))}
    limit_text = params.pop("limit", None)
    try:
        limit = int(limit_text) if limit_text else None
    except ValueError:
        raise ConfigError.at(f"{ref}: limit must be a whole number, got {limit_text!r}", referenced_from, where) from None
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = (os.environ.get("CI_GRADE_HF_DATASETS_URL") or HF_DEFAULT_URL).rstrip("/") + "/rows"
    tests: list[dict[str, Any]] = []
    import httpx

    with httpx.Client(timeout=TIMEOUT_SECONDS, headers=headers, follow_redirects=True) as client:
        while limit is None or len(tests) < limit:
            length = HF_PAGE if limit is None else min(HF_PAGE, limit - len(tests))
            page = {"dataset": "/".join(parts), **params, "offset": str(len(tests)), "length": str(length)}
            data = _get_json(client, url, page, ref, referenced_from, where)
            rows = data.get("rows") if isinstance(data, dict) else None
            if not isinstance(rows, list):
                raise ConfigError.at(f"{ref}: the datasets server answered without rows", referenced_from, where)
            tests.extend({"vars": dict(item.get("row") or {})} for item in rows if isinstance(item, dict))
            total = data.get("num_rows_total")
            if not rows or not isinstance(total, int) or len(tests) >= total:
                break
    return tests


def _get_json(client: Any, url: str, params: dict[str, str], ref: str, referenced_from: Location | None, where: str) -> Any:
    import httpx

    try:
        response = client.get(url, params=params)
    except httpx.HTTPError as exc:
        raise ConfigError.at(f"{ref}: cannot reach the datasets server: {type(exc).__name__}: {exc}", referenced_from, where) from None
    if response.status_code != 200:
        hint = " (a gated or private dataset needs HF_TOKEN)" if response.status_code in (401, 403) else ""
        raise ConfigError.at(f"{ref}: the datasets server answered HTTP {response.status_code}{hint}", referenced_from, where)
    try:
        return response.json()
    except ValueError:
        raise ConfigError.at(f"{ref}: the datasets server did not answer JSON", referenced_from, where) from None


# -- Google Sheets ------------------------------------------------------------------------------


def sheet_tests(ref: str, sheet_id: str, vocabulary: AssertionVocabulary, referenced_from: Location | None, where: str) -> list[dict[str, Any]]:
    """A public sheet's rows as tests, read from its CSV export."""
    import httpx

    gid = re.search(r"[#?&]gid=(\d+)", ref)
    host = (os.environ.get("CI_GRADE_GOOGLE_SHEETS_URL") or SHEETS_HOST).rstrip("/")
    url = f"{host}/spreadsheets/d/{sheet_id}/export"
    params = {"format": "csv", **({"gid": gid.group(1)} if gid else {})}
    try:
        response = httpx.get(url, params=params, timeout=TIMEOUT_SECONDS, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise ConfigError.at(f"{ref}: cannot read the sheet: {type(exc).__name__}: {exc}", referenced_from, where) from None
    if response.status_code != 200 or "text/html" in response.headers.get("content-type", ""):
        raise ConfigError.at(
            f"{ref}: the sheet's CSV export answered HTTP {response.status_code}; ci-grade reads public sheets only "
            "(share it as 'anyone with the link', or export it to a CSV file)",
            referenced_from,
            where,
        )
    return [test for test, _ in read_csv_tests(response.text, ref, vocabulary)]


# -- spreadsheets -------------------------------------------------------------------------------


def xlsx_tests(file: Path, sheet: str | None, vocabulary: AssertionVocabulary, shown: str) -> list[tuple[dict[str, Any], int]]:
    """The rows of an .xlsx sheet (the first, or `sheet`) as tests, each with its row number."""
    try:
        import openpyxl
    except ImportError:
        raise ConfigError("reading .xlsx tests needs openpyxl: pip install 'ci-grade[xlsx]'", file=shown) from None
    try:
        book = openpyxl.load_workbook(file, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a file that is not a workbook
        raise ConfigError(f"not a readable .xlsx workbook: {type(exc).__name__}: {exc}", file=shown) from None
    try:
        if sheet is not None and sheet not in book.sheetnames:
            raise ConfigError(f"no sheet {sheet!r} (sheets are {', '.join(book.sheetnames)})", file=shown)
        rows = list((book[sheet] if sheet else book.worksheets[0]).iter_rows(values_only=True))
    finally:
        book.close()
    if not rows or not any(cell is not None for cell in rows[0]):
        raise ConfigError("the sheet is empty: it needs a header row and one row per test", file=shown)
    header = [_cell(cell) for cell in rows[0]]
    tests = []
    for number, values in enumerate(rows[1:], start=2):
        if all(cell is None or _cell(cell) == "" for cell in values):
            continue
        row = {name: _cell(values[i]) if i < len(values) else "" for i, name in enumerate(header) if name}
        tests.append((test_from_row(row, vocabulary, shown, number), number))
    if not tests:
        raise ConfigError("the sheet has a header but no rows: no tests", file=shown)
    return tests


def _cell(value: Any) -> str:
    """A cell as CSV text (a whole float without its `.0`)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
