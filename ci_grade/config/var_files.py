"""What a `file://` test variable becomes, as promptfoo's `renderPrompt` loads it.

Text files are read and trimmed; `.yaml`/`.yml` files become their data as compact JSON text
(`JSON.stringify`); `.json` files stay their (trimmed) JSON text; images become `data:` URLs with
the type read from the file's first bytes; video and audio become bare base64. Python and
JavaScript files are var loaders (`get_var`), run per row; they stay references here. After
loading, every string variable loses one trailing newline, as in promptfoo.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.errors import ConfigError
from ci_grade.js_values import js_json

JAVASCRIPT_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")
_IMAGES = {"jpg", "jpeg", "png", "gif", "bmp", "webp", "svg", "heic", "heif", "avif", "tif", "tiff"}
_VIDEOS = {"mp4", "mpeg", "mpg", "webm", "ogg", "mov", "avi", "flv", "wmv", "mkv", "m4v", "3gp", "3gpp"}
_AUDIO = {"wav", "mp3", "ogg", "aac", "m4a", "flac", "wma", "aif", "aiff", "aifc", "opus"}
_IMAGE_TYPES = {
    "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "bmp": "image/bmp",
    "webp": "image/webp", "svg": "image/svg+xml", "tif": "image/tiff", "tiff": "image/tiff", "ico": "image/x-icon",
    "avif": "image/avif", "heic": "image/heic", "heif": "image/heif",
}
_MAGIC = (
    ("/9j/", "image/jpeg"), ("iVBORw0KGgo", "image/png"), ("R0lGODlh", "image/gif"), ("R0lGODdh", "image/gif"),
    ("UklGR", "image/webp"), ("Qk0", "image/bmp"), ("Qk1", "image/bmp"), ("SUkq", "image/tiff"), ("TU0A", "image/tiff"),
    ("AAABAA", "image/x-icon"),
)


def is_script(ref: str) -> bool:
    """`file://vars.py[:fn]` or a JavaScript/TypeScript file: a var loader, run per row."""
    path, _ = files.split_function(ref)
    return path.endswith(".py") or path.lower().endswith(JAVASCRIPT_SUFFIXES)


def load(path: Path) -> str:
    """A variable's value from a data file (not a script), as promptfoo renders it."""
    extension = path.name.rsplit(".", 1)[-1] if "." in path.name else ""
    lowered = extension.lower()
    if extension in ("yaml", "yml"):
        return js_json(files.parse_structured(files.read_text(path), path, None))
    if extension == "pdf":
        raise ConfigError("PDF variables (text extraction) are not supported by ci-grade; extract the text into a .txt file", file=files.display_path(path))
    if lowered in _IMAGES:
        data = base64.b64encode(files.read_bytes(path)).decode()
        return f"data:{image_type(data, lowered)};base64,{data}"
    if lowered in _VIDEOS or lowered in _AUDIO:
        return base64.b64encode(files.read_bytes(path)).decode()
    return files.read_text(path).strip()


def image_type(data: str, extension: str) -> str:
    """The MIME type of base64 image `data`: from its magic number, else the extension, else JPEG."""
    for prefix, mime in _MAGIC:
        if data.startswith(prefix):
            return mime
    return _IMAGE_TYPES.get(extension, "image/jpeg")


def strip_newline(variables: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's `value.replace(/\\n$/, "")` on every string variable."""
    return {k: v[:-1] if isinstance(v, str) and v.endswith("\n") else v for k, v in variables.items()}

