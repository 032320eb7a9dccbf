"""Usage accounting: the log's totals, and their cost by the profile's price table."""

from __future__ import annotations

import pytest

from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.llm import TokenUsage
from dsh.plugins.usage import DEFAULT_PRICES, PRICES, Price, PriceTable
from dsh.profiles import CORE_ROWS, CompositionError, boot, load_profile
from dsh.session import SessionMeta, Usage, session_usage
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import tool

FLASH = ("deepseek-official", "deepseek-v4-flash")
PRO = ("deepseek-official", "deepseek-v4-pro")
MILLION = 1_000_000


def test_deepseek_prices_cache_hits_and_misses_apart() -> None:
    prices = PriceTable(DEFAULT_PRICES)
    # 1M missed, 2M hit, 0.5M out: $0.14 + 2 x $0.0028 + 0.5 x $0.28.
    flash = Usage(MILLION, MILLION // 2, cache_read_tokens=2 * MILLION)
    assert prices.cost({FLASH: flash}) == pytest.approx(0.14 + 0.0056 + 0.14)
    # All hits cost a fiftieth of all misses.
    hits = prices.cost({FLASH: Usage(cache_read_tokens=MILLION)})
    misses = prices.cost({FLASH: Usage(input_tokens=MILLION)})
    assert hits == pytest.approx(0.0028) and misses == pytest.approx(0.14)
    pro = Usage(MILLION, MILLION, cache_read_tokens=MILLION)
    assert prices.cost({PRO: pro}) == pytest.approx(0.435 + 0.003625 + 0.87)
    assert prices.cost({FLASH: flash, PRO: pro}) == pytest.approx(0.2856 + 1.308625)
    # The older names are deepseek-v4-flash's two modes, billed as such.
    legacy = ("deepseek-official", "deepseek-reasoner")
    assert prices.cost({legacy: flash}) == prices.cost({FLASH: flash})


def test_an_unpriced_route_with_tokens_leaves_the_cost_unknown() -> None:
    prices = PriceTable(DEFAULT_PRICES)
    assert prices.cost({("openai", "gpt-x"): Usage(input_tokens=1)}) is None
    # A route that used no tokens (tool calls only, a reply without usage) costs nothing.
    assert prices.cost({("openai", "gpt-x"): Usage(requests=1, tool_calls=2)}) == 0.0
    assert prices.cost({}) == 0.0


def test_routes_match_globs_first_match_wins() -> None:
    prices = PriceTable(
        [
            Price(route="local/*", input=0, output=0),
            Price(route="gpt-*", input=2.5, output=10, cache_read=1.25, cache_write=3),
            *DEFAULT_PRICES,
        ]
    )
    assert prices.price("local", "llama") == Price(route="local/*", input=0, output=0)
    gpt = prices.price("azure", "gpt-4o")  # no "/": the model of any provider
    assert gpt is not None and gpt.route == "gpt-*"
    usage = Usage(MILLION, MILLION, cache_read_tokens=MILLION, cache_write_tokens=MILLION)
    assert gpt.cost(usage) == pytest.approx(2.5 + 10 + 1.25 + 3)
    assert prices.price("deepseek-official", "deepseek-v4-flash") == DEFAULT_PRICES[0]
    assert prices.price("other", "deepseek-v4-flash") is None  # DeepSeek's own route only


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


async def test_the_profiles_table_prices_a_runs_usage_as_the_log_reports_it() -> None:
    rows = [
        *CORE_ROWS,
        {
            "id": "usage",
            "name": "usage",
            "config": {
                "prices": [{"route": "scripted/*", "input": 1, "output": 2, "cache_read": 0.5}]
            },
        },
    ]
    async with boot(load_profile(base=rows)) as ctx:
        model = ScriptedModel(
            [
                reply(tool_call("noop"), usage=TokenUsage(100, 20, cache_read_tokens=900)),
                reply("done", usage=TokenUsage(10, 5, cache_read_tokens=1000, reasoning_tokens=2)),
            ]
        )
        model.install(ctx)
        ctx.tools.register(noop)
        options = CreateAgentOptions(
            "usage-run",
            SessionMeta(cwd="/tmp"),
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
        async with ctx.agents.create(options) as handle:
            result = await run_prompt(handle.agent, "go")
            report = session_usage(handle.agent.session)
        # The totals are the sum of the usage the log recorded, and nothing else.
        logged = [e.data["usage"] for e in result.events if e.type == "assistant/message"]
        assert result.usage == Usage(
            input_tokens=sum(u["inputTokens"] for u in logged),
            output_tokens=sum(u["outputTokens"] for u in logged),
            cache_read_tokens=sum(u["cacheReadTokens"] for u in logged),
            reasoning_tokens=2,
            requests=2,
            tool_calls=1,
        )
        assert report.total == result.usage
        (turn,) = report.turns
        assert turn.end == "completed" and turn.usage == result.usage
        assert turn.wall_ms == result.events[-1].time - turn.started_ms >= 0
        cost = ctx.require(PRICES).cost(report.by_model)
        assert cost == pytest.approx((110 * 1 + 1900 * 0.5 + 25 * 2) / MILLION)


async def test_a_bad_price_row_names_its_path() -> None:
    rows = [*CORE_ROWS, {"id": "usage", "name": "usage", "config": {"prices": [{"route": "x"}]}}]
    with pytest.raises(CompositionError, match=r"config\.prices\[0\]\.input: required, not given"):
        await boot(load_profile(base=rows))
