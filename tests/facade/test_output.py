"""Structured output: `output_type=` answered through the `final_result` tool, validated, with
corrections sent back to the model a bounded number of times."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

import dsh
from dsh.testing import OpenAIServer, reply, tool_call

MakeAgent = Callable[..., dsh.Agent[Any]]


class City(BaseModel):
    name: str
    population: int = Field(gt=0)


def final(**arguments: Any) -> Any:
    return reply(tool_call("final_result", arguments))


async def test_valid_on_the_first_try(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add(final(name="Paris", population=2_100_000))
    async with make_agent(output_type=City) as agent:
        result = await agent.run("The capital of France?")
    assert result.output == City(name="Paris", population=2_100_000)
    assert len(server.requests) == 1  # the tool's call ends the run
    body = server.requests[0].raw.decode()
    assert "final_result" in body and "population" in body


async def test_valid_after_one_correction(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add(final(name="Paris", population=-1), final(name="Paris", population=2))
    async with make_agent(output_type=City) as agent:
        result = await agent.run("The capital of France?")
    assert result.output.population == 2
    correction = server.requests[1].raw.decode()
    assert "invalid arguments" in correction and "population" in correction


async def test_failing_after_the_bound(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add(final(name="Paris"), final(name="Paris", population="many"))
    async with make_agent(output_type=City, output_retries=1) as agent:
        with pytest.raises(dsh.OutputValidationError, match="after 2 tries") as raised:
            await agent.run("The capital of France?")
    assert "population" in str(raised.value)
    assert raised.value.result.finish_reason == "aborted"
    assert len(server.requests) == 2


async def test_an_answer_without_the_tool_is_sent_back(
    server: OpenAIServer, make_agent: MakeAgent
) -> None:
    server.add("It is Paris.", final(result=["Paris", "Lyon"]))
    async with make_agent(output_type=list[str]) as agent:
        result = await agent.run("Two French cities?")
    assert result.output == ["Paris", "Lyon"]
    assert "final_result" in server.requests[1].raw.decode().split("It is Paris.")[-1]


async def test_no_answer_at_all_fails_clearly(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add("no", "still no")
    async with make_agent(output_type=City, output_retries=1) as agent:
        with pytest.raises(dsh.OutputValidationError, match="without calling final_result"):
            await agent.run("?")


class Village(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    mayor: str


class Hamlet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    farms: int


async def test_a_union_of_models_is_pydantic_s_to_check(
    server: OpenAIServer, make_agent: MakeAgent
) -> None:
    server.add(final(result={"name": "Giverny", "mayor": "Claude"}))
    async with make_agent(output_type=Village | Hamlet) as agent:
        result = await agent.run("A French village?")
    assert result.output == Village(name="Giverny", mayor="Claude")
