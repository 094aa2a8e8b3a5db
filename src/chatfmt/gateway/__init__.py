"""An OpenAI-compatible chat API over raw completion backends (``chatfmt serve``).

``create_app(models, api_key=None, limits=None)`` builds the Starlette application
(``/v1/chat/completions``, ``/v1/responses`` with a :class:`ResponseStore`, …);
see ``docs/gateway.md``. Needs the ``serve`` extra (starlette, uvicorn).
"""

from __future__ import annotations

from .app import create_app
from .errors import APIError
from .models import Limits, ModelEntry
from .response_store import ResponseStore

__all__ = ["APIError", "Limits", "ModelEntry", "ResponseStore", "create_app"]
