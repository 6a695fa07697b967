"""Messages between ci-grade and its workers: JSON documents, each framed by its length.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. Only plain
data crosses (as promptfoo requires of Python's return values): objects, arrays, text, numbers,
booleans and null.
"""

from __future__ import annotations

import json
import struct
from typing import IO, Any

HEADER = struct.Struct(">I")


def encode(message: Any) -> bytes:
    """`message` as one frame (TypeError or ValueError when it is not JSON data)."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> Any:
    """A frame's body (after its length) as data."""
    return json.loads(body.decode("utf-8", "surrogatepass"))


def read(stream: IO[bytes]) -> Any:
    """The next message, or None at the end of the stream (the other side is gone)."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (length,) = HEADER.unpack(head)
    body = stream.read(length)
    if len(body) < length:
        return None
    return decode(body)
