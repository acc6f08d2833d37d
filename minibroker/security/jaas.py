"""Kafka's `sasl.jaas.config` values: `<LoginModule class> <flag> key="value" ...;`.

Only the options matter here: PlainLoginModule's `user_<name>="<password>"` entries are the
broker's PLAIN users; `username`/`password` are what the broker itself would log in with (inter-
broker, unused by one node). Values are secrets: nothing here logs them.
"""

from __future__ import annotations

import re

_ENTRY = re.compile(r"\s*(?P<module>[A-Za-z0-9_.$]+)\s+(?P<flag>required|requisite|sufficient|optional)"
                    r"(?P<options>(?:\s+[A-Za-z0-9_.\-]+\s*=\s*(?:\"(?:[^\"\\]|\\.)*\"|[^\s;\"]+))*)\s*;\s*")
_OPTION = re.compile(r"([A-Za-z0-9_.\-]+)\s*=\s*(?:\"((?:[^\"\\]|\\.)*)\"|([^\s;\"]+))")


class JaasError(ValueError):
    pass


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """(login module class, options) of a one-entry JAAS config, as Kafka's JaasConfig reads it."""
    m = _ENTRY.fullmatch(text)
    if m is None:
        # do not echo the value: it holds passwords
        raise JaasError("sasl.jaas.config is not '<LoginModule> required key=\"value\" ...;'")
    options = {}
    for om in _OPTION.finditer(m["options"]):
        value = om[2] if om[2] is not None else om[3]
        options[om[1]] = re.sub(r"\\(.)", r"\1", value)
    return m["module"], options


def plain_users(options: dict[str, str]) -> dict[str, str]:
    return {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}
