"""Each SASL listener's settings, read once from Kafka's keys (per-listener forms win):
`sasl.enabled.mechanisms`, `listener.name.<l>.<mechanism>.sasl.jaas.config` (PLAIN's users, the
unsecured OAUTHBEARER validator's options), `connections.max.reauth.ms`,
`connection.failed.authentication.delay.ms`, `sasl.server.max.receive.size`, and OAUTHBEARER's
validator (`sasl.server.callback.handler.python`, minibroker's stand-in for Kafka's
`sasl.server.callback.handler.class`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from minibroker.config import BrokerConfig, ConfigError, Endpoint
from minibroker.security.jaas import JaasError, parse_jaas, plain_users
from minibroker.security.oauthbearer import UnsecuredJwsValidator, Validator, load_validator
from minibroker.security.scram import MECHANISMS as SCRAM_MECHANISMS

log = logging.getLogger("minibroker.security")

SERVED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")
# Kafka's default OAUTHBEARER server handler, the one minibroker builds in
_UNSECURED_HANDLER = "org.apache.kafka.common.security.oauthbearer.internals.unsecured." \
                     "OAuthBearerUnsecuredValidatorCallbackHandler"


@dataclass(frozen=True)
class SaslSettings:
    listener: str
    security_protocol: str
    mechanisms: list[str]  # enabled and served, in the configured order
    plain_users: dict[str, str] = field(repr=False)  # secrets: never in a log line
    max_reauth_ms: int = 0
    failed_auth_delay_ms: int = 100
    max_receive_size: int = 524288
    oauthbearer_validator: Validator | None = field(default=None, repr=False)
    # listener.name.<l>.<mechanism>.connections.max.reauth.ms (Kafka reads it per mechanism)
    max_reauth_by_mechanism: dict[str, int] = field(default_factory=dict)

    def max_reauth_for(self, mechanism: str | None) -> int:
        return self.max_reauth_by_mechanism.get(mechanism or "", self.max_reauth_ms)

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
        for m in served:
            if m in SCRAM_MECHANISMS and config.listener_value(name, "sasl.jaas.config", m) is None:
                raise ConfigError(_missing_jaas(name, m))
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
        validator = _oauthbearer_validator(config, name) if "OAUTHBEARER" in served else None
        return cls(name, endpoint.security_protocol, served, users,
                   int(config.listener_value(name, "connections.max.reauth.ms")),
                   int(config.listener_value(name, "connection.failed.authentication.delay.ms")),
                   int(config.listener_value(name, "sasl.server.max.receive.size")), validator,
                   {m: int(config.listener_value(name, "connections.max.reauth.ms", m)) for m in served})


def _missing_jaas(listener: str, mechanism: str) -> str:
    """Kafka refuses to start a listener with an enabled SASL mechanism that has no JAAS config
    (JaasContext.loadServerContext: the per-listener, per-mechanism sasl.jaas.config, else a
    static JAAS file, which minibroker does not read); PLAIN's login module does not cover SCRAM."""
    lower = listener.lower()
    return (f"listener {listener} enables SASL mechanism {mechanism} but listener.name.{lower}."
            f"{mechanism.lower()}.sasl.jaas.config is not set (say org.apache.kafka.common.security.scram."
            f"ScramLoginModule required;). Kafka: Could not find a 'KafkaServer' or '{lower}.KafkaServer' "
            "entry in the JAAS configuration. System property 'java.security.auth.login.config' is not set")


def _oauthbearer_validator(config: BrokerConfig, name: str) -> Validator:
    """The listener's OAUTHBEARER validator: the Python hook if one is named, else Kafka's unsecured
    JWS validator with the JAAS options. A Kafka handler class other than the unsecured one (say
    KIP-768's JWKS OAuthBearerValidatorCallbackHandler) without a Python hook stops the start:
    falling back to the unsecured validator would let anyone in with a forged token."""
    prefix = f"listener.name.{name.lower()}.oauthbearer."
    options: dict[str, str] = {}
    jaas = config.listener_value(name, "sasl.jaas.config", "OAUTHBEARER")
    if jaas is not None:
        try:
            _module, options = parse_jaas(str(jaas))
        except JaasError as e:
            raise ConfigError(f"{prefix}sasl.jaas.config: {e}") from None
    hook = config.listener_value(name, "sasl.server.callback.handler.python", "OAUTHBEARER")
    if hook:
        try:
            return load_validator(str(hook), options)
        except ValueError as e:
            raise ConfigError(f"{prefix}sasl.server.callback.handler.python: {e}") from None
    handler = config.listener_value(name, "sasl.server.callback.handler.class", "OAUTHBEARER") or \
        config.unknown.get("sasl.server.callback.handler.class")
    if handler and str(handler).strip() != _UNSECURED_HANDLER:
        raise ConfigError(f"listener {name}: {prefix}sasl.server.callback.handler.class={handler} is a Java class "
                          "minibroker cannot run (JWKS validation, KIP-768, is not built in); name a Python "
                          f"validator with {prefix}sasl.server.callback.handler.python=package.module:callable "
                          "(docs/security.md)")
    try:
        return UnsecuredJwsValidator(options)
    except ValueError as e:
        raise ConfigError(f"{prefix}sasl.jaas.config: {e}") from None
