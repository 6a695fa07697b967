"""Preflight for the config's JavaScript and TypeScript files: what runs in Node.js, checked before any call.

File providers, npm package providers, prompt functions and `javascript` assertion files run in
Node.js workers (test generators and provider config functions already ran, while the config
loaded). Without a Node.js 20 or later (22.6 or later for TypeScript: `workers.node.find`) the
config exits 2, naming the first place that needs it; so does an npm package that is not
installed, and a file Node.js cannot parse (with the file's line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ci_grade.config import files
from ci_grade.config.sources import Location
from ci_grade.errors import ConfigError, ScriptError
from ci_grade.workers import node


@dataclass
class NodeNeeds:
    """The places in a config that run a JavaScript or TypeScript file, or an npm package's
    provider (`package:NAME:Export`: its name and the folder it resolves from), in the order found."""

    places: list[tuple[str, Path, Location | None, str]] = field(default_factory=list)
    packages: list[tuple[str, str, Path, Location | None, str]] = field(default_factory=list)

    def add(self, what: str, path: Path, loc: Location | None, where: str) -> None:
        if node.is_script(path):
            self.places.append((what, path, loc, where))

    def add_package(self, what: str, name: str, base: Path, loc: Location | None, where: str) -> None:
        self.packages.append((what, name, base, loc, where))

    def check(self) -> None:
        """Exit 2 (ConfigError) when Node.js cannot run them, a package is not installed, or a file does not parse."""
        everywhere = [(what, loc, where) for what, _, loc, where in self.places] + [(what, loc, where) for what, _, _, loc, where in self.packages]
        if everywhere and (problem := node.problem()):
            what, loc, where = everywhere[0]
            more = len(everywhere) - 1
            also = f" (and {more} more place{'s' if more > 1 else ''} in this config)" if more else ""
            raise ConfigError.at(f"{what} runs in Node.js{also}, but {problem}", loc, where)
        for what, path, loc, where in self.places:
            if path.suffix.lower() in node.TYPESCRIPT_SUFFIXES and (problem := node.problem(typescript=True)):
                raise ConfigError.at(f"{what} runs in Node.js, but {problem}", loc, where)
        places = list(self.places)
        for what, name, base, loc, where in self.packages:
            try:
                places.append((what, node.resolve_package(name, base), loc, where))
            except ScriptError as exc:
                raise ConfigError.at(f"{what}: {exc}", loc, where) from None
        checked: set[Path] = set()
        for what, path, loc, where in places:
            if path not in checked and path.is_file():
                checked.add(path)
                problem = node.syntax_error(path, files.display_path(path))
                if problem:
                    raise ConfigError.at(f"{what}: {problem}", loc, where)
