"""What the trace must never print: secrets masked in a request's and a response's decoded form.

Kafka's request logger (kafka.request.logger, org.apache.kafka.network.Request.loggableRequest)
masks the values of AlterConfigs and IncrementalAlterConfigs with AbstractKafkaConfig.loggableValue:
`[hidden]` for a BROKER key of type PASSWORD or of no known type (a listener-prefixed key is looked
up without its `listener.name.<listener>.[<mechanism>.]` prefix), the same rule for TOPIC keys,
nothing for BROKER_LOGGER, everything for the other resource types (GROUP, CLIENT_METRICS). Kafka's
message schemas mark no field as sensitive (its JSON converters write a SCRAM salt and salted
password, or SaslAuthenticate's bytes, as they are), so the fields below are listed by hand, and
the trace masks more than Kafka's request log does (issue 30: the trace reaches the console's
browsers, not only an operator's log file):

| API                        | masked                                                         |
|----------------------------|----------------------------------------------------------------|
| AlterUserScramCredentials  | upsertions' salt and salted_password (a SCRAM login needs no more) |
| SaslAuthenticate           | auth_bytes, both ways (PLAIN's password, SCRAM proofs, OAUTHBEARER tokens) |
| AlterConfigs, IncrementalAlterConfigs | values by loggableValue's rule                      |
| CreateTopics               | config values by the TOPIC rule (Kafka logs them as sent)      |
| DescribeConfigs, CreateTopics responses | a value marked is_sensitive, and its synonyms' values |

A response that echoes a masked value (a validation error message) has it replaced too. The masked
form is what every trace output prints: --trace's lines and JSON, the console's live stream; the
annotated hex of a request that had anything masked is withheld, since the bytes hold the secret.
"""

from __future__ import annotations

from minibroker.config.kafka_dynamic import KAFKA_DYNAMIC_BROKER_KEYS
from minibroker.config.keys import BROKER_CONFIGS, TOPIC_CONFIGS
from minibroker_protocol.apis import (
    alter_configs,
    alter_user_scram_credentials,
    create_topics,
    describe_configs,
    incremental_alter_configs,
    sasl_authenticate,
)

HIDDEN = "[hidden]"  # org.apache.kafka.common.config.types.Password.HIDDEN

# ConfigResource.Type ids
_TOPIC, _BROKER, _BROKER_LOGGER = 2, 4, 8
_SASL_MECHANISM_PREFIXES = ("plain.", "scram-sha-256.", "scram-sha-512.", "oauthbearer.", "gssapi.")

# every broker key whose type is known (ours and the dynamic keys Kafka accepts)
_BROKER_TYPES: dict[str, str] = {name: t for name, t, _default, _sensitive in KAFKA_DYNAMIC_BROKER_KEYS}
_BROKER_TYPES.update({k.name: k.type for k in BROKER_CONFIGS.values()})


def _broker_key_type(name: str) -> str | None:
    """Kafka's KafkaConfig.configType: the key itself, else without its listener (and SASL
    mechanism) prefix."""
    if name in _BROKER_TYPES:
        return _BROKER_TYPES[name]
    if name.startswith("listener.name."):
        rest = name[len("listener.name."):].partition(".")[2]
        for prefix in _SASL_MECHANISM_PREFIXES:
            if rest.startswith(prefix) and rest[len(prefix):] in _BROKER_TYPES:
                return _BROKER_TYPES[rest[len(prefix):]]
        return _BROKER_TYPES.get(rest)
    return None


def _topic_key_type(name: str) -> str | None:
    key = TOPIC_CONFIGS.get(name)
    return key.type if key is not None else None


def sensitive_config(resource_type: int, name: str) -> bool:
    """AbstractKafkaConfig.loggableValue's rule: may the value of this key be a secret?"""
    if resource_type == _BROKER_LOGGER:
        return False
    if resource_type == _BROKER:
        kind = _broker_key_type(name)
    elif resource_type == _TOPIC:
        kind = _topic_key_type(name)
    else:
        return True
    return kind is None or kind == "password"


class Redaction:
    """Masks one request/response pair in their decoded (trace_entry) form, in place."""

    def __init__(self) -> None:
        self.secrets: set[str] = set()  # masked config values, scrubbed from the response's texts too
        self.masked = False

    def _hide(self, obj: dict[str, object], field: str, *, text: bool = True) -> None:
        """`text`: a string value, which a response may quote; bytes fields (shown as hex or a
        length) are only masked, and the request's hex view is withheld."""
        value = obj.get(field)
        if value is None or value == HIDDEN:
            return
        if text and isinstance(value, str) and value:
            self.secrets.add(value)
        obj[field] = HIDDEN
        self.masked = True

    def request(self, api_key: int, req: object) -> None:
        if not isinstance(req, dict):
            return
        if api_key == alter_user_scram_credentials.API.key:
            for u in _dicts(req.get("upsertions")):
                self._hide(u, "salt", text=False)
                self._hide(u, "salted_password", text=False)
        elif api_key == sasl_authenticate.API.key:
            self._hide(req, "auth_bytes", text=False)
        elif api_key in (alter_configs.API.key, incremental_alter_configs.API.key):
            for res in _dicts(req.get("resources")):
                rtype = res.get("resource_type")
                for c in _dicts(res.get("configs")):
                    if not isinstance(rtype, int) or sensitive_config(rtype, str(c.get("name"))):
                        self._hide(c, "value")
        elif api_key == create_topics.API.key:
            for t in _dicts(req.get("topics")):
                for c in _dicts(t.get("configs")):
                    if sensitive_config(_TOPIC, str(c.get("name"))):
                        self._hide(c, "value")

    def response(self, api_key: int, resp: object) -> object:
        if isinstance(resp, dict):
            if api_key == sasl_authenticate.API.key:
                self._hide(resp, "auth_bytes", text=False)
            elif api_key == describe_configs.API.key:
                for res in _dicts(resp.get("results")):
                    self._sensitive_entries(res.get("configs"))
            elif api_key == create_topics.API.key:
                for t in _dicts(resp.get("topics")):
                    self._sensitive_entries(t.get("configs"))
        return _scrub(resp, self.secrets) if self.secrets else resp

    def _sensitive_entries(self, configs: object) -> None:
        for c in _dicts(configs):
            if c.get("is_sensitive"):
                self._hide(c, "value")
                for s in _dicts(c.get("synonyms")):
                    self._hide(s, "value")


def _dicts(value: object) -> list[dict[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _scrub(value: object, secrets: set[str]) -> object:
    """Every string of `value` with the secrets replaced (a message quoting a refused value)."""
    if isinstance(value, str):
        for s in secrets:
            if s in value:
                value = value.replace(s, HIDDEN)
        return value
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    return value

