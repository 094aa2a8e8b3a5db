"""Streamed responses: what an API's event generator yields to :class:`~.app.EventStream`.

An API's events are bytes, written as they come (several events made from one backend
chunk are best joined into one write). Its last write may be marked :class:`Last`: the
stream then ends with it, in the same write as the end of the body.
"""

from __future__ import annotations


class Last(bytes):
    """The last bytes of a stream (the end of the body is sent with them)."""

    __slots__ = ()
