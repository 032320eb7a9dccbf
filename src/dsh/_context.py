"""`dsh.Context`: the kernel's context with typed access to the core services.

The kernel names no service; each service package declares its key (`dsh.llm.LLM`, …). This
module sits above them all, so that `ctx.llm`, `ctx.tools`, … are typed for what is built on
the core (plugins, front doors, user code). The core packages themselves look their peers up
by key (`ctx.require(LLM)`). `boot()` makes a root of this kind, and every context derived
from it (children, plugins' contexts, scopes) is of the same kind.
"""

from __future__ import annotations

from .agent import AGENTS, Agent, AgentRegistry
from .kernel import Context as KernelContext
from .llm import LLM, LlmRuntime
from .loop import AGENT_LOOP, AgentLoop
from .prompt import SYSTEM_PROMPT, SystemPrompt
from .session import SESSIONS, SessionStore
from .tools import TOOLS, ToolRuntime

__all__ = ["Context"]


class Context(KernelContext):
    """A context whose core services are typed attributes (each raises
    `ServiceUnavailableError` where the service is not provided)."""

    __slots__ = ()

    agent: Agent | None
    """The agent this context belongs to (None above any agent)."""

    @staticmethod
    def of(ctx: KernelContext) -> Context:
        """`ctx` typed with the core services, for a context the core hands out typed as the
        kernel's (`agent.ctx`, a tool plugin's context). Every context of a tree `boot()`
        made is a `dsh.Context`; a context of a bare kernel tree is refused."""
        if isinstance(ctx, Context):
            return ctx
        raise TypeError(
            f"{ctx!r} is a bare dsh.kernel.Context: make the root a dsh.Context (boot() does)"
        )

    @property
    def sessions(self) -> SessionStore:
        return self.require(SESSIONS)

    @property
    def llm(self) -> LlmRuntime:
        return self.require(LLM)

    @property
    def tools(self) -> ToolRuntime:
        return self.require(TOOLS)

    @property
    def system_prompt(self) -> SystemPrompt:
        return self.require(SYSTEM_PROMPT)

    @property
    def agents(self) -> AgentRegistry:
        return self.require(AGENTS)

    @property
    def agent_loop(self) -> AgentLoop:
        return self.require(AGENT_LOOP)
