"""Per-client quota sensors and throttle times (Kafka: ClientQuotaManager,
ClientRequestQuotaManager, and ConnectionQuotas for the per-IP connection rate).

Which quota applies to a request is found as KIP-55 orders it, most specific first:
/users/U/clients/C, /users/U/clients/<default>, /users/U, /users/<default>/clients/C,
/users/<default>/clients/<default>, /users/<default>, /clients/C, /clients/<default>. The sensor a
request is recorded in is named by the level that matched with the request's own user and client
id filled in, so a default quota limits each client on its own, as Kafka's metric tags do. Without
authentication the user is Kafka's anonymous principal, `ANONYMOUS`.

`record_*` adds what a request used and returns the throttle time in ms (0 while under the quota);
the dispatcher puts it in the response's throttle_time_ms and mutes the connection for it
(KIP-219).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from minibroker.quotas.rate import SampledRate
from minibroker.quotas.store import (
    CLIENT_ID,
    CONNECTION_CREATION_RATE,
    CONSUMER_BYTE_RATE,
    IP,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    Entity,
    QuotaStore,
)

ANONYMOUS = "ANONYMOUS"
# Kafka drops a client's quota sensors after an hour without a recording
# (ClientQuotaManager.InactiveSensorExpirationTimeSeconds), checking every 30 s (Metrics' ExpireSensorTask)
INACTIVE_SENSOR_EXPIRY_MS = 3600 * 1000
EXPIRY_CHECK_INTERVAL_MS = 30 * 1000
_Tags = tuple[str, str]  # (user, client-id) of a sensor; "" where the quota does not use it


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


def quota_user(principal: str) -> str:
    """The user a quota is looked up for: the name of a `User:<name>` principal (KIP-55)."""
    return principal.partition(":")[2] or ANONYMOUS


class ClientQuotaManager:
    def __init__(self, store: QuotaStore, window_num: int, window_size_s: int,
                 clock: Callable[[], float] = _monotonic_ms):
        self.store = store
        self.window_num = window_num
        self.window_ms = window_size_s * 1000
        self.clock = clock
        self._sensors: dict[tuple[str, str, str], SampledRate] = {}
        self._last_recorded: dict[tuple[str, str, str], float] = {}  # sensor -> clock of its last record
        self._next_expiry_check = clock() + EXPIRY_CHECK_INTERVAL_MS
        self._resolved: dict[tuple[str, str, str], tuple[float, _Tags] | None] = {}
        self.throttled = {PRODUCER_BYTE_RATE: 0, CONSUMER_BYTE_RATE: 0, REQUEST_PERCENTAGE: 0,
                          CONNECTION_CREATION_RATE: 0}  # responses throttled, per quota (for /metrics)
        store.on_change(self._resolved.clear)

    @property
    def enabled(self) -> bool:
        return bool(self.store.quotas)

    def quota(self, key: str, user: str, client_id: str) -> tuple[float, _Tags] | None:
        """The bound on `key` for this user and client id, and the sensor's tags; None: no quota."""
        cache_key = (key, user, client_id)
        if cache_key in self._resolved:
            return self._resolved[cache_key]
        u, c = user, client_id
        levels: list[tuple[Entity, _Tags]] = [
            (((CLIENT_ID, c), (USER, u)), (u, c)), (((CLIENT_ID, None), (USER, u)), (u, c)),
            (((USER, u),), (u, "")), (((CLIENT_ID, c), (USER, None)), (u, c)),
            (((CLIENT_ID, None), (USER, None)), (u, c)), (((USER, None),), (u, "")),
            (((CLIENT_ID, c),), ("", c)), (((CLIENT_ID, None),), ("", c)),
        ]
        found = None
        for entity, tags in levels:
            value = self.store.quotas.get(entity, {}).get(key)
            if value is not None:
                found = (value, tags)
                break
        self._resolved[cache_key] = found
        return found

    @property
    def sensor_count(self) -> int:
        return len(self._sensors)

    def _sensor(self, key: str, tags: _Tags) -> SampledRate:
        name = (key, tags[0], tags[1])
        now = self.clock()
        if now >= self._next_expiry_check:
            self._expire(now)
        sensor = self._sensors.get(name)
        if sensor is None:
            sensor = self._sensors[name] = SampledRate(self.window_num, self.window_ms, now)
        self._last_recorded[name] = now
        return sensor

    def _expire(self, now: float) -> None:
        """Forget the sensors of clients gone quiet, so client ids that come and go (a new one per
        run of a tool, per connection of a script) do not grow the broker's memory for ever."""
        self._next_expiry_check = now + EXPIRY_CHECK_INTERVAL_MS
        for name in [n for n, t in self._last_recorded.items() if now - t > INACTIVE_SENSOR_EXPIRY_MS]:
            del self._sensors[name], self._last_recorded[name]

    def max_value_in_window(self, key: str, user: str, client_id: str) -> float | None:
        """The most a client may take in one go under `key`: the quota times the span the rate is
        measured over, (quota.window.num - 1) windows (Kafka: getMaxValueInQuotaWindow). Kafka caps
        a consumer's fetch at it, so a quota below partition max bytes per window still lets the
        consumer progress rather than being throttled (and answered empty) on every fetch."""
        if not self.store.quotas:
            return None
        q = self.quota(key, user, client_id)
        if q is None:
            return None
        return q[0] * (max(self.window_num, 2) - 1) * self.window_ms / 1000

    def record(self, key: str, user: str, client_id: str, value: float) -> int:
        """Record `value` against `key`'s quota for this client; the throttle time in ms."""
        if not self.store.quotas:
            return 0
        q = self.quota(key, user, client_id)
        if q is None:
            return 0
        bound, tags = q
        now = self.clock()
        sensor = self._sensor(key, tags)
        sensor.record(value, now)
        throttle = sensor.throttle_ms(bound, now)
        if throttle:
            self.throttled[key] += 1
        return throttle

    def unrecord(self, key: str, user: str, client_id: str, value: float) -> None:
        q = self.quota(key, user, client_id)
        if q is not None:
            self._sensor(key, q[1]).unrecord(value, self.clock())

    # -- the per-IP connection creation rate (KIP-612) ---------------------------------------
    def ip_connection_throttle_ms(self, ip: str) -> int:
        """Record a new connection from `ip`; > 0: it is over its connection_creation_rate."""
        if not self.store.quotas:
            return 0
        bound = self.store.quotas.get(((IP, ip),), {}).get(CONNECTION_CREATION_RATE)
        if bound is None:
            bound = self.store.quotas.get(((IP, None),), {}).get(CONNECTION_CREATION_RATE)
        if bound is None:
            return 0
        now = self.clock()
        sensor = self._sensor(CONNECTION_CREATION_RATE, (ip, ""))
        sensor.record(1, now)
        throttle = sensor.throttle_ms(bound, now)
        if throttle:
            sensor.unrecord(1, now)  # Kafka does not count a connection it refuses
            self.throttled[CONNECTION_CREATION_RATE] += 1
        return throttle
