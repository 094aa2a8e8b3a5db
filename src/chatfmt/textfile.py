"""Reading text files given by a user: a file that is not text is an error naming the file."""

from __future__ import annotations

from pathlib import Path

from .errors import ChatFmtError


def decode_problem(source: object, exc: UnicodeDecodeError) -> str:
    """``x.json: not UTF-8 text (byte 0xe9 at offset 12)`` for a failed decode of ``source``."""
    byte = exc.object[exc.start] if exc.start < len(exc.object) else None
    what = f"byte 0x{byte:02x}" if isinstance(byte, int) else "a truncated character"
    names = {"utf8": "UTF-8", "ascii": "ASCII"}
    encoding = names.get(exc.encoding.replace("-", "").replace("_", "").lower(), exc.encoding)
    return f"{source}: not {encoding} text ({what} at offset {exc.start})"


def decode_text(data: bytes, source: object, *, error: type[ChatFmtError] = ChatFmtError) -> str:
    """``data`` decoded as UTF-8; undecodable bytes raise ``error`` naming ``source``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(decode_problem(source, exc)) from None


def read_text(
    path: str | Path, *, error: type[ChatFmtError] = ChatFmtError, encoding: str = "utf-8"
) -> str:
    """The text of ``path``; an unreadable or undecodable file raises ``error`` naming it."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise error(f"{p}: cannot read ({exc.strerror or exc})") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise error(decode_problem(p, exc)) from None
