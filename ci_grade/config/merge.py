"""Several config files as one eval, merged as promptfoo merges `-c a.yaml -c b.yaml`."""

from __future__ import annotations

from typing import Any

from ci_grade.config.sources import Location, SourceMap


def merge_configs(parts: list[dict[str, Any]], sources: SourceMap) -> dict[str, Any]:
    """Merge several configs into one eval, as promptfoo merges `-c a.yaml -c b.yaml`."""
    merged: dict[str, Any] = {}
    key_lines: dict[str, Location] = {}
    for part in parts:
        for key, value in part.items():
            loc = sources.location(part, key)
            if loc is not None:
                key_lines.setdefault(key, loc)
            if key in ("prompts", "providers", "tests", "scenarios"):
                merged[key] = [*(merged.get(key) or []), *(value if isinstance(value, list) else [value])]
            elif key == "defaultTest" and isinstance(value, dict) and isinstance(merged.get(key), dict):
                current = dict(merged[key])
                for sub, sub_value in value.items():
                    if sub in ("vars", "options", "metadata") and isinstance(sub_value, dict):
                        current[sub] = {**(current.get(sub) or {}), **sub_value}
                    elif sub == "assert" and isinstance(sub_value, list):
                        current[sub] = [*(current.get(sub) or []), *sub_value]
                    else:
                        current[sub] = sub_value
                merged[key] = current
            elif key in ("env", "evaluateOptions", "nunjucksFilters", "metadata", "commandLineOptions") and isinstance(value, dict):
                merged[key] = {**(merged.get(key) or {}), **value}
            elif key == "description" and merged.get(key) and value:
                merged[key] = f"{merged[key]}, {value}"
            elif key == "outputPath" and merged.get(key):
                first = merged[key] if isinstance(merged[key], list) else [merged[key]]
                merged[key] = [*first, *(value if isinstance(value, list) else [value])]
            else:
                merged[key] = value
    first = next((loc for loc in key_lines.values()), None)
    if first is not None:
        sources.register(merged, first.file, 1, {k: loc.line for k, loc in key_lines.items() if loc.file == first.file})
    return merged
