"""Mistral chat formats: v1 (7B v0.1/v0.2), v3 (v0.3, tools), v3-tekken (Nemo), v7 (Small 3.x) and Devstral.

Each reproduces the official Jinja template byte for byte, including its rules:
user/assistant alternation after an optional system message (``RoleOrderError``),
9-character tool-call ids (``ValidationError``; chatfmt also requires them to be
alphanumeric, as Mistral's tokenizers do), v3's system text and tool list placed
before the *last* user message, and no generation prompt (prompts end with ``[/INST]``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...config import GenerationConfig
from ...errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from ...jinja.packaged import PackagedTemplate
from ...protocol import Conversation, Message, Tool
from ...segments import Segment, SegmentBuilder
from ...template import (
    RenderContext,
    Template,
    refuse_system_without_user,
    text_beside_calls,
)
from ...tool_format import no_tool_format
from .markers import (
    ARGS,
    AVAILABLE_TOOLS,
    AVAILABLE_TOOLS_CLOSE,
    BOS,
    CALL_ID,
    EOS,
    IMG,
    INST,
    INST_CLOSE,
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_CLOSE,
    TOOL_CALLS,
    TOOL_CONTENT,
    TOOL_RESULTS,
    TOOL_RESULTS_CLOSE,
)
from .parser import MistralParser, MistralThinkParser

ALTERNATE = (
    "After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/..."
)
ONLY_USER_ASSISTANT = "Only user and assistant roles are supported, with the exception of an initial optional system message!"
BAD_ID = "Tool call IDs should be alphanumeric strings with length 9!"
_TOKENS_V3 = (
    BOS,
    EOS,
    INST,
    INST_CLOSE,
    AVAILABLE_TOOLS,
    AVAILABLE_TOOLS_CLOSE,
    TOOL_CALLS,
    TOOL_RESULTS,
    TOOL_RESULTS_CLOSE,
)
_TOKENS_V7 = (
    *_TOKENS_V3,
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_CLOSE,
    CALL_ID,
    ARGS,
    TOOL_CONTENT,
    IMG,
)

_V7_DEFAULT_SYSTEM = (
    "You are Mistral Small 3, a Large Language Model (LLM) created by Mistral AI, a French "
    "startup headquartered in Paris.\n"
    "Your knowledge base was last updated on 2023-10-01. The current date is {today}.\n"
    "\n"
    "When you're not sure about some information or when the user's request requires "
    "up-to-date or specific data, you must use the available tools to fetch the information. "
    "Do not hesitate to use tools whenever they can provide a more accurate or complete "
    "response. If no relevant tools are available, then clearly state that you don't have the "
    "information and avoid making up anything.\n"
    "\n"
    "If the user's question is not clear, ambiguous, or does not provide enough context for "
    "you to accurately answer the question, you do not try to answer it right away and you "
    'rather ask the user to clarify their request (e.g. "What are some good restaurants around '
    'me?" => "Where are you?" or "When is the next flight to Tokyo" => "Where do you travel '
    'from?").\n'
    "You are always very attentive to dates, and when asked about information at specific "
    "dates, you discard information that is at another date.\n"
    "You follow these instructions in all languages, and always respond to the user in the "
    "language they use or request.\n"
    "Next sections describe the capabilities that you have.\n"
    "\n"
    "# WEB BROWSING INSTRUCTIONS\n"
    "\n"
    "You cannot perform any web search or access internet to open URLs, links etc. If it seems "
    "like the user is expecting you to do so, you clarify the situation and ask the user to "
    "copy paste the text directly in the chat.\n"
    "\n"
    "# MULTI-MODAL INSTRUCTIONS\n"
    "\n"
    "You have the ability to read images, but you cannot generate images. You also cannot "
    "transcribe audio files or videos.\n"
    "You cannot read nor transcribe audio files or videos.\n"
    "\n"
    "# TOOL CALLING INSTRUCTIONS\n"
    "\n"
    "You may have access to tools that you can use to fetch information or perform actions. "
    "You must use these tools in the following situations:\n"
    "\n"
    "1. When the request requires up-to-date information.\n"
    "2. When the request requires specific data that you do not have in your knowledge base.\n"
    "3. When the request involves actions that you cannot perform without tools.\n"
    "\n"
    "Always prioritize using tools to provide the most accurate and helpful response. If tools "
    "are not available, inform the user that you cannot perform the requested action at the "
    "moment."
)

_DEVSTRAL_DEFAULT_SYSTEM = (
    "You are Devstral, a helpful agentic model trained by Mistral AI and using the OpenHands "
    "scaffold. You can interact with a computer to solve tasks.\n"
    "\n"
    "<ROLE>\n"
    "Your primary role is to assist users by executing commands, modifying code, and solving "
    "technical problems effectively. You should be thorough, methodical, and prioritize "
    "quality over speed.\n"
    '* If the user asks a question, like "why is X happening", don\'t try to fix the problem. '
    "Just give an answer to the question.\n"
    "</ROLE>\n"
    "\n"
    "<EFFICIENCY>\n"
    "* Each action you take is somewhat expensive. Wherever possible, combine multiple actions "
    "into a single action, e.g. combine multiple bash commands into one, using sed and grep to "
    "edit/view multiple files at once.\n"
    "* When exploring the codebase, use efficient tools like find, grep, and git commands with "
    "appropriate filters to minimize unnecessary operations.\n"
    "</EFFICIENCY>\n"
    "\n"
    "<FILE_SYSTEM_GUIDELINES>\n"
    "* When a user provides a file path, do NOT assume it's relative to the current working "
    "directory. First explore the file system to locate the file before working on it.\n"
    "* If asked to edit a file, edit the file directly, rather than creating a new file with a "
    "different filename.\n"
    "* For global search-and-replace operations, consider using `sed` instead of opening file "
    "editors multiple times.\n"
    "</FILE_SYSTEM_GUIDELINES>\n"
    "\n"
    "<CODE_QUALITY>\n"
    "* Write clean, efficient code with minimal comments. Avoid redundancy in comments: Do not "
    "repeat information that can be easily inferred from the code itself.\n"
    "* When implementing solutions, focus on making the minimal changes needed to solve the "
    "problem.\n"
    "* Before implementing any changes, first thoroughly understand the codebase through "
    "exploration.\n"
    "* If you are adding a lot of code to a function or file, consider splitting the function "
    "or file into smaller pieces when appropriate.\n"
    "</CODE_QUALITY>\n"
    "\n"
    "<VERSION_CONTROL>\n"
    '* When configuring git credentials, use "openhands" as the user.name and '
    '"openhands@all-hands.dev" as the user.email by default, unless explicitly instructed '
    "otherwise.\n"
    "* Exercise caution with git operations. Do NOT make potentially dangerous changes (e.g., "
    "pushing to main, deleting repositories) unless explicitly asked to do so.\n"
    "* When committing changes, use `git status` to see all modified files, and stage all "
    "files necessary for the commit. Use `git commit -a` whenever possible.\n"
    "* Do NOT commit files that typically shouldn't go into version control (e.g., "
    "node_modules/, .env files, build directories, cache files, large binaries) unless "
    "explicitly instructed by the user.\n"
    "* If unsure about committing certain files, check for the presence of .gitignore files or "
    "ask the user for clarification.\n"
    "</VERSION_CONTROL>\n"
    "\n"
    "<PULL_REQUESTS>\n"
    "* When creating pull requests, create only ONE per session/issue unless explicitly "
    "instructed otherwise.\n"
    "* When working with an existing PR, update it with new commits rather than creating "
    "additional PRs for the same issue.\n"
    "* When updating a PR, preserve the original PR title and purpose, updating description "
    "only when necessary.\n"
    "</PULL_REQUESTS>\n"
    "\n"
    "<PROBLEM_SOLVING_WORKFLOW>\n"
    "1. EXPLORATION: Thoroughly explore relevant files and understand the context before "
    "proposing solutions\n"
    "2. ANALYSIS: Consider multiple approaches and select the most promising one\n"
    "3. TESTING:\n"
    "   * For bug fixes: Create tests to verify issues before implementing fixes\n"
    "   * For new features: Consider test-driven development when appropriate\n"
    "   * If the repository lacks testing infrastructure and implementing tests would require "
    "extensive setup, consult with the user before investing time in building testing "
    "infrastructure\n"
    "   * If the environment is not set up to run tests, consult with the user first before "
    "investing time to install all dependencies\n"
    "4. IMPLEMENTATION: Make focused, minimal changes to address the problem\n"
    "5. VERIFICATION: If the environment is set up to run tests, test your implementation "
    "thoroughly, including edge cases. If the environment is not set up to run tests, consult "
    "with the user first before investing time to run tests.\n"
    "</PROBLEM_SOLVING_WORKFLOW>\n"
    "\n"
    "<SECURITY>\n"
    "* Only use GITHUB_TOKEN and other credentials in ways the user has explicitly requested "
    "and would expect.\n"
    "* Use APIs to work with GitHub or other platforms, unless the user asks otherwise or your "
    "task requires browsing.\n"
    "</SECURITY>\n"
    "\n"
    "<ENVIRONMENT_SETUP>\n"
    "* When user asks you to run an application, don't stop if the application is not "
    "installed. Instead, please install the application and run the command again.\n"
    "* If you encounter missing dependencies:\n"
    "  1. First, look around in the repository for existing dependency files "
    "(requirements.txt, pyproject.toml, package.json, Gemfile, etc.)\n"
    "  2. If dependency files exist, use them to install all dependencies at once (e.g., `pip "
    "install -r requirements.txt`, `npm install`, etc.)\n"
    "  3. Only install individual packages directly if no dependency files are found or if "
    "only specific packages are needed\n"
    "* Similarly, if you encounter missing dependencies for essential tools requested by the "
    "user, install them when possible.\n"
    "</ENVIRONMENT_SETUP>\n"
    "\n"
    "<TROUBLESHOOTING>\n"
    "* If you've made repeated attempts to solve a problem but tests still fail or the user "
    "reports it's still broken:\n"
    "  1. Step back and reflect on 5-7 different possible sources of the problem\n"
    "  2. Assess the likelihood of each possible cause\n"
    "  3. Methodically address the most likely causes, starting with the highest probability\n"
    "  4. Document your reasoning process\n"
    "* When you run into any major issue while executing a plan from the user, please don't "
    "try to directly work around it. Instead, propose a new plan and confirm with the user "
    "before proceeding.\n"
    "</TROUBLESHOOTING>"
)


def check_id(value: str | None, index: int, field: str) -> str:
    """A Mistral tool-call id: exactly 9 ASCII letters/digits."""
    if value is None or len(value) != 9 or not (value.isascii() and value.isalnum()):
        raise ValidationError(f"{BAD_ID} (got {value!r})", index=index, field=field)
    return value


def check_alternation(msgs: Sequence[Message]) -> None:
    """User at even and non-user at odd positions, skipping tool results and tool-call turns."""
    pos = 0
    for m in msgs:
        if m.role == "tool" or m.tool_calls:
            continue
        if (m.role == "user") != (pos % 2 == 0):
            raise RoleOrderError(ALTERNATE, index=m.index, field="role")
        pos += 1


def _is_last_user(m: Message, users: Sequence[Message]) -> bool:
    """The official ``message == user_messages[-1]`` (dict equality, so equal copies count too)."""
    last = users[-1]
    return m.content == last.content and m.name == last.name


def refuse_tools_without_user(name: str, conv: Conversation, msgs: Sequence[Message]) -> None:
    """The tool list goes before the last user turn: without one it would vanish."""
    if conv.tools and not any(m.role == "user" for m in msgs):
        raise UnsupportedFeatureError(
            f"template {name!r} writes the tool list before the last user message and there "
            "is none (the official template would drop the tools silently); add a user message",
            field="tools",
        )


def _function_tools(name: str, conv: Conversation) -> tuple[Tool, ...]:
    if conv.has_code_interpreter:
        raise UnsupportedFeatureError(
            f"template {name!r} has no code-interpreter tool", field="tools"
        )
    return conv.function_tools


class MistralV1Template(Template):
    """Mistral v1 (7B-Instruct v0.1/v0.2, Mixtral 8x7B): ``<s> [INST] {system}\\n\\n{user} [/INST] {answer}</s>``."""

    name = "mistral-v1"
    aliases = ("mistral", "mistral-instruct", "mixtral")
    model_ids = (
        "mistralai/Mistral-7B-Instruct-v0.1",
        "mistralai/Mistral-7B-Instruct-v0.2",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
    )
    model_patterns = (r"mistral-7b-instruct-v0\.[12]", r"mixtral-8x7b-instruct")
    description = (
        "Mistral v1: ' [INST] …\\n\\n… [/INST] …</s>' with the system text in the first user turn."
    )
    source = "official Jinja: mistralai-Mistral-7B-Instruct-v0.2.jinja (llama.cpp test case)"
    official_templates = ("mistralai-Mistral-7B-Instruct-v0.2.jinja",)
    control_tokens = (BOS, EOS, INST, INST_CLOSE)
    text_control_tokens = (INST, INST_CLOSE)  # plain text to the v1 tokenizer (v3 has them)
    generation_config = GenerationConfig(
        session_len=32768, stop_words=(EOS,), top_p=1.0, temperature=0.7
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        system, msgs = conv.split_system()
        refuse_system_without_user(self.name, system, msgs)
        b = ctx.builder()
        b.control(BOS)
        for k, m in enumerate(msgs):
            if (m.role == "user") != (k % 2 == 0):
                raise RoleOrderError(ALTERNATE, index=m.index, field="role")
            if m.tool_calls:
                raise no_tool_format(self.name, m.index)
            if m.role == "user":
                b.control(" [INST] ", m.index)
                if k == 0 and system is not None:
                    b.content(system.text, system.index)
                    b.control("\n\n", system.index)
                b.content(m.text, m.index)
                b.control(" [/INST]", m.index)
            elif m.role == "assistant":
                b.control(" ", m.index, True)
                b.content(m.text, m.index, True)
                b.control(EOS, m.index, True)
            else:
                raise UnsupportedFeatureError(ONLY_USER_ASSISTANT, index=m.index, field="role")
        return b.segments


class MistralV3Template(Template):
    """Mistral v3 (7B-Instruct v0.3, Large 2407, Mixtral 8x22B): tools in ``[AVAILABLE_TOOLS]``
    before the last user turn, ``[TOOL_CALLS]`` JSON lists and ``[TOOL_RESULTS]``.

    As the official template, the system text is put into the last user turn; where the
    official template would drop it (the conversation does not end with a user turn) or
    the text beside tool calls, chatfmt raises ``UnsupportedFeatureError`` instead.
    """

    name = "mistral-v3"
    aliases: tuple[str, ...] = ("mistral-v0.3",)
    model_ids: tuple[str, ...] = (
        "mistralai/Mistral-7B-Instruct-v0.3",
        "mistralai/Mistral-Large-Instruct-2407",
        "mistralai/Mixtral-8x22B-Instruct-v0.1",
    )
    model_patterns: tuple[str, ...] = (
        r"mistral-7b-instruct-v0\.3",
        r"mistral-large-instruct-2407",
        r"mixtral-8x22b-instruct",
    )
    description = "Mistral v3: [INST] turns, [AVAILABLE_TOOLS], [TOOL_CALLS] and [TOOL_RESULTS] (SentencePiece spacing)."
    source = "official Jinja: mistralai-Mistral-Large-Instruct-2407.jinja (llama.cpp test case; same as 7B v0.3)"
    official_templates: tuple[str, ...] = ("mistralai-Mistral-Large-Instruct-2407.jinja",)
    prefix_stable = False  # the system prompt goes into the last user turn
    supports_tools = True
    tool_parser_class = MistralParser
    control_tokens = _TOKENS_V3
    generation_config = GenerationConfig(
        session_len=32768, stop_words=(EOS,), top_p=1.0, temperature=0.7
    )
    #: Spacing of the SentencePiece (v3) or tekken (v3-tekken) variant.
    sp: str = " "

    def _tools(self, b: SegmentBuilder, tools: Sequence[Tool], index: int) -> None:
        b.control(AVAILABLE_TOOLS + self.sp + "[", index)
        for k, tool in enumerate(tools):
            b.control('{"type": "function", "function": {', index)
            items = [(key, val) for key, val in tool.function.items() if key != "return"]
            for j, (key, val) in enumerate(items):
                if isinstance(val, str):
                    b.content(f'"{key}": "{val}"', index)
                else:
                    b.content(f'"{key}": ' + json.dumps(val, ensure_ascii=False), index)
                if j < len(items) - 1:
                    b.control(", ", index)
            b.control("}}", index)
            b.control(", " if k < len(tools) - 1 else "]", index)
        b.control(AVAILABLE_TOOLS_CLOSE, index)

    def _calls(self, b: SegmentBuilder, m: Message) -> None:
        i = m.index
        b.control(TOOL_CALLS + self.sp + "[", i, True)
        for j, call in enumerate(m.tool_calls):
            if call.is_code:
                raise UnsupportedFeatureError(
                    f"template {self.name!r} has no code-interpreter call format",
                    index=i,
                    field=f"tool_calls[{j}]",
                )
            call_id = check_id(call.id, i, f"tool_calls[{j}].id")
            b.control('{"name": ', i, True)
            b.content(json.dumps(call.name, ensure_ascii=False), i, True)
            b.control(', "arguments": ', i, True)
            b.content(json.dumps(call.arguments, ensure_ascii=False), i, True)
            b.control(', "id": "', i, True)
            b.content(call_id, i, True)
            b.control('"}', i, True)
            b.control(", " if j < len(m.tool_calls) - 1 else "]" + EOS, i, True)

    def _result(self, b: SegmentBuilder, m: Message) -> None:
        call_id = check_id(m.tool_call_id, m.index, "tool_call_id")
        b.turn(TOOL_RESULTS + self.sp + '{"content": ', m.text, ', "call_id": "', "", m.index)
        b.content(call_id, m.index)
        b.control('"}[/TOOL_RESULTS]', m.index)

    def _answer(self, b: SegmentBuilder, m: Message) -> None:
        b.control(" ", m.index, True)
        b.content(m.text.strip(), m.index, True)
        b.control(EOS, m.index, True)

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        system, msgs = conv.split_system()
        tools = _function_tools(self.name, conv)
        users = [m for m in msgs if m.role == "user"]
        check_alternation(msgs)
        refuse_tools_without_user(self.name, conv, msgs)
        if system is not None and system.content and (not msgs or msgs[-1].role != "user"):
            raise UnsupportedFeatureError(
                f"template {self.name!r} writes the system prompt into the final user turn, and "
                "this conversation does not end with a user message (the official template "
                "would drop the system prompt silently)",
                index=system.index,
                field="content",
            )
        b = ctx.builder()
        b.control(BOS)
        for k, m in enumerate(msgs):
            if m.role == "user":
                if tools and _is_last_user(m, users):
                    self._tools(b, tools, m.index)
                b.control(INST + self.sp, m.index)
                if k == len(msgs) - 1 and system is not None:
                    b.content(system.text, system.index)
                    b.control("\n\n", system.index)
                b.content(m.text, m.index)
                b.control(INST_CLOSE, m.index)
            elif m.tool_calls:
                # The official template writes only the calls: text beside them is written as
                # the model writes it (as an answer's text, then the calls; refused with
                # strict_history).
                if text_beside_calls(self.name, m, ctx, dropped="content"):
                    if self.sp:
                        b.control(self.sp, m.index, True)
                    b.content(m.text, m.index, True)
                self._calls(b, m)
            elif m.role == "assistant":
                self._answer(b, m)
            elif m.role == "tool":
                self._result(b, m)
            else:
                raise UnsupportedFeatureError(ONLY_USER_ASSISTANT, index=m.index, field="role")
        return b.segments


class MistralV3TekkenTemplate(MistralV3Template):
    """Mistral v3-tekken (Nemo): v3 without the SentencePiece spaces; answers are not trimmed."""

    name = "mistral-v3-tekken"
    aliases = ("mistral-nemo", "mistral-tekken")
    model_ids = (
        "mistralai/Mistral-Nemo-Instruct-2407",
        "mistralai/Ministral-8B-Instruct-2410",
    )
    model_patterns = (r"mistral-nemo", r"ministral-8b-instruct-2410")
    description = (
        "Mistral v3-tekken (Nemo): [INST]…[/INST]…</s> with tools, no spaces around control tokens."
    )
    source = "official Jinja: mistralai-Mistral-Nemo-Instruct-2407.jinja"
    official_templates = ("mistralai-Mistral-Nemo-Instruct-2407.jinja",)
    generation_config = GenerationConfig(
        session_len=131072, stop_words=(EOS,), top_p=1.0, temperature=0.3
    )
    sp = ""

    def _answer(self, b: SegmentBuilder, m: Message) -> None:
        b.content(m.text, m.index, True)
        b.control(EOS, m.index, True)


class MistralV7Template(Template):
    """Mistral v7-tekken (Small 3.x): ``[SYSTEM_PROMPT]`` (a dated default when none is given),
    ``[AVAILABLE_TOOLS]{json}`` before the last user turn, ``[TOOL_CALLS]name[CALL_ID]id[ARGS]{json}``.
    """

    name = "mistral-v7"
    aliases = ("mistral-v7-tekken", "mistral-small", "mistral-small-3")
    model_ids = (
        "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        "mistralai/Mistral-Small-24B-Instruct-2501",
    )
    model_patterns = (r"mistral-small-(3\.\d-)?24b-instruct",)
    description = "Mistral v7 (Small 3.x): [SYSTEM_PROMPT] with a dated default, [INST]…[/INST]…</s>, [TOOL_CALLS]name[CALL_ID]…[ARGS]…."
    source = "official Jinja: Mistral-Small-3.2-24B-Instruct-2506.jinja (2501/2503 default system texts differ)"
    official_templates = ("Mistral-Small-3.2-24B-Instruct-2506.jinja",)
    supports_tools = True
    tool_parser_class = MistralParser
    control_tokens = _TOKENS_V7
    generation_config = GenerationConfig(
        session_len=131072, stop_words=(EOS,), top_p=1.0, temperature=0.15
    )

    def default_system(self, ctx: RenderContext) -> str:
        return _V7_DEFAULT_SYSTEM.replace("{today}", ctx.now.isoformat())

    def _calls(self, b: SegmentBuilder, m: Message) -> None:
        i = m.index
        for j, call in enumerate(m.tool_calls):
            call_id = check_id(call.id, i, f"tool_calls[{j}].id")
            b.control(TOOL_CALLS, i, True)
            b.content(call.name, i, True)
            b.control(CALL_ID, i, True)
            b.content(call_id, i, True)
            b.control(ARGS, i, True)
            b.content(json.dumps(call.arguments, ensure_ascii=False), i, True)
        b.control(EOS, i, True)

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        system, msgs = conv.split_system()
        users = [m for m in msgs if m.role == "user"]
        check_alternation(msgs)
        refuse_tools_without_user(self.name, conv, msgs)
        b = ctx.builder()
        b.control(BOS)
        b.control(SYSTEM_PROMPT, system.index if system else None)
        if system is None:
            b.control(self.default_system(ctx))
        else:
            b.content(system.text, system.index)
        b.control(SYSTEM_PROMPT_CLOSE, system.index if system else None)
        for m in msgs:
            i = m.index
            if m.role == "system":
                b.turn(SYSTEM_PROMPT, m.text, SYSTEM_PROMPT_CLOSE, "", i)
            elif m.role == "user":
                if conv.tools and _is_last_user(m, users):
                    b.turn(
                        AVAILABLE_TOOLS,
                        json.dumps([dict(t.raw) for t in conv.tools], ensure_ascii=False),
                        AVAILABLE_TOOLS_CLOSE,
                        "",
                        i,
                    )
                b.turn(INST, m.text, INST_CLOSE, "", i)
            elif m.role == "assistant" and m.tool_calls:
                # The official template writes only the calls: text beside them is written as
                # the model writes it, right before them (refused with strict_history).
                if text_beside_calls(self.name, m, ctx, dropped="content"):
                    b.content(m.text, m.index, True)
                self._calls(b, m)
            elif m.role == "assistant":
                if m.content is None:
                    raise ValidationError(
                        "assistant message needs content or tool_calls", index=i, field="content"
                    )
                b.content(m.text, i, True)
                b.control(EOS, i, True)
            else:
                call_id = check_id(m.tool_call_id, i, "tool_call_id")
                b.turn(TOOL_RESULTS, call_id, TOOL_CONTENT, "", i)
                b.content(m.text, i)
                b.control(TOOL_RESULTS_CLOSE, i)
        return b.segments


class DevstralTemplate(Template):
    """Devstral Small 2507 (Unsloth's template): v7 tokens, the OpenHands default system
    prompt, the tool list right after the system prompt and ``[TOOL_CALLS]name[ARGS]args`` calls.
    """

    name = "devstral"
    aliases = ("devstral-small",)
    model_ids = ("unsloth/Devstral-Small-2507", "mistralai/Devstral-Small-2507")
    model_patterns = (r"devstral",)
    description = "Devstral (Unsloth template): [SYSTEM_PROMPT], [AVAILABLE_TOOLS], [TOOL_CALLS]name[ARGS]…, [TOOL_RESULTS]."
    source = "official Jinja: unsloth-mistral-Devstral-Small-2507.jinja (Unsloth's template)"
    official_templates = ("unsloth-mistral-Devstral-Small-2507.jinja",)
    supports_tools = True
    tool_parser_class = MistralParser
    control_tokens = _TOKENS_V7
    generation_config = GenerationConfig(
        session_len=131072, stop_words=(EOS,), top_p=1.0, temperature=0.15
    )

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        system, msgs = conv.split_system()
        b = ctx.builder()
        b.control(BOS)
        b.control(SYSTEM_PROMPT, system.index if system else None)
        if system is None:
            b.control(_DEVSTRAL_DEFAULT_SYSTEM)
        else:
            b.content(system.text, system.index)
        b.control(SYSTEM_PROMPT_CLOSE, system.index if system else None)
        if conv.tools:
            b.control(AVAILABLE_TOOLS)
            b.content(json.dumps([dict(t.raw) for t in conv.tools], ensure_ascii=False))
            b.control(AVAILABLE_TOOLS_CLOSE)
        for m in msgs:
            i = m.index
            if m.role == "user":
                b.turn(INST, m.text, INST_CLOSE, "", i)
            elif m.role == "system":
                b.turn(SYSTEM_PROMPT, m.text, SYSTEM_PROMPT_CLOSE, "", i)
            elif m.role == "assistant":
                if m.content is None:
                    raise ValidationError(
                        f'template {self.name!r} needs string content (use "" with tool_calls)',
                        index=i,
                        field="content",
                    )
                b.content(m.text, i, True)
                for call in m.tool_calls:
                    b.control(TOOL_CALLS, i, True)
                    b.content(call.name, i, True)
                    b.control(ARGS, i, True)
                    b.content(call.arguments_json, i, True)
                b.control(EOS, i, True)
            else:
                b.turn(TOOL_RESULTS, m.text, TOOL_RESULTS_CLOSE, "", i)
        return b.segments


MISTRAL_V1 = MistralV1Template()
MISTRAL_V3 = MistralV3Template()
MISTRAL_V3_TEKKEN = MistralV3TekkenTemplate()
MISTRAL_V7 = MistralV7Template()
DEVSTRAL = DevstralTemplate()

#: Ministral 3 Reasoning (Dec 2025): the official Jinja, ``[THINK]…[/THINK]`` reasoning and
#: ``[TOOL_CALLS]name[ARGS]{…}`` calls. Sampling: the model card's temperature 0.7, top_p 0.95.
MINISTRAL3_REASONING = PackagedTemplate(
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
    name="ministral3-reasoning",
    aliases=("ministral-3-reasoning",),
    model_ids=(
        "mistralai/Ministral-3-14B-Reasoning-2512",
        "mistralai/Ministral-3-8B-Reasoning-2512",
        "mistralai/Ministral-3-3B-Reasoning-2512",
    ),
    tool_parser=MistralParser,
    reasoning_parser=MistralThinkParser,
    generation=GenerationConfig(session_len=262144, stop_words=(EOS,), top_p=0.95, temperature=0.7),
    variables={"bos_token": BOS, "eos_token": EOS},
    description="Ministral 3 Reasoning: [SYSTEM_PROMPT], [THINK]…[/THINK], [TOOL_CALLS]name[ARGS]….",
)

#: Magistral (Small 2506/2507/2509, Medium): the format of Ministral 3 Reasoning —
#: ``[SYSTEM_PROMPT]``, ``[THINK]…[/THINK]``, ``[TOOL_CALLS]name[ARGS]{…}`` — without its
#: default system prompt: Magistral's model cards ship their own (``SYSTEM_PROMPT.txt``) for
#: the caller to pass. Built from Ministral 3 Reasoning's official Jinja (its default system
#: message set to ''), as no Magistral chat template is in the reference set.
MAGISTRAL = PackagedTemplate(
    "magistral.jinja",
    name="magistral",
    aliases=("magistral-small", "magistral-medium"),
    model_ids=(
        "mistralai/Magistral-Small-2509",
        "mistralai/Magistral-Small-2507",
        "mistralai/Magistral-Small-2506",
        "mistralai/Magistral-Medium-2509",
        "mistralai/Magistral-Medium-2507",
        "mistralai/Magistral-Medium-2506",
    ),
    model_patterns=(r"magistral-(small|medium)",),
    tool_parser=MistralParser,
    reasoning_parser=MistralThinkParser,
    generation=GenerationConfig(session_len=131072, stop_words=(EOS,), top_p=0.95, temperature=0.7),
    variables={"bos_token": BOS, "eos_token": EOS},
    description="Magistral: [SYSTEM_PROMPT], [THINK]…[/THINK] reasoning, [TOOL_CALLS]name[ARGS]….",
)

#: This module's templates, added to the registry in this order (see chatfmt.families).
TEMPLATES: tuple[Template, ...] = (
    MISTRAL_V1,
    MISTRAL_V3,
    MISTRAL_V3_TEKKEN,
    MISTRAL_V7,
    DEVSTRAL,
    MINISTRAL3_REASONING,
    MAGISTRAL,
)
