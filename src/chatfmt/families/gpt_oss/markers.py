"""gpt_oss: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

CALL = "<|call|>"
CHANNEL = "<|channel|>"
CONSTRAIN = "<|constrain|>"
END = "<|end|>"
MESSAGE = "<|message|>"
RETURN = "<|return|>"
START = "<|start|>"

#: ``to=functions.NAME<|channel|>commentary json<|message|>{…}``: the template's header; the
#: model also writes the channel first (``<|channel|>commentary to=functions.NAME
#: <|constrain|>json<|message|>``). One call per message; ``<|call|>`` ends the turn.
HARMONY_FORMAT = ToolCallFormat(
    "harmony",
    "json_arguments",
    call_begin=" to=functions.",
    name_sep=CHANNEL + "commentary json" + MESSAGE,
    name_seps=(
        CHANNEL + "commentary " + CONSTRAIN + "json" + MESSAGE,
        " " + CONSTRAIN + "json" + MESSAGE,
        " json" + MESSAGE,
        MESSAGE,
    ),
    one_call=True,
)
