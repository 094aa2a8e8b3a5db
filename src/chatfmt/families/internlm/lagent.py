"""lagent 0.2.4's own prompt texts for InternLM2, as that release ships them (data).

Recorded from the installed package by ``tests/data/lagent/record.py`` (the parity tests
check them against that recording). They differ from the texts the InternLM2 seed prints
(``SEED_*`` in :mod:`.templates`, from an older lagent's API docs). A lagent 0.2.4 user
passes them as template options (docs/families.md)::

    render([{"role": "system", "content": LAGENT_0_2_4_META_CN}, ...], "internlm2",
           tools=..., **LAGENT_0_2_4_OPTIONS)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

#: lagent 0.2.4 ``internlm2_agent.META_CN``: the meta prompt (a system message) of its ``Internlm2Protocol``.
LAGENT_0_2_4_META_CN = "当开启工具以及代码时，根据需求选择合适的工具进行调用"

#: lagent 0.2.4 ``internlm2_agent.INTERPRETER_CN``: the code-interpreter prompt (option ``interpreter_prompt``).
LAGENT_0_2_4_INTERPRETER_CN = "你现在已经能够在一个有状态的 Jupyter 笔记本环境中运行 Python 代码。当你向 python 发送含有 Python 代码的消息时，它将在该环境中执行。这个工具适用于多种场景，如数据分析或处理（包括数据操作、统计分析、图表绘制），复杂的计算问题（解决数学和物理难题），编程示例（理解编程概念或特性），文本处理和分析（比如文本解析和自然语言处理），机器学习和数据科学（用于展示模型训练和数据可视化），以及文件操作和数据导入（处理CSV、JSON等格式的文件）。"

#: lagent 0.2.4 ``internlm2_agent.PLUGIN_CN``: the plugin prompt, a ``str.format`` string with ``{prompt}`` (option ``plugin_prompt``).
LAGENT_0_2_4_PLUGIN_CN = "你可以使用如下工具：\n{prompt}\n如果你已经获得足够信息，请直接给出答案. 避免不必要的工具调用! 同时注意你可以使用的工具，不要随意捏造！"

#: lagent 0.2.4 ``internlm2_agent.API_PREFIX``: the head of each tool description (``tools_json="lagent"`` writes it).
LAGENT_0_2_4_API_PREFIX = "This is the subfunction for tool '{tool_name}', you can use this tool. The description of this function is: \n{description}"

#: lagent 0.2.4 ``JsonParser.PARAMETER_DESCRIPTION``: the ``parameter_description`` of each tool description.
LAGENT_0_2_4_PARAMETER_DESCRIPTION = "If you call this tool, you must pass arguments in the JSON format {key: value}, where the key is the parameter name."

#: InternLM2 template options that write prompts as lagent 0.2.4's ``Internlm2Agent`` does
#: (put :data:`LAGENT_0_2_4_META_CN` first as a system message yourself).
LAGENT_0_2_4_OPTIONS: Mapping[str, Any] = MappingProxyType(
    {
        "bos_token": "",  # lagent's prompt is text; the engine's tokenizer adds BOS
        "interpreter_prompt": LAGENT_0_2_4_INTERPRETER_CN,
        "plugin_prompt": LAGENT_0_2_4_PLUGIN_CN,
        "tools_json": "lagent",
        "plugin_newline": True,
    }
)
