"""``apply_chat_template`` for a transformers tokenizer, computed by chatfmt.

A drop-in for ``tokenizer.apply_chat_template(...)``: same arguments, same return types
(a string, ids, or a ``BatchEncoding`` with ``assistant_masks``), computed from chatfmt's
segments:

* the template is the tokenizer's own (or ``chat_template=``): a native chatfmt template
  where the source is recognized, else the sandboxed Jinja backend — the text is what
  transformers renders;
* ids are injection-safe: text from messages, tools and documents is never encoded as a
  control token (transformers does that only with ``sanitize_control_tokens=True``, which
  is accepted and always on here);
* ``assistant_masks`` mark what the model is trained on (each assistant reply and its
  end-of-turn token) for every template, also those without ``{% generation %}`` blocks,
  where transformers returns all zeros; like transformers, every assistant turn is marked
  whatever ``add_generation_prompt`` says (``chatfmt.encode`` itself trains nothing in an
  inference prompt unless ``train_on`` is given).

One-line change in a training script::

    from chatfmt.integrations.transformers import apply_chat_template
    batch = apply_chat_template(tokenizer, conversation, return_dict=True,
                                return_assistant_tokens_mask=True)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import TemplateError
from ..jinja.loaders import JinjaSource, from_source
from ..requests import RenderRequest
from ..template import Template
from ..tokens import IGNORE_INDEX, encode, load_tokenizer
from ..tokens.tokenizer import Tokenizer

#: chatfmt adapters of transformers tokenizers (wrapping serializes the vocabulary once).
_ADAPTERS: weakref.WeakKeyDictionary[Any, Tokenizer] = weakref.WeakKeyDictionary()


def _adapter(tokenizer: Any) -> Tokenizer:
    try:
        found = _ADAPTERS.get(tokenizer)
    except TypeError:  # not weakly referenceable
        return load_tokenizer(tokenizer)
    if found is None:
        found = _ADAPTERS[tokenizer] = load_tokenizer(tokenizer)
    return found


def template_of(tokenizer: Any, chat_template: str | None = None, tools: Any = None) -> Template:
    """The chatfmt template for the tokenizer's chat template (or ``chat_template``)."""
    getter: Callable[..., str] | None = getattr(tokenizer, "get_chat_template", None)
    try:
        source = (getter(chat_template, tools) if getter is not None else chat_template) or getattr(
            tokenizer, "chat_template", None
        )
    except ValueError as exc:  # transformers: no template set
        raise TemplateError(str(exc)) from None
    if not isinstance(source, str) or not source:
        raise TemplateError(
            f"{type(tokenizer).__name__} has no chat template; pass chat_template= (Jinja source)"
        )
    variables = {
        k: v for k, v in (getattr(tokenizer, "special_tokens_map", None) or {}).items() if v
    }
    # A token the tokenizer does not have renders as nothing in transformers; said so here,
    # so that recognition does not infer one from the native template.
    for key in ("bos_token", "eos_token"):
        variables.setdefault(key, "")
    return from_source(JinjaSource(source, variables, f"{type(tokenizer).__name__}.chat_template"))


def _clean(conversation: Any) -> list[dict[str, Any]]:
    """Messages without ``None`` values (as transformers passes them to the template)."""
    messages = getattr(conversation, "messages", conversation)
    return [
        {k: v for k, v in m.items() if v is not None} if isinstance(m, Mapping) else m
        for m in messages
    ]


def _is_batch(conversation: Any) -> bool:
    return (
        isinstance(conversation, (list, tuple))
        and len(conversation) > 0
        and (isinstance(conversation[0], (list, tuple)) or hasattr(conversation[0], "messages"))
    )


def apply_chat_template(
    tokenizer: Any,
    conversation: Any,
    tools: Sequence[Any] | None = None,
    documents: Sequence[Any] | None = None,
    chat_template: str | None = None,
    add_generation_prompt: bool = False,
    continue_final_message: bool = False,
    tokenize: bool = True,
    sanitize_control_tokens: bool = True,
    padding: bool | str = False,
    truncation: bool = False,
    max_length: int | None = None,
    return_tensors: str | None = None,
    return_dict: bool = True,
    return_assistant_tokens_mask: bool = False,
    tokenizer_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """``tokenizer.apply_chat_template(...)`` computed by chatfmt (see module doc).

    Arguments and return values are transformers'. ``sanitize_control_tokens`` is always
    on (content never becomes control ids); ``tokenizer_kwargs`` other than
    ``padding_side`` are refused rather than ignored. ``**kwargs`` are template variables.
    """
    if not tokenize:
        return_dict = False
    if return_assistant_tokens_mask and not (return_dict and tokenize):
        raise ValueError(
            "`return_assistant_tokens_mask=True` requires `return_dict=True` and `tokenize=True`"
        )
    if continue_final_message and add_generation_prompt:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible")
    if continue_final_message and return_assistant_tokens_mask:
        raise ValueError(
            "continue_final_message is not compatible with return_assistant_tokens_mask"
        )
    if isinstance(conversation, (list, tuple)) and len(conversation) == 0:
        raise ValueError("Cannot apply chat template to an empty conversation.")
    extra = dict(tokenizer_kwargs or {})
    padding_side = extra.pop("padding_side", None)
    if extra:
        raise ValueError(f"tokenizer_kwargs not supported by chatfmt: {', '.join(sorted(extra))}")
    if documents is not None:
        kwargs["documents"] = list(documents)
    batched = _is_batch(conversation)
    conversations = [_clean(c) for c in (conversation if batched else [conversation])]
    template = template_of(tokenizer, chat_template, tools)
    # kwargs are template variables; chatfmt's render keywords among them (now=) set the request.
    request = RenderRequest(
        tools=tools,
        add_generation_prompt=bool(add_generation_prompt),
        continue_final_message=bool(continue_final_message),
    )
    request = RenderRequest.from_kwargs(kwargs, request)

    if not tokenize:
        texts = [template.render(c, request=request) for c in conversations]
        return texts if batched else texts[0]

    adapter = _adapter(tokenizer)
    limit = max_length
    if truncation and limit is None:
        limit = getattr(tokenizer, "model_max_length", None)
    side = getattr(tokenizer, "truncation_side", "right")
    rows: list[dict[str, list[int]]] = []
    for c in conversations:
        enc = encode(
            c,
            template,
            adapter,
            request=request,
            train_on=_mask_of(c) if return_assistant_tokens_mask else None,
            max_length=limit if truncation else None,
            truncation=side if truncation else "error",
            on_mismatch="text",
            add_bos=False,
        )
        ids = [int(i) for i in enc.input_ids]
        row = {"input_ids": ids, "attention_mask": [1] * len(ids)}
        if return_assistant_tokens_mask:
            row["assistant_masks"] = [int(lab != IGNORE_INDEX) for lab in enc.labels]
        rows.append(row)

    if not return_dict:
        ids_only = [r["input_ids"] for r in rows]
        return ids_only if batched else ids_only[0]
    return _batch_encoding(
        tokenizer, rows, batched, padding, max_length, return_tensors, padding_side
    )


def _mask_of(conversation: Sequence[Any]) -> str:
    """What ``assistant_masks`` mark: every assistant turn, as transformers does whatever
    ``add_generation_prompt`` says (``chatfmt.encode``'s default trains nothing in an
    inference prompt); nothing when the conversation has no assistant turn."""
    has_reply = any(isinstance(m, Mapping) and m.get("role") == "assistant" for m in conversation)
    return "all_assistant" if has_reply else "none"


def _batch_encoding(
    tokenizer: Any,
    rows: list[dict[str, list[int]]],
    batched: bool,
    padding: bool | str,
    max_length: int | None,
    return_tensors: str | None,
    padding_side: str | None,
) -> Any:
    from transformers import BatchEncoding

    keys = list(rows[0])
    if padding and padding != "do_not_pad":
        if padding == "max_length":
            width = max_length or tokenizer.model_max_length
        else:
            width = max(len(r["input_ids"]) for r in rows)
        side = padding_side or getattr(tokenizer, "padding_side", "right")
        pad_id = tokenizer.pad_token_id
        if pad_id is None:
            raise ValueError("the tokenizer has no pad token; set tokenizer.pad_token to pad")
        fill = {"input_ids": pad_id, "attention_mask": 0, "assistant_masks": 0}
        for row in rows:
            gap = width - len(row["input_ids"])
            if gap > 0:
                for key in keys:
                    pad = [fill[key]] * gap
                    row[key] = pad + row[key] if side == "left" else row[key] + pad
    data: dict[str, Any] = {k: [r[k] for r in rows] for k in keys}
    if not batched and not return_tensors:
        data = {k: v[0] for k, v in data.items()}
    return BatchEncoding(data, tensor_type=return_tensors)
