"""A KRaft broker's GROUP configs from the metadata log (Kafka: DynamicConfigPublisher handing the
image's group configs to the GroupConfigManager).

Theory of operation. The controller writes a GROUP config resource (type 32, named by the group
id) as ConfigRecords once it has checked them (minibroker.controller.configuration_control). On the
first image and whenever the image's GROUP configs differ from the last ones applied, this
publisher splits them by kind and replaces, whole, what each coordinator reads:

- consumer.*: the ConsumerGroupConfigs' dict the ConsumerGroupManager shares (session timeout and
  heartbeat interval from each member's next heartbeat);
- streams.*: the StreamsGroupConfigs' dict the StreamsGroupManager reads at each heartbeat;
- share.* and errors.deadletterqueue.*: the share coordinator's, applied at once to the share
  partitions this broker leads (delivery count limit, record locks; share.auto.offset.reset when a
  share partition is initialised), kept by the Coordinators for a share coordinator built later.

DescribeConfigs on any broker then answers from these (handlers/configs.py's providers), so every
broker of the cluster describes and uses the same values. Nothing is written to the data dir's
*_group_configs.json files: the metadata log is where a cluster keeps them. A value this broker
cannot read (a key of a newer version, a malformed number) is left out, said once per change.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minibroker.coordinator.group import consumer_group_configs as cgc
from minibroker.coordinator.group import streams_group_configs as sgc
from minibroker.coordinator.group.consumer_group_configs import ConsumerGroupConfigs
from minibroker.coordinator.share.share_group_configs import GROUP_KEYS as SHARE_KEYS
from minibroker.metadata.image import GROUP_RESOURCE, MetadataDelta, MetadataImage

if TYPE_CHECKING:
    from minibroker.coordinator.share.share_group import ShareGroupCoordinator
    from minibroker.coordinators import Coordinators

log = logging.getLogger("minibroker.metadata")


class GroupConfigPublisher:
    def __init__(self, consumer_configs: ConsumerGroupConfigs, coordinators: Coordinators):
        self.consumer_configs = consumer_configs
        self.coordinators = coordinators
        self.applied: dict[str, dict[str, str]] | None = None  # the image's GROUP configs last applied
        self.share: dict[str, dict[str, str]] = {}  # their share.* keys
        coordinators.on_share_built = lambda coordinator: use_share_group_configs(coordinator, self.share)

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        groups = {name: dict(kv) for (rtype, name), kv in image.configs.items() if rtype == GROUP_RESOURCE and kv}
        if groups == self.applied:
            return
        self.applied = groups
        consumer: dict[str, dict[str, int]] = {}
        streams: dict[str, dict[str, str]] = {}
        share: dict[str, dict[str, str]] = {}
        for group, kv in groups.items():
            for name, value in kv.items():
                if name in cgc.GROUP_KEYS:
                    try:
                        consumer.setdefault(group, {})[name] = int(value)
                    except ValueError:
                        log.warning("group %s: config %s=%s of the metadata not applied", group, name, value)
                elif name in sgc.GROUP_KEYS:
                    streams.setdefault(group, {})[name] = value
                elif name in SHARE_KEYS:
                    share.setdefault(group, {})[name] = value
                else:
                    log.warning("group %s: config %s of the metadata is not one this broker knows", group, name)
        # in place: the group managers hold these very dicts
        self.consumer_configs.configs.clear()
        self.consumer_configs.configs.update(consumer)
        streams_configs = self.coordinators.streams_group_configs.configs
        streams_configs.clear()
        streams_configs.update(streams)
        self.share = share
        coordinator = self.coordinators.share_if_built
        if coordinator is not None:
            use_share_group_configs(coordinator, share)


def use_share_group_configs(coordinator: ShareGroupCoordinator, configs: dict[str, dict[str, str]]) -> None:
    """Every group's share.* configs as the image holds them, over what the coordinator read from
    its file; the share partitions of the groups whose configs changed apply them at once."""
    old = coordinator.group_configs
    changed = {g for g in configs.keys() | old.keys() if configs.get(g) != old.get(g)}
    coordinator.group_configs = configs
    for key, sp in coordinator.partitions.items():
        if key[0] in changed:
            coordinator.configure(sp)
