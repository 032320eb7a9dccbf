from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from dsh.prompt import (
    RUNTIME_CONTEXT_HEADER,
    NamedText,
    PromptAssembly,
    PromptRenderError,
    join_context_sections,
    render_context_sections,
    render_prompt,
)


def assembly(
    *sections: tuple[str, str],
    contexts: tuple[tuple[str, str], ...] = (),
    **variables: str | None,
) -> PromptAssembly:
    return PromptAssembly(
        sections=tuple(NamedText(n, t) for n, t in sections),
        contexts=tuple(NamedText(n, t) for n, t in contexts),
        variables=MappingProxyType(variables),
    )


def test_interpolates_and_joins_with_a_blank_line() -> None:
    asm = assembly(("a", "Hello {{name}}."), ("b", "Model: {{model}}"), name="you", model="m1")
    assert render_prompt(asm) == "Hello you.\n\nModel: m1"


def test_drops_empty_and_blank_sections() -> None:
    asm = assembly(("a", ""), ("b", "kept"), ("c", "  \n"), ("d", "{{empty}}"), empty="")
    assert render_prompt(asm) == "kept"


def test_unknown_variable_names_the_variable_and_the_section() -> None:
    with pytest.raises(PromptRenderError) as info:
        render_prompt(assembly(("agent:persona", "I run {{model}}")))
    assert str(info.value) == 'prompt variable "{{model}}" is not defined (section "agent:persona")'
    assert (info.value.placeholder, info.value.part, info.value.reason) == (
        "model",
        "agent:persona",
        "unknown",
    )
    assert info.value.code == "PROMPT_RENDER"


def test_none_variable_is_an_error() -> None:
    with pytest.raises(PromptRenderError) as info:
        render_prompt(assembly(("agent:persona", "I run {{model}}"), model=None))
    assert str(info.value) == (
        'prompt variable "{{model}}" has no value for this assembly (section "agent:persona")'
    )
    assert info.value.reason == "none"


def test_unused_none_variable_is_fine() -> None:
    assert render_prompt(assembly(("a", "plain"), model=None)) == "plain"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a {{ b", "a {{ b"),
        ("{{", "{{"),
        ("x }} {{", "x }} {{"),
        ("{{v}} and {{tail", "V and {{tail"),
        ("{{v}}}", "V}"),
        ("}}{{v}}", "}}V"),
    ],
)
def test_lone_open_braces_are_literal(text: str, expected: str) -> None:
    assert render_prompt(assembly(("s", text), v="V")) == expected


@pytest.mark.parametrize(
    "text", ["{{ v }}", "{{v }}", "{{}}", "{{V}}", "{{1v}}", "{{{v}}", "{{a-b}}"]
)
def test_malformed_placeholders_are_errors(text: str) -> None:
    with pytest.raises(PromptRenderError, match=r'malformed .*\(section "s"\)') as info:
        render_prompt(assembly(("s", text), v="V"))
    assert info.value.reason == "malformed"


def test_long_malformed_placeholder_is_shortened_in_the_message() -> None:
    with pytest.raises(PromptRenderError) as info:
        render_prompt(assembly(("s", "{{" + "x " * 100 + "}}")))
    assert len(str(info.value)) < 250
    assert info.value.placeholder == "x " * 100


_TRAPS = {"zz_trap": "EXPANDED", "zz_other": "EXPANDED"}
_names = st.from_regex(r"[a-y][a-z0-9_]{0,6}", fullmatch=True)
_pieces = st.sampled_from(["{", "}", "x", "{{zz_trap}}", "{{zz_other}}", "{{", "}}", " ", "a"])
_values = st.lists(_pieces, max_size=12).map("".join)
_literals = st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=10)


@given(
    values=st.dictionaries(_names, _values, min_size=1, max_size=4),
    data=st.data(),
)
def test_substituted_values_are_never_rescanned(
    values: dict[str, str], data: st.DataObject
) -> None:
    used = data.draw(st.lists(st.sampled_from(sorted(values)), min_size=1, max_size=6))
    glue = data.draw(st.lists(_literals, min_size=len(used) + 1, max_size=len(used) + 1))
    template = (
        "T:"
        + glue[0]
        + "".join("{{" + name + "}}" + g for name, g in zip(used, glue[1:], strict=True))
    )
    expected = (
        "T:" + glue[0] + "".join(values[name] + g for name, g in zip(used, glue[1:], strict=True))
    )
    asm = PromptAssembly(
        sections=(NamedText("s", template),),
        variables=MappingProxyType({**values, **_TRAPS}),
    )
    rendered = render_prompt(asm)
    assert rendered == expected
    assert "EXPANDED" not in rendered


@given(st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=50))
def test_text_without_braces_is_verbatim(text: str) -> None:
    assert render_prompt(assembly(("s", text))) == (text if text.strip() else "")


def test_context_sections_are_interpolated_and_blank_ones_dropped() -> None:
    asm = assembly(
        ("s", "ignored here"),
        contexts=(("cwd", "Working in {{cwd}}"), ("blank", " "), ("time", "now")),
        cwd="/w",
    )
    assert render_context_sections(asm) == (
        NamedText("cwd", "Working in /w"),
        NamedText("time", "now"),
    )


def test_context_render_error_names_the_context() -> None:
    with pytest.raises(PromptRenderError, match=r'\(context "cwd"\)'):
        render_context_sections(assembly(contexts=(("cwd", "{{cwd}}"),)))


def test_join_context_sections() -> None:
    assert join_context_sections(()) == ""
    joined = join_context_sections((NamedText("a", "first"), NamedText("b", "second\nline")))
    assert joined == f"{RUNTIME_CONTEXT_HEADER}\n\nfirst\n\nsecond\nline"
    assert "\n" not in RUNTIME_CONTEXT_HEADER
    assert "supersedes" in RUNTIME_CONTEXT_HEADER


def test_a_repeated_render_follows_every_change_of_its_parts_and_variables() -> None:
    # Rendering remembers its last result; equal inputs give it back, any change renders anew.
    base = assembly(("a", "Hi {{name}}."), ("b", "{{tail}}"), name="you", tail="x")
    assert render_prompt(base) == render_prompt(base) == "Hi you.\n\nx"
    variables = dict(base.variables)
    variables["tail"] = "y"
    assert render_prompt(replace(base, variables=variables)) == "Hi you.\n\ny"
    assert render_prompt(
        assembly(("a", "Bye {{name}}."), ("b", "{{tail}}"), name="you", tail="x")
    ) == ("Bye you.\n\nx")
    assert render_prompt(assembly(("a", "Hi {{name}}."), name="you", tail="x")) == "Hi you."


def test_a_render_that_failed_fails_again() -> None:
    broken = assembly(("a", "{{missing}}"))
    for _ in range(2):
        with pytest.raises(PromptRenderError):
            render_prompt(broken)
    ctx = assembly(contexts=(("c", "now {{when}}"),), when="noon")
    first = render_context_sections(ctx)
    assert render_context_sections(ctx) == first == (NamedText("c", "now noon"),)
    again = assembly(contexts=(("c", "now {{when}}"),), when="dusk")
    assert render_context_sections(again) == (NamedText("c", "now dusk"),)
