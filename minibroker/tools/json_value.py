"""`JsonValue`: a value of JSON's data model as Python holds it (what json.loads returns and
json.dumps writes without a `default`), for the tools' and the console's JSON output."""

from __future__ import annotations

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]
