"""Jinja chat templates: load any model's own template, recognize known ones, render safely.

Importing this package registers its loaders with the registry, so
:func:`chatfmt.get_template` accepts Jinja sources, ``.jinja`` files,
``tokenizer_config.json`` files, model directories and GGUF files.
"""

from __future__ import annotations

from ..registry import REGISTRY
from .loaders import (
    JinjaSource,
    detect,
    from_source,
    jinja_template,
    load_path,
    load_source,
    read_path,
)
from .recognize import Recognition, recognize
from .recognized import RecognizedTemplate
from .template import MERGE_SYSTEM, JinjaTemplate, SegmentTraceWarning, TemplateRejected

__all__ = [
    "MERGE_SYSTEM",
    "JinjaSource",
    "JinjaTemplate",
    "Recognition",
    "RecognizedTemplate",
    "SegmentTraceWarning",
    "TemplateRejected",
    "detect",
    "from_source",
    "jinja_template",
    "read_path",
    "recognize",
]

REGISTRY.add_path_loader(load_path)
REGISTRY.add_source_loader(load_source)
