"""Limits on connections, applied when one is accepted (Kafka: SocketServer's ConnectionQuotas).

- `max.connections`: connections held at once, broker-wide; one more is closed as soon as it is
  accepted (Kafka's acceptor waits for a slot instead; docs/differences.md);
- `max.connections.per.ip` and `max.connections.per.ip.overrides` (`address:count,...`): per
  address, as Kafka (it closes the new connection: TooManyConnectionsException);
- `connection_creation_rate` client quotas on IP entities (KIP-612): a connection over the rate is
  closed (Kafka: ConnectionThrottledException);
- `max.connection.creation.rate`: new connections per second broker-wide; over it the server stops
  accepting for the throttle time, and the connections wait in the listen backlog, as Kafka's
  acceptor throttles.

Every refusal is logged (at most one line a second per reason and address, with the count of the
ones not logged) and counted in `refused` for /metrics. The limits are read from the current
(dynamic) config at every accept, so AlterConfigs changes them at once.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

from minibroker.config import BrokerConfig
from minibroker.quotas.manager import ClientQuotaManager
from minibroker.quotas.rate import SampledRate

log = logging.getLogger("minibroker.network.connection_quotas")


def parse_overrides(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        host, _, count = item.rpartition(":")
        try:
            out[host.strip()] = int(count)
        except ValueError:
            log.warning("ignoring max.connections.per.ip.overrides entry %r: not address:count", item)
    return out


class ConnectionQuotas:
    def __init__(self, config: Callable[[], BrokerConfig], quotas: ClientQuotaManager):
        self._config = config
        self._quotas = quotas
        self.per_ip: Counter[str] = Counter()
        self.total = 0
        self.refused: Counter[str] = Counter()  # reason -> connections refused (for /metrics)
        self._overrides_text: str | None = None
        self._overrides: dict[str, int] = {}
        self._rate: SampledRate | None = None
        self._last_logged: dict[tuple[str, str], float] = {}
        self._unlogged: Counter[tuple[str, str]] = Counter()

    def _ip_limit(self, cfg: BrokerConfig, ip: str) -> int:
        text = cfg.get("max.connections.per.ip.overrides")
        if text != self._overrides_text:
            self._overrides_text, self._overrides = text, parse_overrides(text)
        return self._overrides.get(ip, cfg.get("max.connections.per.ip"))

    def accept_delay_ms(self) -> int:
        """Record one accepted connection against max.connection.creation.rate; > 0: stop accepting
        for that long (Kafka: the acceptor's connection rate throttle)."""
        cfg = self._config()
        bound = cfg.get("max.connection.creation.rate")
        if bound >= 2**31 - 1:
            return 0
        now = time.monotonic() * 1000
        if self._rate is None:
            self._rate = SampledRate(cfg.get("quota.window.num"), cfg.get("quota.window.size.seconds") * 1000, now)
        self._rate.record(1, now)
        return self._rate.throttle_ms(bound, now)

    def admit(self, ip: str) -> bool:
        """Count a new connection from `ip`, or refuse it (False) with a log line."""
        cfg = self._config()
        reason = None
        if self.total >= cfg.get("max.connections"):
            reason = f"the broker holds max.connections={cfg.get('max.connections')} connections"
        else:
            limit = self._ip_limit(cfg, ip)
            if self.per_ip[ip] >= limit:
                reason = f"the address already has the maximum of {limit} connections (max.connections.per.ip)"
            else:
                throttle = self._quotas.ip_connection_throttle_ms(ip)
                if throttle:
                    reason = (f"over its connection_creation_rate quota (throttled {throttle} ms)")
        if reason is not None:
            self._refused(ip, reason)
            return False
        self.total += 1
        self.per_ip[ip] += 1
        return True

    def release(self, ip: str) -> None:
        self.total -= 1
        self.per_ip[ip] -= 1
        if self.per_ip[ip] <= 0:
            del self.per_ip[ip]

    def _refused(self, ip: str, reason: str) -> None:
        kind = reason.split(" (")[0][:40]
        self.refused[kind] += 1
        key = (ip, kind)
        now = time.monotonic()
        if now - self._last_logged.get(key, -10.0) >= 1.0:
            more = self._unlogged.pop(key, 0)
            log.warning("refused connection from %s: %s%s", ip, reason,
                        f" ({more} more refused since the last line)" if more else "")
            self._last_logged[key] = now
        else:
            self._unlogged[key] += 1
