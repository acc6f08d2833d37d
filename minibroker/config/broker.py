"""The broker's static configuration: listeners, the cluster id, and `BrokerConfig`.

`BrokerConfig.load` layers, lowest first: defaults < config.yaml < the CLI's --host/--port/
--data-dir < --override key=value. Everything explicitly given counts as STATIC_BROKER_CONFIG, as
Kafka counts server.properties and --override. Unknown keys are logged and ignored, as Kafka does.
Each topic key's broker-wide default is resolved here once (`topic_defaults`), from the first of
its broker synonyms that has a value, converted to the topic key's unit.
"""

from __future__ import annotations

import base64
import logging
import re
import socket
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minibroker.config.definitions import (
    _COMMA,
    ConfigError,
    ConfigSource,
    ConfigValue,
    as_bool,
    as_float,
    as_int,
    as_list,
    as_optional_int,
    as_optional_str,
    as_str,
    parse_value,
)
from minibroker.config.keys import _PROTOCOL_MAP_DEFAULT, _SYNONYM_SCALE, BROKER_CONFIGS, TOPIC_CONFIGS

# One logger for the whole package: operators filter on "minibroker.config".
log = logging.getLogger("minibroker.config")
# Kafka's internal broker keys (defined but not documented or described) that minibroker reads from
# `unknown`: unclean.leader.election.interval.ms (the controller's unclean election task)
INTERNAL_KEYS = frozenset({"unclean.leader.election.interval.ms"})

# --------------------------------------------------------------------------- listeners


@dataclass(frozen=True)
class Endpoint:
    """One parsed listener: NAME://host:port. An empty host means every interface."""

    listener_name: str
    security_protocol: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


_LISTENER = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")  # SocketServerConfigs' URI pattern
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# what this broker can serve today (minibroker.security)
SERVED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _protocol_map(text: str) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for entry in _COMMA.split(text.strip()) if text.strip() else []:
        name, sep, protocol = entry.partition(":")
        if not sep or protocol.strip().upper() not in _SECURITY_PROTOCOLS:
            raise ConfigError.invalid("listener.security.protocol.map", text,
                                      f"Invalid entry '{entry}'; expected NAME:PROTOCOL with PROTOCOL one of "
                                      + ", ".join(_SECURITY_PROTOCOLS))
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def parse_listeners(value: str, protocol_map: str = _PROTOCOL_MAP_DEFAULT, *,
                    key: str = "listeners") -> list[Endpoint]:
    """Parse 'NAME://host:port,...' as Kafka's SocketServerConfigs.listenerListToEndPoints does."""
    names = _protocol_map(protocol_map)
    endpoints: list[Endpoint] = []
    for entry in [e for e in _COMMA.split(value.strip()) if e]:
        m = _LISTENER.fullmatch(entry)
        if not m:
            raise ConfigError.invalid(key, value, f"Unable to parse {entry} to a broker endpoint")
        name, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError.invalid(key, value, f"Port {port} of {entry} is out of range 0..65535")
        if name not in names:
            raise ConfigError.invalid(key, value, f"No security protocol defined for listener {name}")
        endpoints.append(Endpoint(name, names[name], host, port))
    if not endpoints:
        raise ConfigError.invalid(key, value, "At least one listener is required")
    if len({e.listener_name for e in endpoints}) != len(endpoints):
        raise ConfigError.invalid(key, value, "Each listener must have a different name")
    return endpoints


# --------------------------------------------------------------------------- cluster id


def generate_cluster_id() -> str:
    """A random Kafka Uuid as Kafka prints it: 22 chars of URL-safe base64, never starting with '-'
    (Kafka's Uuid.randomUuid re-draws those so the id cannot be mistaken for a CLI flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


# --------------------------------------------------------------------------- the broker config


def _flatten(mapping: Mapping[object, object], prefix: str = "") -> Iterable[tuple[str, object]]:
    """Nested YAML maps become dotted keys: {log: {dirs: x}} -> ('log.dirs', x)."""
    for k, v in mapping.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            yield from _flatten(v, name + ".")
        else:
            yield name, v


def _check_flags_replace(listed: Sequence[Endpoint], new: Endpoint) -> None:
    """--host/--port replace the config file's `listeners` with one PLAINTEXT listener. Kafka has no
    such flags: its listeners are what server.properties or --override say. So a config whose
    listeners authenticate or encrypt (or are several) is not silently turned into one open
    PLAINTEXT port, where every client would reach the ACLs as ANONYMOUS (issue 30): the broker
    refuses to start; a single PLAINTEXT listener replaced by another is logged."""
    given = ",".join(str(e) for e in listed)
    if len(listed) > 1 or listed[0].security_protocol != "PLAINTEXT":
        raise ConfigError(
            f"--host/--port would replace the config's listeners {given} with the single listener {new}, "
            "dropping their authentication or encryption: set the addresses in listeners (in the config or "
            "with --override listeners=...) and leave out --host/--port")
    if str(listed[0]) != str(new):
        log.warning("--host/--port replace the config's listeners %s with %s", given, new)


class BrokerConfig:
    """The broker's static configuration: every broker key's parsed value and where it came from.

    Build it with `load` (YAML file, CLI flags, overrides) or `from_props` (a mapping of Kafka keys).
    """

    def __init__(self, static: Mapping[str, object]):
        """`static`: explicitly set broker keys -> raw or parsed values (anything a YAML file or
        --override holds: `parse_value` narrows it). Unknown keys are logged and kept in `unknown`;
        invalid values raise ConfigError."""
        self.unknown: dict[str, object] = {}
        # Kafka's per-listener keys, `listener.name.<listener>.[<mechanism>.]<key>` (the SASL JAAS
        # configs, per-listener SSL and SASL settings): read by minibroker.security. They hold
        # secrets: never logged, masked in repr.
        self.listener_props: dict[str, str] = {}
        parsed: dict[str, ConfigValue] = {}
        for name, raw in static.items():
            if name.startswith("listener.name.") and raw is not None:
                self.listener_props[name] = str(raw)
                continue
            key = BROKER_CONFIGS.get(name)
            if key is None:
                self.unknown[name] = raw
                continue
            if raw is None:  # an empty YAML value: leave the key at its default
                continue
            parsed[name] = parse_value(key, raw)
        for name in sorted(self.unknown):
            if name in INTERNAL_KEYS:
                continue  # read where it is used, undescribed, as Kafka's internal keys are
            # Kafka ignores keys it does not know; say so, and point topic keys to their broker synonym.
            topic_key = TOPIC_CONFIGS.get(name)
            hint = f" (a topic config; the broker's default for it is {topic_key.synonyms[0]})" \
                if topic_key is not None and topic_key.synonyms else ""
            log.warning("Ignoring unknown broker config %s%s", name, hint)

        # node.id and broker.id name one setting; whichever was given sets the other (KafkaConfig.populateSynonyms).
        if "node.id" in parsed and "broker.id" in parsed and parsed["node.id"] != parsed["broker.id"]:
            raise ConfigError("You must set `node.id` to the same value as `broker.id`.")
        if "broker.id" in parsed and "node.id" not in parsed:
            if as_int("broker.id", parsed["broker.id"]) < 0:
                raise ConfigError.invalid("broker.id", parsed["broker.id"], "Value must be at least 0")
            parsed["node.id"] = parsed["broker.id"]
        elif "node.id" in parsed:
            parsed["broker.id"] = parsed["node.id"]

        self._static = parsed
        self._values: dict[str, ConfigValue] = {name: key.default for name, key in BROKER_CONFIGS.items()}
        self._values.update(parsed)
        if "broker.id" not in parsed:
            self._values["broker.id"] = self._values["node.id"]
        self._check()
        self._topic_defaults = self._resolve_topic_defaults()
        self.cluster_id: str = self.get_optional_str("cluster.id") or generate_cluster_id()

    # ---- construction

    @classmethod
    def from_props(cls, props: Mapping[str, object]) -> BrokerConfig:
        return cls(props)

    @classmethod
    def load(cls, path: Path | str | None = None, overrides: Sequence[str] = (), *, host: str | None = None,
             port: int | None = None, data_dir: str | Path | None = None) -> BrokerConfig:
        """Defaults < YAML file < --host/--port/--data-dir < --override key=value (later wins).

        host/port replace `listeners` with PLAINTEXT://host:port (a missing one is taken from the
        listener it replaces); `advertised.listeners` follows unless set explicitly. data_dir sets log.dirs.
        """
        props: dict[str, object] = {}
        if path is not None:
            props.update(_read_yaml(Path(path)))
        if host is not None or port is not None:
            listed = parse_listeners(str(props.get("listeners") or BROKER_CONFIGS["listeners"].default),
                                     str(props.get("listener.security.protocol.map") or _PROTOCOL_MAP_DEFAULT))
            current = listed[0]
            new = Endpoint("PLAINTEXT", "PLAINTEXT", current.host if host is None else host,
                           current.port if port is None else int(port))
            if "listeners" in props and not any(o.partition("=")[0].strip() == "listeners" for o in overrides):
                _check_flags_replace(listed, new)
            props["listeners"] = str(new)
        if data_dir is not None:
            props["log.dirs"] = str(data_dir)
        for item in overrides:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise ConfigError(f"Invalid override {item!r}: expected key=value")
            props[name.strip()] = value
        return cls(props)

    # ---- checks across keys (KafkaConfig.validateValues and our single-node limits)

    def _check(self) -> None:
        roll_ms = self.get_optional_int("log.roll.ms")
        if roll_ms is None:
            roll_ms = self.get_int("log.roll.hours") * 3600 * 1000
        if roll_ms < 1:
            raise ConfigError("log.roll.ms must be greater than or equal to 1")
        jitter = self.get_optional_int("log.roll.jitter.ms")
        if jitter is None:
            jitter = self.get_int("log.roll.jitter.hours")
        if jitter < 0:
            raise ConfigError("log.roll.jitter.ms must be greater than or equal to 0")
        if self._retention_ms() == 0:
            raise ConfigError("log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
        dirs = [d for d in _COMMA.split((self.get_optional_str("log.dirs") or self.get_str("log.dir")).strip()) if d]
        if not dirs:
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
        if len({str(Path(d).absolute()) for d in dirs}) < len(dirs):
            raise ConfigError(f"Each log directory must be listed once in log.dirs: {','.join(dirs)}")
        # the first holds the broker's own files (Kafka: metadata.log.dir defaults to it)
        self.data_dir = Path(dirs[0])
        self.log_dirs = [Path(d) for d in dirs]

        # KRaft: a controller listener is the controller's (minibroker.kafka_raft_server), not the broker
        # socket server's; one the protocol map leaves out is PLAINTEXT, as in Kafka
        controller_names = [n.upper() for n in self.get_list("controller.listener.names")]
        known = _protocol_map(self.get_str("listener.security.protocol.map"))
        protocol_map = self.get_str("listener.security.protocol.map") + "".join(
            f",{n}:PLAINTEXT" for n in controller_names if n not in known)
        every = parse_listeners(self.get_str("listeners"), protocol_map)
        self.controller_endpoints = [e for e in every if e.listener_name in controller_names]
        # a controller-only node has no broker listener: its controller listener fills the broker fields
        self.listener_endpoints = [e for e in every if e.listener_name not in controller_names] \
            or self.controller_endpoints
        for endpoint in self.listener_endpoints:
            if endpoint.security_protocol not in SERVED_SECURITY_PROTOCOLS:
                raise ConfigError(f"Listener {endpoint} uses {endpoint.security_protocol}; minibroker serves "
                                  + ", ".join(SERVED_SECURITY_PROTOCOLS) + " only")
        if len({e.port for e in self.listener_endpoints if e.port}) != len([e for e in self.listener_endpoints if e.port]):
            raise ConfigError.invalid("listeners", self.get_str("listeners"), "Each listener must have a different port")
        advertised_text = self.get_optional_str("advertised.listeners")
        if advertised_text:
            advertised = parse_listeners(advertised_text, protocol_map, key="advertised.listeners")
        else:  # Kafka advertises the listeners; an empty host becomes this machine's name
            advertised = [Endpoint(e.listener_name, e.security_protocol, e.host or socket.gethostname(), e.port)
                          for e in self.listener_endpoints]
        if any(e.host == "0.0.0.0" for e in advertised):
            raise ConfigError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                              "Use a routable IP address.")
        names = {e.listener_name for e in self.listener_endpoints}
        for e in advertised:
            if e.listener_name not in names:
                raise ConfigError(f"advertised.listeners listener {e.listener_name} is not in listeners")
        self.advertised_endpoints = advertised
        first = self.listener_endpoints[0]
        self.listener_name: str = first.listener_name
        self.listener_host: str = first.host
        self.listener_port: int = first.port
        mine = next((e for e in advertised if e.listener_name == first.listener_name), None)
        if mine is None:
            raise ConfigError(f"advertised.listeners has no address for listener {first.listener_name}")
        self.advertised_host: str = mine.host
        self.advertised_port: int = mine.port
        for e in self.listener_endpoints:
            if not any(a.listener_name == e.listener_name for a in advertised):
                # Kafka: a listener left out of advertised.listeners is not registered; a client
                # on it gets no address for this broker. Ours answers with the listener's own.
                advertised.append(Endpoint(e.listener_name, e.security_protocol,
                                           e.host or socket.gethostname(), e.port))
        self.node_id: int = self.get_int("node.id")

        for key in ("default.replication.factor", "offsets.topic.replication.factor",
                    "transaction.state.log.replication.factor"):
            if self.get_int(key) > 1:
                log.warning("%s=%d, but this is a single-node broker: topics that need more than one replica "
                            "cannot be created", key, self.get_int(key))
        if self.get_int("group.max.session.timeout.ms") < self.get_int("group.min.session.timeout.ms"):
            raise ConfigError("group.max.session.timeout.ms must be greater than or equal to "
                              "group.min.session.timeout.ms")

    def _retention_ms(self) -> int:
        # KafkaConfig.logRetentionTimeMillis: ms, else minutes, else hours; any negative means -1 (forever).
        millis = self.get_optional_int("log.retention.ms")
        if millis is None:
            minutes = self.get_optional_int("log.retention.minutes")
            millis = minutes * 60 * 1000 if minutes is not None else self.get_int("log.retention.hours") * 3600 * 1000
        return -1 if millis < 0 else millis

    def _resolve_topic_defaults(self) -> dict[str, ConfigValue]:
        defaults: dict[str, ConfigValue] = {}
        for name, key in TOPIC_CONFIGS.items():
            value = key.default
            for synonym in key.synonyms:
                raw = self._values.get(synonym)
                if raw is not None:
                    value = as_int(synonym, raw) * _SYNONYM_SCALE[synonym] if synonym in _SYNONYM_SCALE else raw
                    break
            if isinstance(value, list):
                value = list(value)
            defaults[name] = value
        defaults["retention.ms"] = self._retention_ms()
        return defaults

    def bind_ports(self, bound: Mapping[str, int]) -> None:
        """The server bound each listener (listener name -> port): an advertised port 0 becomes
        the bound port, so clients are sent where the broker really listens."""
        self.advertised_endpoints = [
            Endpoint(e.listener_name, e.security_protocol, e.host, bound.get(e.listener_name, e.port))
            if e.port == 0 else e for e in self.advertised_endpoints]
        first = self.advertised_for(self.listener_name)
        self.advertised_host, self.advertised_port = first.host, first.port

    def advertised_for(self, listener: str) -> Endpoint:
        """The address given to clients that came in on listener `listener`."""
        for e in self.advertised_endpoints:
            if e.listener_name == listener:
                return e
        raise KeyError(f"no listener named {listener}")

    # ---- reading

    def value(self, key: str) -> ConfigValue:
        """The parsed value of a broker key (None where Kafka's default is null and nothing set it).
        Callers that use the value as one type read it with the typed getters below."""
        try:
            return self._values[key]
        except KeyError:
            raise KeyError(f"Unknown broker config {key}") from None

    def get(self, key: str) -> Any:
        """`value`, untyped: kept for the ~70 callers outside minibroker.config that use it as an int or
        a bool today (issue 28: they move to the typed getters, then this returns ConfigValue)."""
        return self.value(key)

    # Typed getters (Kafka's AbstractConfig.getInt/getLong/getBoolean/getDouble/getString/getList):
    # TypeError if the key is not of that type, a programming error the tests catch.

    def get_int(self, key: str) -> int:
        """An int, short or long key."""
        return as_int(key, self.value(key))

    def get_optional_int(self, key: str) -> int | None:
        """An int, short or long key whose default is null (log.retention.ms, log.roll.ms...)."""
        return as_optional_int(key, self.value(key))

    def get_bool(self, key: str) -> bool:
        return as_bool(key, self.value(key))

    def get_float(self, key: str) -> float:
        """A double key."""
        return as_float(key, self.value(key))

    def get_str(self, key: str) -> str:
        """A string, password or class key."""
        return as_str(key, self.value(key))

    def get_optional_str(self, key: str) -> str | None:
        """A string, password or class key whose default is null (cluster.id, advertised.listeners...)."""
        return as_optional_str(key, self.value(key))

    def get_list(self, key: str) -> list[str]:
        return as_list(key, self.value(key))

    def source(self, key: str) -> str:
        """'STATIC_BROKER_CONFIG' if the key was set (file, flag or override), else 'DEFAULT_CONFIG'."""
        return self._source(key).name

    def _source(self, key: str) -> ConfigSource:
        if key not in BROKER_CONFIGS:
            raise KeyError(f"Unknown broker config {key}")
        return ConfigSource.STATIC_BROKER_CONFIG if key in self._static else ConfigSource.DEFAULT_CONFIG

    def is_set(self, key: str) -> bool:
        return key in self._static

    def values(self) -> dict[str, ConfigValue]:
        return dict(self._values)

    def topic_defaults(self) -> dict[str, ConfigValue]:
        """Every topic key -> its default on this broker (the first broker synonym with a value)."""
        return {k: (list(v) if isinstance(v, list) else v) for k, v in self._topic_defaults.items()}

    def listener_value(self, listener: str, key: str, mechanism: str | None = None) -> Any:
        """`key` for one listener: `listener.name.<listener>.[<mechanism>.]<key>` if set, else the
        broker-wide key where there is one (Kafka: ListenerName.configPrefix, lower-cased names).
        Untyped as `get` is: the per-listener text or the broker key's parsed value, which
        minibroker.security converts itself today."""
        prefix = f"listener.name.{listener.lower()}."
        for name in ([f"{prefix}{mechanism.lower()}.{key}"] if mechanism else []) + [prefix + key]:
            if name in self.listener_props:
                return self.listener_props[name]
        return self._values.get(key)

    def __repr__(self) -> str:
        shown = {k: ("[hidden]" if BROKER_CONFIGS[k].sensitive else v) for k, v in self._static.items()}
        return f"BrokerConfig(static={shown!r}, listener keys={sorted(self.listener_props)!r})"


def _read_yaml(path: Path) -> dict[str, object]:
    import yaml  # lazy: only a --config file needs it (tests/test_startup_imports.py)

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"Cannot read config file {path}: {e.strerror or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        # one line naming the file and the line (the parser's own text spans several lines)
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ConfigError(f"Config file {path} is not valid YAML{where}: {what}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"Config file {path} must hold a mapping of Kafka config keys, not {type(data).__name__}")
    props: dict[str, object] = {}
    for name, value in _flatten(data):
        if name in props:
            log.warning("Config key %s is given twice in %s; the later value wins", name, path)
        props[name] = value
    return props

