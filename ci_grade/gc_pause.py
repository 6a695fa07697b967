"""The cyclic garbage collector paused for a block that creates many long-lived objects and no
garbage cycles (loading a config, importing the OpenAI SDK): collections meanwhile would only scan
the new objects again and again."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collections in the block; afterwards the collector is on if it was before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
