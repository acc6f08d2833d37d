"""Each SASL listener's settings, read once from Kafka's keys (per-listener forms win):
`sasl.enabled.mechanisms`, `listener.name.<l>.<mechanism>.sasl.jaas.config` (PLAIN's users),
`connections.max.reauth.ms`, `connection.failed.authentication.delay.ms`,
`sasl.server.max.receive.size`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from minibroker.config import BrokerConfig, ConfigError, Endpoint
from minibroker.security.jaas import JaasError, parse_jaas, plain_users
from minibroker.security.scram import MECHANISMS as SCRAM_MECHANISMS

log = logging.getLogger("minibroker.security")

SERVED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)


@dataclass(frozen=True)
class SaslSettings:
    listener: str
    security_protocol: str
    mechanisms: list[str]  # enabled and served, in the configured order
    plain_users: dict[str, str] = field(repr=False)  # secrets: never in a log line
    max_reauth_ms: int = 0
    failed_auth_delay_ms: int = 100
    max_receive_size: int = 524288

    @classmethod
    def for_listener(cls, config: BrokerConfig, endpoint: Endpoint) -> SaslSettings:
        name = endpoint.listener_name
        raw = config.listener_value(name, "sasl.enabled.mechanisms")
        enabled = [m.strip() for m in (raw.split(",") if isinstance(raw, str) else raw) if m.strip()]
        served = [m for m in enabled if m in SERVED_MECHANISMS]
        for m in enabled:
            if m not in SERVED_MECHANISMS:
                log.warning("listener %s: SASL mechanism %s is not served by minibroker (served: %s)",
                            name, m, ", ".join(SERVED_MECHANISMS))
        users: dict[str, str] = {}
        if "PLAIN" in served:
            jaas = config.listener_value(name, "sasl.jaas.config", "PLAIN")
            if jaas is None:
                raise ConfigError(f"listener {name} enables PLAIN but listener.name.{name.lower()}.plain."
                                  "sasl.jaas.config is not set (its user_<name>=\"<password>\" entries are "
                                  "the users)")
            try:
                _module, options = parse_jaas(str(jaas))
            except JaasError as e:
                raise ConfigError(f"listener.name.{name.lower()}.plain.sasl.jaas.config: {e}") from None
            users = plain_users(options)
        return cls(name, endpoint.security_protocol, served, users,
                   int(config.listener_value(name, "connections.max.reauth.ms")),
                   int(config.listener_value(name, "connection.failed.authentication.delay.ms")),
                   int(config.listener_value(name, "sasl.server.max.receive.size")))
