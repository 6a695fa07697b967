"""Stand-ins for where promptfoo reads remote tests: the Hugging Face datasets server (`GET /rows`,
paged, bearer token checked when one is required) and a Google Sheet's CSV export
(`GET /spreadsheets/d/<id>/export?format=csv`), on an LLMServer."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.servers.llm_server import LLMServer, Recorded, Response


def install_rows(server: LLMServer, dataset: str, rows: list[dict[str, Any]], *, split: str = "test", config: str = "default", token: str | None = None) -> LLMServer:
    """Serve `rows` of `dataset` as the datasets server pages them; 401 without `token` when one is set."""

    def handle(recorded: Recorded) -> Response:
        if token is not None and {k.lower(): v for k, v in recorded.headers.items()}.get("authorization") != f"Bearer {token}":
            return Response(401, json={"error": "Unauthorized"})
        query = {k: v[0] for k, v in parse_qs(urlsplit(recorded.path).query).items()}
        if query.get("dataset") != dataset or query.get("split") != split or query.get("config") != config:
            return Response(404, json={"error": "Not found."})
        offset, length = int(query["offset"]), int(query["length"])
        if not 0 < length <= 100:
            return Response(422, json={"error": "length must be between 1 and 100"})
        page = [{"row_idx": i, "row": row, "truncated_cells": []} for i, row in enumerate(rows[offset : offset + length], start=offset)]
        return Response(200, json={"features": [], "rows": page, "num_rows_total": len(rows), "num_rows_per_page": 100, "partial": False})

    return server.route("GET", "/rows", handle)


def install_sheet(server: LLMServer, sheet_id: str, csv_by_gid: dict[str, str]) -> LLMServer:
    """Serve a public sheet's tabs as CSV exports (`gid` picks the tab, the first when absent)."""

    def handle(recorded: Recorded) -> Response:
        query = {k: v[0] for k, v in parse_qs(urlsplit(recorded.path).query).items()}
        if query.get("format") != "csv":
            return Response(400, body=b"<html>bad request</html>", headers={"content-type": "text/html"})
        text = csv_by_gid.get(query.get("gid", next(iter(csv_by_gid))))
        if text is None:
            return Response(400, body=b"<html>no such tab</html>", headers={"content-type": "text/html"})
        return Response(200, body=text.encode(), headers={"content-type": "text/csv"})

    return server.route("GET", f"/spreadsheets/d/{sheet_id}/export", handle)
