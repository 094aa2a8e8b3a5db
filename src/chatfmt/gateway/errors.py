"""Errors of the gateway in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``."""

from __future__ import annotations

from typing import Any

from ..errors import (
    BackendConnectionError,
    BackendError,
    BackendTimeoutError,
    BackendUnavailableError,
    ChatFmtError,
    TemplateRenderError,
    ValidationError,
)


class APIError(Exception):
    """An error answered to the client: HTTP ``status`` and OpenAI's error object."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        """The JSON body (also the data of an SSE error event)."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


def param_of(exc: ValidationError) -> str | None:
    """The request field a validation error names, e.g. ``messages[2].tool_calls[0].function.arguments``."""
    where = f"messages[{exc.index}]" if exc.index is not None else ""
    if exc.field:
        where = f"{where}.{exc.field}" if where else exc.field
    return where or None


def api_error(exc: ChatFmtError) -> APIError:
    """The client's view of a chatfmt error.

    Bad input → 400 naming the field; an unreachable backend or one that timed out
    → 502, one that timed out (``BackendTimeoutError``) → 504, no engine of a pool available
    (``BackendUnavailableError``) → 503; any other backend failure → 502. Backend messages name the URL and the failure, never its API key
    (the key travels in a header only).
    """
    if isinstance(exc, BackendTimeoutError):
        return APIError(
            504, f"the backend timed out: {exc}", type="api_error", code="backend_timeout"
        )
    if isinstance(exc, BackendUnavailableError):
        return APIError(
            503, f"no backend is available: {exc}", type="api_error", code="backend_unavailable"
        )
    if isinstance(exc, BackendConnectionError):
        return APIError(
            502, f"the backend is unreachable: {exc}", type="api_error", code="backend_unreachable"
        )
    if isinstance(exc, BackendError):
        return APIError(502, f"the backend failed: {exc}", type="api_error", code="backend_error")
    if isinstance(exc, ValidationError):
        return APIError(400, str(exc), param=param_of(exc), code="invalid_value")
    if isinstance(exc, TemplateRenderError):
        param = f"messages[{exc.index}]" if exc.index is not None else "messages"
        return APIError(400, str(exc), param=param, code="invalid_value")
    return APIError(400, str(exc), code="invalid_value")
