"""How image and audio generation providers show what they made, as promptfoo 0.123.1 shows it.

A picture behind a URL is the Markdown image `![<prompt, 50 characters>](<url>)` (the prompt on
one line, square brackets made round so the Markdown stays well formed); one returned as bytes
is a `data:` URL whose type is read from the first bytes where the API does not name it.
Results files and reports keep at most `max_output_chars` characters of any output, so a large
data URL stays bounded there. Spoken answers of the streaming APIs are kept as WAV files.
"""

from __future__ import annotations

import base64
import io
import wave

ALT_CHARS = 50
# The base64 openings of the image formats APIs return, as promptfoo tells them apart.
_SIGNATURES = (("/9j/", "image/jpeg"), ("iVBORw0KGgo", "image/png"), ("UklGR", "image/webp"), ("R0lGOD", "image/gif"))


def ellipsize(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the last three `...` when cut (promptfoo's `ellipsize`)."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit)] if limit < 3 else text[: limit - 3] + "..."


def markdown_image(prompt: str, url: str) -> str:
    """`![alt](url)`, the alt text being the prompt on one line, brackets made round, cut to 50 characters."""
    alt = prompt.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("[", "(").replace("]", ")")
    return f"![{ellipsize(alt, ALT_CHARS)}]({url})"


def image_type(b64: str, default: str = "image/jpeg") -> str:
    """The MIME type base64 image data starts like (`default` when none matches)."""
    return next((mime for opening, mime in _SIGNATURES if b64.startswith(opening)), default)


def data_url(b64: str, mime: str | None = None) -> str:
    """`data:<mime>;base64,<b64>`, the type read from the data when not given."""
    return f"data:{mime or image_type(b64)};base64,{b64}"


def pcm16_wav(pcm: bytes, rate: int) -> str:
    """16-bit mono PCM at `rate` Hz as a base64 WAV file (how the streaming APIs' spoken answers are kept)."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm)
    return base64.b64encode(buffer.getvalue()).decode()
