"""Drop-in replacements for other libraries' chat-template entry points."""
