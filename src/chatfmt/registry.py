"""The template registry: names, aliases, model-id and path matching, in one place."""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import TemplateError, TemplateNotFoundError
from .spec import SpecTemplate, TemplateSpec
from .template import Template

#: A loader turns a file or directory into a template, or returns ``None`` if it is not its kind.
PathLoader = Callable[[Path], "Template | None"]
#: A source loader turns template source text (e.g. Jinja) into a template, or ``None``.
SourceLoader = Callable[[str], "Template | None"]

_HF_CACHE = re.compile(r"models--([^/\\]+)--([^/\\]+)")


def _norm(name: str) -> str:
    return name.strip().lower()


class Registry:
    """Templates by name and alias, with lookup by model id and path."""

    def __init__(self) -> None:
        self._templates: dict[str, Template] = {}
        self._aliases: dict[str, str] = {}
        self._model_ids: dict[str, str] = {}
        self._path_loaders: list[PathLoader] = []
        self._source_loaders: list[SourceLoader] = []
        self._loaded = False

    # -------------------------------------------------------------- registration
    def register(self, template: Template | TemplateSpec, *, replace: bool = False) -> Template:
        """Add a template (or a spec, wrapped in :class:`SpecTemplate`)."""
        if isinstance(template, TemplateSpec):
            template = SpecTemplate(template)
        key = _norm(template.name)
        if not key:
            raise TemplateError("a template needs a name")
        if not replace and (key in self._templates or key in self._aliases):
            raise TemplateError(f"template name {template.name!r} is already registered")
        self._templates[key] = template
        for alias in template.aliases:
            a = _norm(alias)
            if (
                not replace
                and (a in self._templates or a in self._aliases)
                and self._aliases.get(a) != key
            ):
                raise TemplateError(f"alias {alias!r} of {template.name!r} is already taken")
            self._aliases[a] = key
        for model_id in template.model_ids:
            self._model_ids[_norm(model_id)] = key
        return template

    def add_path_loader(self, loader: PathLoader) -> None:
        """Let files of another kind (Jinja, GGUF, tokenizer_config.json) load as templates."""
        self._path_loaders.append(loader)

    def add_source_loader(self, loader: SourceLoader) -> None:
        """Let template source text (e.g. a Jinja string) load as a template."""
        self._source_loaders.append(loader)

    # -------------------------------------------------------------- lookup
    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from . import formats

        for mod in sorted(pkgutil.iter_modules(formats.__path__), key=lambda m: m.name):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{formats.__name__}.{mod.name}")
        importlib.import_module(
            "chatfmt.jinja"
        )  # Jinja sources, .jinja/GGUF/tokenizer_config loaders

    def names(self) -> list[str]:
        """Template names, sorted (independent of module import order)."""
        return [t.name for t in self]

    def __iter__(self) -> Iterator[Template]:
        """Templates sorted by name, so listings never depend on import order."""
        self._ensure_loaded()
        return iter(sorted(self._templates.values(), key=lambda t: t.name))

    def __contains__(self, name: str) -> bool:
        self._ensure_loaded()
        key = _norm(name)
        return key in self._templates or key in self._aliases

    def get(self, query: str | Path | Template) -> Template:
        """Find a template by name, alias, Hugging Face model id, local path or source text.

        Raises :class:`TemplateNotFoundError` listing close names on a miss.
        """
        if isinstance(query, Template):
            return query
        self._ensure_loaded()
        if isinstance(query, Path):
            return self._from_path(query)
        if not isinstance(query, str):
            raise TemplateError(
                f"template must be a name, path or Template, got {type(query).__name__}"
            )
        key = _norm(query)
        if key in self._templates:
            return self._templates[key]
        if key in self._aliases:
            return self._templates[self._aliases[key]]
        if "\n" in query or "{%" in query or "{{" in query:
            for load in self._source_loaders:
                tpl = load(query)
                if tpl is not None:
                    return tpl
            raise TemplateError("template source given, but no loader for it is available")
        path = Path(query).expanduser()
        if len(query) < 4096 and path.exists():
            return self._from_path(path)
        found = self.match_model(query)
        if found is not None:
            return found
        raise TemplateNotFoundError(query, self.suggest(query))

    def match_model(self, model: str) -> Template | None:
        """The template of a model id (``org/name``), a local model path or an HF cache path."""
        self._ensure_loaded()
        text = model.replace("\\", "/")
        cache = _HF_CACHE.search(text)
        if cache:
            text = f"{cache.group(1)}/{cache.group(2)}"
        parts = [p for p in text.rstrip("/").split("/") if p]
        if not parts:
            return None
        candidates = [_norm("/".join(parts[-2:])), _norm(parts[-1])]
        for cand in candidates:
            if cand in self._model_ids:
                return self._templates[self._model_ids[cand]]
        basename = candidates[-1]
        for model_id, key in self._model_ids.items():
            if model_id.rsplit("/", 1)[-1] == basename:
                return self._templates[key]
        # The longest pattern match wins; ties go to the first template by name.
        best: tuple[int, Template] | None = None
        for tpl in self:
            for pattern in tpl.model_patterns:
                m = re.search(pattern, basename)
                if m and (best is None or m.end() - m.start() > best[0]):
                    best = (m.end() - m.start(), tpl)
        return best[1] if best else None

    def suggest(self, query: str, n: int = 5) -> list[str]:
        words = list(self._templates) + list(self._aliases)
        base = _norm(query).rsplit("/", 1)[-1]
        return difflib.get_close_matches(base, words, n=n, cutoff=0.5)

    def _from_path(self, path: Path) -> Template:
        from .spec import load_spec_file

        if (path.is_file() and path.suffix.lower() in (".toml", ".yaml", ".yml")) or (
            path.is_file()
            and path.suffix.lower() == ".json"
            and path.name != "tokenizer_config.json"
            and _looks_like_spec(path)
        ):
            return load_spec_file(path)
        for load in self._path_loaders:
            tpl = load(path)
            if tpl is not None:
                return tpl
        found = self.match_model(str(path))
        if found is not None:
            return found
        raise TemplateNotFoundError(str(path), self.suggest(path.name))


def _looks_like_spec(path: Path) -> bool:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "roles" in data


#: The process-wide registry used by :func:`chatfmt.get_template`.
REGISTRY = Registry()


def register(template: Template | TemplateSpec, *, replace: bool = False) -> Template:
    """Register a template in the global registry."""
    return REGISTRY.register(template, replace=replace)
