"""The group coordinator's answers on the wire (JoinGroup, SyncGroup, DescribeGroups, LeaveGroup).

The state machine (group_metadata_manager.py) decides; this module only shapes what it decided into
the response messages the handlers encode, so that the fields a version carries are chosen in
one place (Kafka builds these in GroupMetadataManager and GroupCoordinatorService).
"""

from __future__ import annotations

from minibroker.coordinator.group.classic_group import EMPTY_ASSIGNMENT, ClassicGroup, GroupState
from minibroker_protocol.apis import describe_groups, join_group, leave_group, sync_group
from minibroker_protocol.errors import ErrorCode

# The message classes are built at run time from the schema data (protocol/schema.py); their
# fields are typed by the generated stubs (protocol/apis/*.pyi).
JoinResponse = join_group.RESPONSE
SyncResponse = sync_group.RESPONSE
MemberResponse = leave_group.RESPONSE.MemberResponse

# Kafka's AclOperation codes the GROUP resource supports (READ, DELETE, DESCRIBE,
# DESCRIBE_CONFIGS, ALTER_CONFIGS); with no authorizer every one is allowed.
GROUP_AUTHORIZED_OPERATIONS = sum(1 << op for op in (3, 6, 8, 10, 11))
# DescribeGroups before v3 has no authorized operations: Integer.MIN_VALUE means "not asked".
AUTHORIZED_OPERATIONS_OMITTED = -(1 << 31)


def join_error(member_id: str, code: int) -> join_group.JoinGroupResponse:
    return JoinResponse(error_code=code, member_id=member_id, generation_id=-1, protocol_name=None,
                        leader="", members=[])


def sync_error(code: int) -> sync_group.SyncGroupResponse:
    return SyncResponse(error_code=code, assignment=EMPTY_ASSIGNMENT)


def sync_response(group: ClassicGroup, assignment: bytes, error: int = ErrorCode.NONE) -> sync_group.SyncGroupResponse:
    """What a member parked in SyncGroup gets: its assignment, with the protocol on success."""
    ok = error == ErrorCode.NONE
    return SyncResponse(error_code=error, assignment=assignment,
                        protocol_type=group.protocol_type if ok else None,
                        protocol_name=group.protocol_name if ok else None)


def protocols(req: join_group.JoinGroupRequest) -> list[tuple[str, bytes]]:
    """The (name, metadata) pairs of a JoinGroup request."""
    return [(p.name, bytes(p.metadata)) for p in req.protocols]


def join_response(group: ClassicGroup, member_id: str, *, with_members: bool,
                  skip_assignment: bool = False) -> join_group.JoinGroupResponse:
    """A JoinGroup answer for the current generation; only the leader gets the members."""
    members = []
    if with_members:
        members = [JoinResponse.JoinGroupResponseMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id,
            metadata=m.metadata(group.protocol_name)) for m in group.members.values()]
    return JoinResponse(error_code=0, generation_id=group.generation_id, protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name, leader=group.leader_id or "",
                        skip_assignment=skip_assignment, member_id=member_id, members=members)


def described_group(group_id: str, group: ClassicGroup | None, *, active: bool,
                    include_authorized_operations: bool) -> describe_groups.DescribeGroupsResponse.DescribedGroup:
    """One DescribeGroups entry: Dead for an unknown group, metadata only once a protocol is chosen."""
    DG = describe_groups.RESPONSE.DescribedGroup
    DM = describe_groups.RESPONSE.DescribedGroupMember
    ops = GROUP_AUTHORIZED_OPERATIONS if include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED
    if not active:
        return DG(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id=group_id, group_state="",
                  protocol_type="", protocol_data="", members=[], authorized_operations=ops)
    if group is None or group.is_in(GroupState.DEAD):
        return DG(error_code=0, group_id=group_id, group_state=GroupState.DEAD.value, protocol_type="",
                  protocol_data="", members=[], authorized_operations=ops)
    stable = group.is_in(GroupState.STABLE)
    members = [
        DM(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
           client_host=m.client_host,
           # Metadata is only meaningful once a protocol is chosen (Kafka: describeNoMetadata).
           member_metadata=m.metadata(group.protocol_name) if stable else b"",
           member_assignment=m.assignment)
        for m in group.members.values()
    ]
    return DG(error_code=0, group_id=group_id, group_state=group.state.value,
              protocol_type=group.protocol_type or "",
              protocol_data=(group.protocol_name or "") if stable else "",
              members=members, authorized_operations=ops)
