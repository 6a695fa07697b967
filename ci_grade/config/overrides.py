"""promptfoo's `-p/--prompts`, `-r/--providers` and `-t/--tests` (`-v/--vars`): the config's own, replaced.

Prompts and tests named on the command line are read like the config's, relative to the working
folder. A provider named on the command line that the config also lists (by id, by label, or as
the end of an id after `:`, as promptfoo matches them) keeps the config's settings; another one
is used as named, a file in its id found from the config's folder, as promptfoo finds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ConfigOverrides:
    prompts: Sequence[str] = ()
    providers: Sequence[str] = ()
    tests: str | None = None

    def __bool__(self) -> bool:
        return bool(self.prompts or self.providers or self.tests)


def cli_providers(names: Sequence[str], configured: Any) -> list[Any]:
    """The providers `names` select: each the config's entry it names, else a new one by that id."""
    listed = [entry for entry in configured if isinstance(entry, dict)] if isinstance(configured, list) else []
    chosen: list[Any] = []
    for name in names:
        found = next((entry for entry in listed if entry.get("id") == name), None)
        found = found or next((entry for entry in listed if entry.get("label") == name), None)
        found = found or next((entry for entry in listed if str(entry.get("id", "")).endswith(":" + name)), None)
        chosen.append(found if found is not None else name)
    return chosen
