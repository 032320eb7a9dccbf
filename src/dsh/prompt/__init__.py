"""The system prompt service: sections, runtime contexts, tool schemas and variables,
assembled per scope and rendered strictly."""

from ._events import SYSTEM_PROMPT_ASSEMBLE, SYSTEM_PROMPT_CHANGE
from ._pinned import PinnedText
from ._plugin import SystemPromptPlugin
from ._render import (
    RUNTIME_CONTEXT_CLEARED,
    RUNTIME_CONTEXT_HEADER,
    join_context_sections,
    render_context_sections,
    render_prompt,
)
from ._service import SYSTEM_PROMPT, SystemPrompt
from ._tool_order import UNLISTED_TOOLS
from ._values import (
    AssembleContext,
    AssemblePayload,
    NamedText,
    PromptAssembly,
    PromptAssemblyError,
    PromptRenderError,
    TextSource,
    ToolSchemaSet,
    ToolsProvider,
    VariableProvider,
)

RUNTIME_CONTEXT_SOURCE = "@deepseek-ai/dsh-system-prompt"
"""`source.plugin` of runtime-context snapshot messages: the reference runtime's package id,
kept so that snapshots in logs written by either runtime are recognised by the other."""

__all__ = [
    "SYSTEM_PROMPT",
    "RUNTIME_CONTEXT_CLEARED",
    "RUNTIME_CONTEXT_HEADER",
    "RUNTIME_CONTEXT_SOURCE",
    "SYSTEM_PROMPT_ASSEMBLE",
    "SYSTEM_PROMPT_CHANGE",
    "UNLISTED_TOOLS",
    "AssembleContext",
    "AssemblePayload",
    "NamedText",
    "PinnedText",
    "PromptAssembly",
    "PromptAssemblyError",
    "PromptRenderError",
    "SystemPrompt",
    "SystemPromptPlugin",
    "TextSource",
    "ToolSchemaSet",
    "ToolsProvider",
    "VariableProvider",
    "join_context_sections",
    "render_context_sections",
    "render_prompt",
]
