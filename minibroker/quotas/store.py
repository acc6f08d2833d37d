"""The client quota configuration: entities and their values (Kafka: ClientQuotasImage, written
by AlterClientQuotas through ClientQuotaControlManager).

An entity is a set of (type, name) pairs, type one of `user`, `client-id`, `ip`, name None for
the type's default entity. Values are validated as Kafka's QuotaConfig defines them. Everything
is kept in `<log.dirs>/client-quotas.json` (Kafka keeps it in the metadata log), written
atomically on every change and read at start-up.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Callable
from pathlib import Path

from minibroker_protocol.errors import ErrorCode
from minibroker_storage.log_files import atomic_write

log = logging.getLogger("minibroker.quotas")

QUOTAS_FILE = "client-quotas.json"
USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# QuotaConfig: the keys each kind of entity takes, and whether the value must be whole
USER_CLIENT_KEYS = {PRODUCER_BYTE_RATE: "long", CONSUMER_BYTE_RATE: "long", REQUEST_PERCENTAGE: "double",
                    CONTROLLER_MUTATION_RATE: "double"}
IP_KEYS = {CONNECTION_CREATION_RATE: "int"}

Entity = tuple[tuple[str, str | None], ...]  # sorted (type, name) pairs; name None = default


class QuotaError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def make_entity(pairs: list[tuple[str, str | None]]) -> Entity:
    """Validate an entity as Kafka's ClientQuotaControlManager does; raise QuotaError."""
    seen: dict[str, str | None] = {}
    for kind, name in pairs:
        if kind not in ENTITY_TYPES:
            raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unhandled client quota entity type: {kind}")
        if kind in seen:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Duplicate {kind} entity type")
        if name == "":
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Empty {kind} entity name")
        seen[kind] = name
    if not seen:
        raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    if IP in seen:
        if len(seen) > 1:
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity should "
                                                        "not be used with user/client ID entity.")
        name = seen[IP]
        if name is not None:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                raise QuotaError(ErrorCode.INVALID_REQUEST,
                                 f"{name} is not a valid IP or resolvable host.") from None
    return tuple(sorted(seen.items()))


def check_value(entity: Entity, key: str, value: float) -> None:
    keys = IP_KEYS if entity[0][0] == IP else USER_CLIENT_KEYS
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if kind != "double" and value != int(value):
        raise QuotaError(ErrorCode.INVALID_REQUEST,
                         f"Configuration {key} must be a {'Long' if kind == 'long' else 'Integer'} value")
    if value <= 0:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Configuration {key} must be positive, not {value:g}")


class QuotaStore:
    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / QUOTAS_FILE
        self.quotas: dict[Entity, dict[str, float]] = {}
        self._listeners: list[Callable[[], None]] = []
        self.persist = True  # False in KRaft mode: the metadata log holds them

    def use_metadata_log(self) -> bool:
        """KRaft mode: quotas come from the metadata log (`set_quotas`), nothing is written here;
        whether the file held quotas that are now ignored."""
        had = bool(self.quotas)
        self.persist = False
        self.set_quotas({})
        return had

    def set_quotas(self, quotas: dict[Entity, dict[str, float]]) -> None:
        """The whole set, as the metadata image holds it; the listeners are told."""
        self.quotas = quotas
        for listener in self._listeners:
            listener()

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def load(self) -> None:
        if not self.path.exists():
            return
        try:
            raw = json.loads(self.path.read_text())
            for item in raw["entries"]:
                entity = tuple(sorted((k, v) for k, v in item["entity"]))
                self.quotas[entity] = {k: float(v) for k, v in item["values"].items()}
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.error("ignoring unreadable %s: %s", self.path, e)

    def get(self, entity: Entity) -> dict[str, float]:
        return self.quotas.get(entity, {})

    def apply(self, changes: list[tuple[Entity, dict[str, float | None]]]) -> None:
        """Set (value) or remove (None) keys; persist once; tell the listeners."""
        for entity, ops in changes:
            values = dict(self.quotas.get(entity, {}))
            for key, value in ops.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            if values:
                self.quotas[entity] = values
            else:
                self.quotas.pop(entity, None)
        if self.persist:
            entries = [{"entity": [list(p) for p in e], "values": v} for e, v in sorted(
                self.quotas.items(), key=lambda kv: [(k, n or "") for k, n in kv[0]])]
            atomic_write(self.path, json.dumps({"version": 1, "entries": entries}, indent=1).encode())
        for listener in self._listeners:
            listener()
