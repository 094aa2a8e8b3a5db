"""glimmer: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

ATEM_FUNCTION_CALLS = "<atem:function_calls>"
ATEM_FUNCTION_CALLS_CLOSE = "</atem:function_calls>"
EOM = "<|eom|>"
EOT = "<|eot|>"
MESSAGE = "<|message|>"
START = "<|start|>"

#: `` to=NAME<|message|><atem:function_calls><atem:invoke name="NAME">`` then
#: ``<atem:parameter name="K">V</atem:parameter>`` per argument; one call per message.
GLIMMER_FORMAT = ToolCallFormat(
    "glimmer",
    "xml_pairs",
    calls_begin=" to={name}" + MESSAGE + ATEM_FUNCTION_CALLS,
    calls_end=ATEM_FUNCTION_CALLS_CLOSE,
    call_begin='<atem:invoke name="',
    name_sep='">',
    call_end="</atem:invoke>",
    key_open='<atem:parameter name="',
    key_close='">',
    value_close="</atem:parameter>",
    one_call=True,
)
