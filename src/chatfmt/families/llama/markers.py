"""llama: control tokens, written once for its templates and its parsers."""

from __future__ import annotations

from ...parsing.derived_format import ToolCallFormat

BEGIN_OF_TEXT = "<|begin_of_text|>"
BOS = "<s>"
END_HEADER_ID = "<|end_header_id|>"
END_OF_TEXT = "<|end_of_text|>"
EOM_ID = "<|eom_id|>"
EOS = "</s>"
EOT_ID = "<|eot_id|>"
FINETUNE_RIGHT_PAD_ID = "<|finetune_right_pad_id|>"
#: Llama 4's turn markers.
HEADER_START = "<|header_start|>"
HEADER_END = "<|header_end|>"
EOT = "<|eot|>"
EOM = "<|eom|>"
INST = "[INST]"
INST_CLOSE = "[/INST]"
PYTHON_TAG = "<|python_tag|>"
START_HEADER_ID = "<|start_header_id|>"
SYS_CLOSE = "<</SYS>>"
SYS_OPEN = "<<SYS>>"

#: Llama 3.1 / 3.2 JSON calls: a bare ``{"name": …, "parameters": …}`` object.
LLAMA3_JSON_FORMAT = ToolCallFormat("llama3_json", "bare_json_call", args_key="parameters")
#: vLLM's ``pythonic`` parser (Llama 3.2 with a template that asks for it): a bare list of
#: Python calls, ``[get_weather(city='Paris'), …]``.
PYTHONIC_FORMAT = ToolCallFormat("pythonic", "pythonic")
#: Llama 4: pythonic call lists (what the peers read), and the form its official template
#: writes past calls in — ``<|python_start|>text<|python_end|>`` then JSON objects.
LLAMA4_PYTHONIC_FORMAT = ToolCallFormat("llama4_pythonic", "pythonic")
LLAMA4_JSON_FORMAT = ToolCallFormat(
    "llama4_json", "json_call", call_begin="<|python_start|><|python_end|>", args_key="parameters"
)
