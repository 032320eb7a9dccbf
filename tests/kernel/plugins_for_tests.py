"""Plugins that composition tests resolve by `module:attr` and through an entry point."""

from pydantic import BaseModel, ConfigDict

from dsh.kernel import Context, ServiceKey

RECORD: ServiceKey[list[str]] = ServiceKey("record")


class RecordConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = "default"
    count: int = 1


class Recorder:
    name = "recorder"
    Config = RecordConfig

    @staticmethod
    def apply(ctx: Context, config: RecordConfig) -> None:
        record = ctx.get(RECORD)
        if record is None:
            record = []
            ctx.provide(RECORD, record)
        record.append(f"{config.label}x{config.count}")
        ctx.owner.effect(lambda: record.append(f"-{config.label}"))


class Failing:
    name = "failing"

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        raise RuntimeError("refuses to start")
