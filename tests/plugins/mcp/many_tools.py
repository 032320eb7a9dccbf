"""An MCP server with a large catalog (200 tools), written with the SDK: two weather tools
among 198 others. `python -m tests.plugins.mcp.many_tools` serves on stdin/stdout."""

from __future__ import annotations

from mcp.server import MCPServer

server = MCPServer("many-tools")


def forecast(city: str, days: int = 3) -> str:
    return f"{city}: sunny for {days} days"


def alerts(region: str) -> str:
    return f"no weather alerts for {region}"


server.add_tool(forecast, name="weather_forecast", description="The weather forecast of a city.")
server.add_tool(alerts, name="weather_alerts", description="Severe weather alerts of a region.")
for number in range(198):

    def widget(item: str, count: int = 1, note: str = "") -> str:
        return f"{item} x{count}"

    server.add_tool(
        widget,
        name=f"inventory_{number:03d}",
        description=f"Inventory operation {number}: records stock movements of one item, with "
        "a count and a free-form note for the warehouse staff.",
    )

if __name__ == "__main__":
    server.run()
