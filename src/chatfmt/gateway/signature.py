"""chatfmt's own ``signature`` of Anthropic ``thinking`` blocks: an HMAC of the thinking text.

Anthropic's API signs each thinking block so that a client can only send back, in the
conversation's history, thinking the model really wrote. chatfmt does the same with a
secret of its own: HMAC-SHA256 of the block's text, keyed by the server's secret. The secret
is random per process unless configured (``--thinking-secret`` / ``CHATFMT_THINKING_SECRET``),
which several gateways behind one load balancer, or a restarted one, must share.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

#: Marks chatfmt's signatures (and their version) apart from Anthropic's.
_PREFIX = "chatfmt1."


class ThinkingSigner:
    """Signs thinking text and checks signatures sent back (``secret``: ``None`` for a
    random one)."""

    def __init__(self, secret: str | bytes | None = None) -> None:
        if secret is None:
            secret = secrets.token_bytes(32)
        self._key = secret.encode() if isinstance(secret, str) else bytes(secret)

    def sign(self, thinking: str) -> str:
        """The signature of ``thinking``."""
        digest = hmac.new(self._key, thinking.encode(), hashlib.sha256).digest()
        return _PREFIX + base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def valid(self, thinking: str, signature: str) -> bool:
        """Whether ``signature`` is this server's signature of ``thinking``."""
        return hmac.compare_digest(self.sign(thinking).encode(), signature.encode())
