"""Preflight for the code a provider runs to answer function calls: the files it names exist
before any model is called."""

from __future__ import annotations

from typing import Any

from ci_grade.config import files
from ci_grade.config.loader import LoadedConfig
from ci_grade.errors import ConfigError


def check_tool_code(config: dict[str, Any], raw: Any, loaded: LoadedConfig, where: str) -> None:
    """The files a provider runs for function calls (`functionToolCallbacks` entries naming a
    file, `functionToolStatefulApi.file`), relative to the config's folder, exist."""
    callbacks, api = config.get("functionToolCallbacks"), config.get("functionToolStatefulApi")
    raw = raw if isinstance(raw, dict) else {}
    references: list[tuple[Any, str, Any, str]] = []
    if isinstance(callbacks, dict):
        raw_callbacks = raw.get("functionToolCallbacks")
        references += [(raw_callbacks, name, value, f"{where}.functionToolCallbacks.{name}") for name, value in callbacks.items()]
    if isinstance(api, dict):
        raw_api = raw.get("functionToolStatefulApi")
        if not api.get("url"):
            raise ConfigError.at("functionToolStatefulApi needs the url its API serves", loaded.sources.location(raw_api), f"{where}.functionToolStatefulApi.url")
        if api.get("file"):
            references.append((raw_api, "file", api["file"], f"{where}.functionToolStatefulApi.file"))
    for holder, key, value, path in references:
        if isinstance(value, str) and (value.startswith("file://") or key == "file"):
            file = files.resolve(files.split_function(value)[0] if key != "file" else value, loaded.base_dir)
            if not file.is_file():
                raise files.missing_file_error(files.not_a_file(file), loaded.sources.location(holder, key), path)
