"""The template registry: names, aliases, model-id and path matching, in one place."""

from __future__ import annotations

import difflib
import importlib
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
#: At most this many remembered lookups (the cache is emptied when full).
_RESOLVED_LIMIT = 4096
#: A model id or bare model name (``org/name``, ``name``), not a path that spells one.
_MODEL_ID = re.compile(r"[A-Za-z0-9_][\w.+-]*(?:/[\w.+-]+)?")


def _norm(name: str) -> str:
    return name.strip().lower()


class Registry:
    """Templates by name and alias, with lookup by model id and path.

    Names and aliases share one namespace and each model id names one template:
    :meth:`register` refuses a collision unless ``replace=True``. The built-in
    templates (each family listed once, in :data:`chatfmt.families.FAMILIES`) are added on first use.
    """

    def __init__(self, *, builtins: bool = True) -> None:
        self._templates: dict[str, Template] = {}
        self._aliases: dict[str, str] = {}
        self._model_ids: dict[str, str] = {}
        self._path_loaders: list[PathLoader] = []
        self._source_loaders: list[SourceLoader] = []
        #: Successful lookups of names, aliases and model ids by the exact query string.
        self._resolved: dict[str, Template] = {}
        self._loaded = not builtins

    # -------------------------------------------------------------- registration
    def register(self, template: Template | TemplateSpec, *, replace: bool = False) -> Template:
        """Add a template (or a spec, wrapped in :class:`SpecTemplate`).

        Raises :class:`TemplateError` when its name or an alias is already a name or
        alias of a registered template, or one of its model ids already names another
        template. ``replace=True`` replaces the template of the same name (dropping its
        old aliases and model ids) and takes aliases and model ids over from other
        templates; it never hides another template's name.
        """
        self._ensure_loaded()
        return self._add(template, replace=replace)

    def _add(self, template: Template | TemplateSpec, *, replace: bool) -> Template:
        if isinstance(template, TemplateSpec):
            template = SpecTemplate(template)
        if not isinstance(template, Template):
            raise TemplateError(
                f"register() takes a Template or TemplateSpec, got {type(template).__name__}"
            )
        key = _norm(template.name)
        if not key:
            raise TemplateError("a template needs a name")
        aliases = [a for a in dict.fromkeys(_norm(a) for a in template.aliases) if a and a != key]
        model_ids = [m for m in dict.fromkeys(_norm(m) for m in template.model_ids) if m]
        self._check_free(template.name, key, aliases, model_ids, replace=replace)
        if key in self._templates:  # replace=True: drop the old template's aliases and ids
            self._aliases = {a: k for a, k in self._aliases.items() if k != key}
            self._model_ids = {m: k for m, k in self._model_ids.items() if k != key}
        self._aliases.pop(key, None)
        self._templates[key] = template
        for alias in aliases:
            self._aliases[alias] = key
        for model_id in model_ids:
            self._model_ids[model_id] = key
        self._resolved.clear()
        return template

    def _owner(self, word: str) -> str | None:
        """Key of the template that has ``word`` as its name or an alias."""
        return word if word in self._templates else self._aliases.get(word)

    def _check_free(
        self, name: str, key: str, aliases: list[str], model_ids: list[str], *, replace: bool
    ) -> None:
        owner = self._owner(key)
        if owner is not None and not replace:
            if owner == key:
                raise TemplateError(f"template name {name!r} is already registered")
            raise TemplateError(
                f"template name {name!r} is already an alias of {self._name_of(owner)!r}"
            )
        for alias in aliases:
            owner = self._owner(alias)
            if owner is None or (replace and owner == key):
                continue
            if owner == alias:
                raise TemplateError(
                    f"alias {alias!r} of {name!r} is the name of template {self._name_of(owner)!r}"
                )
            if not replace:
                raise TemplateError(
                    f"alias {alias!r} of {name!r} is already an alias of {self._name_of(owner)!r}"
                )
        for model_id in model_ids:
            owner = self._model_ids.get(model_id)
            if owner is not None and owner != key and not replace:
                raise TemplateError(
                    f"model id {model_id!r} of {name!r} already names template "
                    f"{self._name_of(owner)!r}"
                )

    def _name_of(self, key: str) -> str:
        return self._templates[key].name

    def add_path_loader(self, loader: PathLoader) -> None:
        """Let files of another kind (Jinja, GGUF, tokenizer_config.json) load as templates."""
        self._path_loaders.append(loader)
        self._resolved.clear()

    def add_source_loader(self, loader: SourceLoader) -> None:
        """Let template source text (e.g. a Jinja string) load as a template."""
        self._source_loaders.append(loader)
        self._resolved.clear()

    # -------------------------------------------------------------- lookup
    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from .families import builtin_templates

        try:
            for template in builtin_templates():
                self._add(template, replace=False)
        except BaseException:
            # A broken built-in list fails every lookup loudly, never half a registry.
            self._templates.clear()
            self._aliases.clear()
            self._model_ids.clear()
            self._loaded = False
            raise
        importlib.import_module(
            "chatfmt.jinja"
        )  # Jinja sources, .jinja/GGUF/tokenizer_config loaders

    def names(self) -> list[str]:
        """Template names, sorted (independent of registration order)."""
        return [t.name for t in self]

    def __iter__(self) -> Iterator[Template]:
        """Templates sorted by name, so listings never depend on registration order."""
        self._ensure_loaded()
        return iter(sorted(self._templates.values(), key=lambda t: t.name))

    def __contains__(self, name: str) -> bool:
        self._ensure_loaded()
        return self._owner(_norm(name)) is not None

    def get(self, query: str | Path | Template) -> Template:
        """Find a template by name, alias, Hugging Face model id, local path or source text.

        A name, alias or model id found once is remembered (until the next
        :meth:`register`), so looking it up again costs one dict lookup. Paths and
        sources are resolved on every call (a file can change). Raises
        :class:`TemplateNotFoundError` listing close names on a miss.
        """
        if type(query) is str:
            hit = self._resolved.get(query)
            if hit is not None:
                return hit
        if isinstance(query, Template):
            return query
        self._ensure_loaded()
        if isinstance(query, Path):
            return self._from_path(query)
        if not isinstance(query, str):
            raise TemplateError(
                f"template must be a name, path or Template, got {type(query).__name__}"
            )
        owner = self._owner(_norm(query))
        if owner is not None:
            return self._remember(query, self._templates[owner])
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
            return self._remember(query, found) if _is_model_id(query) else found
        raise TemplateNotFoundError(query, self.suggest(query))

    def _remember(self, query: str, template: Template) -> Template:
        if len(self._resolved) >= _RESOLVED_LIMIT:  # model ids can be arbitrary: stay bounded
            self._resolved.clear()
        self._resolved[query] = template
        return template

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


def _is_model_id(query: str) -> bool:
    """Whether ``query`` reads as a model id, not as a path (``./x``, ``/x``, ``~/x``, ``a/b/c``).

    Only such lookups are remembered: a path that does not exist now may exist later.
    """
    return _MODEL_ID.fullmatch(query) is not None and "models--" not in query


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
