"""Config definitions: what a key is, how a value is parsed, checked and written back.

Theory of operation
-------------------
A key is one `ConfigKey` (name, type, default, validator, doc); the tables of keys are in
`minibroker.config.keys`. Values are parsed as Kafka's `ConfigDef.parseType` parses them (strings
are trimmed, booleans are "true"/"false" in any case, lists are comma separated, numbers must fit
their Java width) and then checked by the key's validator, which raises `ConfigError` with Kafka's
message shape: ``Invalid value -5 for configuration retention.ms: Value must be at least -1``.
`format_value` is the way back (Kafka's ConfigDef.convertToString), as DescribeConfigs shows values.

The MetadataVersion table lives here too: it validates message.format.version and decides, in
`record_version_for`, which record magic a topic stores. That is the only place that decision is
made; storage receives the magic already decided (LogConfig.record_version).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeAlias

from minibroker_protocol.errors import ErrorCode

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
_RANGES = {"int": (-(2**31), 2**31 - 1), "short": (-(2**15), 2**15 - 1), "long": (-(2**63), 2**63 - 1)}
_JAVA_TYPE = {"int": "INT", "short": "SHORT", "long": "LONG", "double": "DOUBLE"}

# A parsed config value, one per ConfigDef.Type: boolean -> bool; int, short, long -> int;
# double -> float; string, password, class -> str; list -> list[str]; None where Kafka's default is
# null. Stores keep this union; callers read one key with a typed accessor (`as_int`, `as_str`...,
# Kafka's AbstractConfig.getInt/getString...), which knows the key's type.
ConfigValue: TypeAlias = bool | int | float | str | list[str] | None


# --------------------------------------------------------------------------- errors and ids


class ConfigError(ValueError):
    """An invalid config; the message has Kafka's shape. Answer it with INVALID_CONFIG (40).

    Validators raise it with just the reason; `parse_value` re-raises it with the key's name and
    value filled in (Kafka's ConfigException(name, value, message)).
    """

    code = ErrorCode.INVALID_CONFIG

    # `value` is whatever was given (a YAML scalar, a list, request text): only shown, never used.
    def __init__(self, message: str, *, name: str | None = None, value: object = None, reason: str | None = None):
        super().__init__(message)
        self.name = name
        self.value = value
        self.reason = reason if reason is not None else message

    @classmethod
    def invalid(cls, name: str, value: object, reason: str) -> ConfigError:
        return cls(f"Invalid value {_java_str(value)} for configuration {name}: {reason}",
                   name=name, value=value, reason=reason)


class ConfigSource(IntEnum):
    """DescribeConfigs ConfigSource ids (DescribeConfigsResponse.ConfigSource)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1  # Kafka's wire name is TOPIC_CONFIG; the admin client's is this one
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigType(IntEnum):
    """DescribeConfigs ConfigType ids (DescribeConfigsResponse.ConfigType, KIP-569)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


# --------------------------------------------------------------------------- Java-style rendering


def _java_double(x: float) -> str:
    """Double.toString: plain between 1e-3 and 1e7, otherwise d.dddE<exp>; shortest digits."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)  # Python's repr is fixed-point (and shortest) in this range
        return text if ("." in text or "e" in text) else text + ".0"
    from decimal import Decimal  # lazy: only doubles outside [1e-3, 1e7) need it; 1.5 ms at start-up

    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp10 = len("".join(map(str, digits))) + int(exponent) - 1
    mantissa = ds[0] + "." + (ds[1:] or "0")
    return f"{'-' if sign else ''}{mantissa}E{exp10}"


def _java_str(value: object) -> str:
    """How Java's string concatenation shows a parsed config value in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_java_str(v) for v in value) + "]"
    return str(value)


# --------------------------------------------------------------------------- typed accessors
# A key's value read with the type its ConfigKey declares (Kafka's AbstractConfig.getInt, getLong,
# getBoolean, getDouble, getString, getList). A mismatch is a programming error (the wrong accessor
# for the key), not a bad config: parse_value already gave the value the key's type.


def _mismatch(name: str, value: ConfigValue, wanted: str) -> TypeError:
    return TypeError(f"config {name} holds {type(value).__name__} {value!r}, not {wanted}")


def as_int(name: str, value: ConfigValue) -> int:
    """An int, short or long key that has a value."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _mismatch(name, value, "an int")


def as_optional_int(name: str, value: ConfigValue) -> int | None:
    """An int, short or long key whose default is null."""
    return None if value is None else as_int(name, value)


def as_bool(name: str, value: ConfigValue) -> bool:
    if isinstance(value, bool):
        return value
    raise _mismatch(name, value, "a bool")


def as_float(name: str, value: ConfigValue) -> float:
    """A double key (an int is widened, as Java widens a long to a double)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise _mismatch(name, value, "a float")


def as_str(name: str, value: ConfigValue) -> str:
    """A string, password or class key that has a value."""
    if isinstance(value, str):
        return value
    raise _mismatch(name, value, "a str")


def as_optional_str(name: str, value: ConfigValue) -> str | None:
    """A string, password or class key whose default is null."""
    return None if value is None else as_str(name, value)


def as_list(name: str, value: ConfigValue) -> list[str]:
    if isinstance(value, list):
        return value
    raise _mismatch(name, value, "a list")


# --------------------------------------------------------------------------- validators
# Small callables with Kafka's messages; str() gives the "valid values" text Kafka's docs show. A
# validator runs on a value parse_value already gave its key's type; `_number` and `_items` only
# narrow the union for the checks.

Validator: TypeAlias = Callable[[ConfigValue], None]


def _number(value: ConfigValue) -> int | float:
    if isinstance(value, int | float):
        return value
    raise ConfigError("Value must be a number")


def _items(value: ConfigValue) -> list[str]:
    if isinstance(value, list):
        return value
    raise ConfigError("Value must be a list")


class AtLeast:
    def __init__(self, minimum: int | float):
        self.minimum = minimum

    def __call__(self, value: ConfigValue) -> None:
        if _number(value) < self.minimum:
            raise ConfigError(f"Value must be at least {_java_str(self.minimum)}")

    def __str__(self) -> str:
        return f"[{_java_str(self.minimum)},...]"


class Between:
    def __init__(self, minimum: int | float, maximum: int | float):
        self.minimum, self.maximum = minimum, maximum

    def __call__(self, value: ConfigValue) -> None:
        number = _number(value)
        if number < self.minimum:
            raise ConfigError(f"Value must be at least {_java_str(self.minimum)}")
        if number > self.maximum:
            raise ConfigError(f"Value must be no more than {_java_str(self.maximum)}")

    def __str__(self) -> str:
        return f"[{_java_str(self.minimum)},...,{_java_str(self.maximum)}]"


class ValidString:
    """One of a fixed set, case-sensitive (ConfigDef.ValidString)."""

    def __init__(self, *allowed: str):
        self.allowed = allowed

    def __call__(self, value: ConfigValue) -> None:
        if value not in self.allowed:
            raise ConfigError("String must be one of: " + ", ".join(self.allowed), value=value)

    def __str__(self) -> str:
        return "[" + ", ".join(self.allowed) + "]"


class ValidList:
    """Every element one of a fixed set (ConfigDef.ValidList); the message names the bad element."""

    def __init__(self, *allowed: str):
        self.item = ValidString(*allowed)

    def __call__(self, value: ConfigValue) -> None:
        for item in _items(value):
            self.item(item)

    def __str__(self) -> str:
        return str(self.item)


class GzipLevel:
    """1..9, or -1 for zlib's default (Kafka's CompressionType.GZIP level validator)."""

    def __call__(self, value: ConfigValue) -> None:
        level = _number(value)
        if level > 9 or (level < 1 and level != -1):
            raise ConfigError("Value must be between 1 and 9 or equal to -1")

    def __str__(self) -> str:
        return "[1,...,9] or -1"


class ThrottledReplicas:
    """'*' or a list of partition:broker pairs (Kafka's ThrottledReplicaListValidator)."""

    _PAIR = re.compile(r"([0-9]+:[0-9]+)?")

    def __init__(self, name: str):
        self.name = name

    def __call__(self, value: ConfigValue) -> None:
        items = [v.strip() for v in _items(value)]
        if not (all(self._PAIR.fullmatch(s) for s in items) or "".join(items) == "*"):
            raise ConfigError(f"{self.name} must be the literal '*' or a list of replicas in the following "
                              "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


class NonEmptyString:
    def __call__(self, value: ConfigValue) -> None:
        if not value:
            raise ConfigError("String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


# Kafka's MetadataVersion ids in order (server-common MetadataVersion). A bare release ("2.8")
# means that release's newest production version; 4.0-IV0 is the newest production one.
_METADATA_VERSIONS: tuple[str, ...] = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0",
    "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0",
    "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0", "1.1-IV0",
    "2.0-IV0", "2.0-IV1", "2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1", "2.3-IV0", "2.3-IV1",
    "2.4-IV0", "2.4-IV1", "2.5-IV0", "2.6-IV0", "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1",
    "3.0-IV0", "3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0",
    "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
    "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
    "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3",
)
_LATEST_PRODUCTION = "4.0-IV0"


def _build_version_lookup() -> dict[str, int]:
    lookup = {v: i for i, v in enumerate(_METADATA_VERSIONS)}
    last_production = _METADATA_VERSIONS.index(_LATEST_PRODUCTION)
    for i, v in enumerate(_METADATA_VERSIONS[: last_production + 1]):
        lookup[v.split("-")[0]] = i  # later IVs of the same release overwrite earlier ones
    return lookup


_VERSION_INDEX = _build_version_lookup()


def _metadata_version_index(text: str) -> int:
    """MetadataVersion.fromVersionString: '0.10.0.1' -> '0.10.0', '2.8.0' -> '2.8', '3.0-IV1' as is."""
    parts = text.split(".")
    keep = 3 if text.startswith("0.") else 2
    key = text if keep >= len(parts) else ".".join(parts[:keep])
    try:
        return _VERSION_INDEX[key]
    except KeyError:
        raise ConfigError(f"Version {text} is not a valid version") from None


class MetadataVersionValidator:
    def __call__(self, value: ConfigValue) -> None:
        _metadata_version_index(str(value))

    def __str__(self) -> str:
        return "[" + ", ".join(_METADATA_VERSIONS) + "]"


def record_version_for(message_format_version: str) -> int:
    """The newest record magic a message.format.version allows (MetadataVersion.highestSupportedRecordVersion):
    0 before 0.10.0, 1 before 0.11.0, else 2. Kafka 3.x ignores the setting; we honour it (issue 7)."""
    index = _metadata_version_index(message_format_version)
    if index < _VERSION_INDEX["0.10.0-IV0"]:
        return 0
    if index < _VERSION_INDEX["0.11.0-IV0"]:
        return 1
    return 2


# --------------------------------------------------------------------------- keys and parsing


@dataclass(frozen=True)
class ConfigKey:
    """One config key. `synonyms` (topic keys only): broker keys that set its default, most specific first."""

    name: str
    type: str  # "int" "long" "short" "double" "boolean" "string" "list" "password" "class"
    default: ConfigValue
    doc: str
    validator: Validator | None = None
    scope: str = "broker"  # "broker" | "topic"
    synonyms: tuple[str, ...] = ()
    read_only: bool = True  # broker keys Kafka cannot change at runtime (DynamicBrokerConfig)
    sensitive: bool = False

    @property
    def config_type(self) -> ConfigType:
        return ConfigType[self.type.upper()]


_BOOL_WORDS = {"true": True, "false": False}
_DECIMAL = re.compile(r"[+-]?[0-9]+")  # Integer.parseInt / Long.parseLong accept this, nothing more
_COMMA = re.compile(r"\s*,\s*")


def _parse_raw(key: ConfigKey, raw: object) -> ConfigValue:
    # `raw` is anything a YAML file, --override or a request gives; it is narrowed, never trusted.
    name, kind = key.name, key.type
    trimmed = raw.strip() if isinstance(raw, str) else None
    if kind == "boolean":
        if isinstance(raw, bool):
            return raw
        if trimmed is not None and trimmed.lower() in _BOOL_WORDS:
            return _BOOL_WORDS[trimmed.lower()]
        raise ConfigError.invalid(name, raw, "Expected value to be either true or false")
    if kind in _RANGES:
        if isinstance(raw, int) and not isinstance(raw, bool):
            number = raw
        elif trimmed is not None:
            if not _DECIMAL.fullmatch(trimmed):
                raise ConfigError.invalid(name, raw, f"Not a number of type {_JAVA_TYPE[kind]}")
            number = int(trimmed)
        else:
            width = {"int": "a 32-bit integer", "short": "a 16-bit integer (short)",
                     "long": "a 64-bit integer (long)"}[kind]
            raise ConfigError.invalid(name, raw, f"Expected value to be {width}, but it was a {type(raw).__name__}")
        low, high = _RANGES[kind]
        if not low <= number <= high:
            raise ConfigError.invalid(name, raw, f"Not a number of type {_JAVA_TYPE[kind]}")
        return number
    if kind == "double":
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return float(raw)
        if trimmed is not None:
            try:
                return float(trimmed)
            except ValueError:
                raise ConfigError.invalid(name, raw, "Not a number of type DOUBLE") from None
        raise ConfigError.invalid(name, raw, f"Expected value to be a double, but it was a {type(raw).__name__}")
    if kind == "list":
        if isinstance(raw, list | tuple):
            return [str(v).strip() for v in raw]
        if trimmed is not None:
            return [] if not trimmed else _COMMA.split(trimmed)
        raise ConfigError.invalid(name, raw, "Expected a comma separated list.")
    if kind in ("string", "password", "class"):
        if trimmed is not None:
            return trimmed
        # YAML types scalars on its own (8080, 2.8, true); Kafka's properties are always text.
        if isinstance(raw, list | tuple):
            return ",".join(str(v).strip() for v in raw)
        if isinstance(raw, bool | int | float):
            return _java_str(raw)
        raise ConfigError.invalid(name, raw, f"Expected value to be a string, but it was a {type(raw).__name__}")
    raise ConfigError(f"Unknown type {kind} of configuration {name}")


def parse_value(key: ConfigKey, raw: object) -> ConfigValue:
    """Parse as Kafka's ConfigDef.parseType does, then run the key's validator. None stays None."""
    if raw is None:
        return None
    value = _parse_raw(key, raw)
    if key.validator is not None:
        try:
            key.validator(value)
        except ConfigError as e:
            if e.name is not None:
                raise
            shown = e.value if e.value is not None else value
            raise ConfigError.invalid(key.name, shown, e.reason) from None
    return value


def format_value(key: ConfigKey, value: ConfigValue) -> str | None:
    """A parsed value as Kafka's ConfigDef.convertToString writes it (DescribeConfigs, persistence)."""
    if value is None:
        return None
    if isinstance(value, list):
        return ",".join(value)
    return _java_str(value)

