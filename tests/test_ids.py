"""`dsh._ids`: version-4 UUIDs without the uuid module, in the stdlib's text forms."""

import uuid

from dsh._ids import common_uuid4_text, uuid4_hex, uuid4_text


def test_the_ids_are_version_4_uuids_in_the_stdlib_forms() -> None:
    texts = {make() for make in (uuid4_text, common_uuid4_text) for _ in range(200)}
    assert len(texts) == 400
    for text in texts:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == text
    parsed = uuid.UUID(hex=uuid4_hex())
    assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
    assert len(uuid4_hex()) == 32
