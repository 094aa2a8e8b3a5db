"""Built-in chat formats, one module per family. Every module registers its templates on import."""
