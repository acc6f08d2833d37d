"""A KRaft broker's delegation tokens from the metadata log (Kafka: DelegationTokenPublisher).

The DelegationTokenRecords the controller wrote (minibroker.controller.delegation_token_control)
are the tokens every broker's SASL/SCRAM listeners accept (`tokenauth=true`) and its
DescribeDelegationToken lists: on the first image (or a snapshot) and on every delta that changed
one, the whole set is handed to the broker's DelegationTokenCache, which in KRaft mode keeps them in
memory only and derives each HMAC from its own `delegation.token.secret.key` (the same on every
node, as Kafka requires).
"""

from __future__ import annotations

import logging

from minibroker.config import BrokerConfig
from minibroker.controller.delegation_token_control import DelegationTokenSettings, token_information
from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.security.delegation_tokens import DelegationTokenCache

log = logging.getLogger("minibroker.security")


class DelegationTokenPublisher:
    def __init__(self, cache: DelegationTokenCache):
        self.cache = cache
        self.first = True
        if cache.tokens():
            log.warning("KRaft mode: the delegation tokens of %s are not used; the metadata log holds the "
                        "cluster's", cache.path.name)
        cache.use_metadata_log()

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if self.first or delta.delegation_tokens_changed or delta.image.offset < 0:
            self.first = False
            self.cache.set_tokens(token_information(r) for r in image.delegation_tokens.values())


def delegation_token_settings(config: BrokerConfig) -> DelegationTokenSettings:
    """The controller's token settings, under Kafka's keys (the secret's deprecated alias too)."""
    secret = config.get("delegation.token.secret.key") or config.get("delegation.token.master.key")
    return DelegationTokenSettings(
        secret_key=str(secret) if secret else None,
        max_lifetime_ms=int(config.get("delegation.token.max.lifetime.ms")),
        expiry_time_ms=int(config.get("delegation.token.expiry.time.ms")),
        expiry_check_interval_ms=int(config.get("delegation.token.expiry.check.interval.ms")))
