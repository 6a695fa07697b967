"""`nunjucksFilters`: JavaScript filter files run in V8 as template filters, in prompts and assertion
values; a filter file that cannot run here only makes the rows that use it ERRORs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli, write


def test_javascript_filters_render_prompts_and_values(tmp_path: Path) -> None:
    write(tmp_path / "filters" / "allcaps.js", "module.exports = function (str) {\n  return String(str).toUpperCase();\n};\n")
    write(tmp_path / "filters" / "clip.mjs", "export default function (value, n, opts) {\n  return value.slice(0, n) + ((opts && opts.mark) || '...');\n}\n")
    write(tmp_path / "filters" / "words.js", "module.exports = (text) => text.split(/\\s+/);\n")
    write(tmp_path / "filters" / "strict.js", "module.exports = function (v) { if (v === 'boom') throw new Error('cannot shout ' + v); return v; };\n")
    write(tmp_path / "filters" / "node.js", "const _ = require('lodash');\nmodule.exports = (v) => _.kebabCase(v);\n")
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        nunjucksFilters:
          allcaps: filters/allcaps.js
          clip: file://filters/clip.mjs
          words: filters/words.js
          strict: filters/strict.js
          kebab: filters/node.js
        prompts:
          - '{{ name | allcaps }} | {{ name | clip(3) }} | {{ name | clip(2, mark="!") }} | {{ (name | words) | join("+") }} | {{ missing | allcaps }} | {{ name | strict }}'
          - 'kebab: {{ name | kebab }}'
        providers: [echo]
        tests:
          - vars: {name: ada lovelace}
            assert:
              - type: contains
                value: '{{ name | allcaps }}'
          - vars: {name: boom}
        """,
    )
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 1, result.err
    data = json.loads((tmp_path / "out.json").read_text())
    rows = {(r["vars"]["name"], r["promptIdx"]): r for r in data["results"]["results"]}
    ada = rows[("ada lovelace", 0)]
    assert ada["response"]["output"] == "ADA LOVELACE | ada... | ad! | ada+lovelace | UNDEFINED | ada lovelace"
    assert ada["success"] is True
    assert ada["gradingResult"]["componentResults"][0]["assertion"]["value"] == "ADA LOVELACE"
    boom = rows[("boom", 0)]
    assert boom["failureReason"] == 2 and "filter 'strict' failed: " in boom["error"] and "cannot shout boom" in boom["error"]
    for name in ("ada lovelace", "boom"):
        kebab = rows[(name, 1)]
        assert kebab["failureReason"] == 2
        assert "filter 'kebab': filters/node.js cannot run in ci-grade's embedded V8 (no Node.js modules): " in kebab["error"]
        assert "require is not defined" in kebab["error"]
    (warning,) = [w for w in data["ciGrade"]["warnings"] if "nunjucksFilters" in w]
    assert warning.startswith("promptfooconfig.yaml:6 nunjucksFilters.kebab: filters/node.js cannot run")
    assert warning.endswith("; templates that use it will be ERRORs")


def test_missing_filter_file_is_a_config_error_with_its_line(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", "nunjucksFilters:\n  shout: nope.js\nprompts: ['{{ x | shout }}']\nproviders: [echo]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert result.err.strip() == "ci-grade: error: promptfooconfig.yaml:2 nunjucksFilters.shout: file not found: nope.js"
