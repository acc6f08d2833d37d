"""The seven compatibility levels and how a new schema is checked against a subject's versions
(Confluent's CompatibilityLevel and AbstractSchemaProvider/ParsedSchema.isCompatible).

BACKWARD: the new schema reads data written with the latest version; FORWARD: the latest version
reads data written with the new one; FULL: both; the _TRANSITIVE forms check every live version
instead of the latest only; NONE checks nothing. Soft-deleted versions are not checked against.
The messages are Confluent's: the reasons, then {oldSchemaVersion: N}, {oldSchema: '...'} and
{compatibility: 'LEVEL'}.
"""

from __future__ import annotations

from collections.abc import Sequence

from minibroker.schema_registry.schemas import ParsedSchema

LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")


def check(level: str, new: ParsedSchema, olds: Sequence[tuple[int, str, ParsedSchema]]) -> list[str]:
    """The messages of the first version `new` is incompatible with (`olds`: (version, schema
    string, parsed), oldest first); empty when compatible."""
    if level == "NONE" or not olds:
        return []
    targets = list(olds) if level.endswith("_TRANSITIVE") else [olds[-1]]
    base = level.removesuffix("_TRANSITIVE")
    for version, text, old in reversed(targets):  # the newest first, as Confluent reports
        found = []
        if base in ("BACKWARD", "FULL"):
            found += new.incompatibilities(old, reader_is_new=True)
        if base in ("FORWARD", "FULL"):
            found += old.incompatibilities(new, reader_is_new=False)
        if found:
            return [*(str(i) for i in found), f"{{oldSchemaVersion: {version}}}", f"{{oldSchema: '{text}'}}",
                    f"{{compatibility: '{level}'}}"]
    return []
