"""CLI command groups. Each module defines ``register(app)`` and is wired in by :mod:`chatfmt.cli`."""
