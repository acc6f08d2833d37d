"""Regenerate protocol/apis/*.py from Apache Kafka's message definitions, and their typed stubs.

    python tools/gen_schemas.py /path/to/kafka/clients/src/main/resources/common/message \
        [/path/to/kafka/group-coordinator/src/main/resources/common/message ...]
    python tools/gen_schemas.py --stubs     # only the .pyi stubs, from the checked-in schemas
    python tools/gen_schemas.py --streams DIR  # only the KIP-1071 streams-group APIs (issue 35)
    python tools/gen_schemas.py --kraft DIR... # only the KRaft APIs and records (issue 29), e.g. from
        the 4.4 jars' common/message (kafka-clients) and common/metadata (kafka-metadata)
    python tools/gen_schemas.py --only Name,Name DIR... # only these APIs' modules (issue 35: the
        versions Kafka 4.4 added, from the kafka-clients 4.4 jar's common/message)

Kafka's JSON (clients/src/main/resources/common/message/*.json) is the source of the *facts*:
field names, types, version ranges, nullability, tags and defaults. We emit them in our own
compact form (see protocol/schema.py); documentation strings are not copied. Kafka marks a
version still under development with "latestVersionUnstable"; like a Kafka broker with
unstable.api.versions.enable=false we leave that version out.

Stubs: the message classes are made at run time (protocol/schema.py), so beside each schema module
we write a `.pyi` a type checker reads instead: per schema a `Message` subclass named as Kafka names
it (ProduceRequest), its fields typed and a keyword `__init__`, every struct class of the schema
nested in it (ProduceRequest.PartitionProduceData, as the run time sets them), and the module's
`REQUEST`/`RESPONSE` typed as a `Schema` whose call returns that class and whose struct attributes
are the nested classes. They are rendered from the imported schemas, not the JSON, so they describe
exactly what runs; tests/protocol/test_stubs.py renders them again and compares.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The APIs minibroker defines schemas for: (Kafka file stem, our module name).
APIS = [
    "Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
    "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups",
    "SaslHandshake", "ApiVersions", "CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId",
    "OffsetForLeaderEpoch", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit",
    "DescribeConfigs", "AlterConfigs", "DescribeLogDirs", "SaslAuthenticate", "CreatePartitions",
    "DeleteGroups", "IncrementalAlterConfigs", "OffsetDelete", "DescribeCluster", "DescribeProducers",
    "DescribeTransactions", "ListTransactions", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
    "DescribeTopicPartitions", "DescribeClientQuotas", "AlterClientQuotas", "DescribeUserScramCredentials",
    "AlterUserScramCredentials",
]
# KIP-932 share groups (kept apart from APIS so the list above merges with other work untouched).
APIS += [
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
    "DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets",
]
# ACLs (issue 19): kept apart too.
APIS += ["DescribeAcls", "CreateAcls", "DeleteAcls"]
# KRaft (issue 29): the APIs brokers and the controller speak to each other. Kept apart, and
# generated alone with --kraft, so the schemas above stay at the Kafka release they came from.
KRAFT_APIS = [
    "BrokerRegistration", "BrokerHeartbeat", "UnregisterBroker", "AlterPartition", "AllocateProducerIds",
    "ControllerRegistration", "DescribeQuorum", "UpdateFeatures", "FetchSnapshot", "WriteTxnMarkers",
    "AlterPartitionReassignments", "ListPartitionReassignments", "ElectLeaders", "Envelope",
]
APIS += KRAFT_APIS
# The rest of Kafka 4.4's broker API (issue 35), generated with --only from the 4.4 JSON.
APIS += ["ListConfigResources", "UnregisterController"]
# Delegation tokens (KIP-48; issue 35), generated with --only from the 4.4 JSON.
APIS += ["CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken", "DescribeDelegationToken"]
# Several log directories (issue 35): generated with --only from the 4.4 JSON.
APIS += ["AlterReplicaLogDirs"]
# KIP-858 directory assignment (issue 29): the broker-to-controller API, generated with --only
# from the 4.4 JSON.
APIS += ["AssignReplicasToDirs"]
# The share coordinator's inter-broker APIs (KIP-932; issue 29: share groups on a cluster),
# generated with --only from the 4.4 JSON.
APIS += ["InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
         "DeleteShareGroupState", "ReadShareGroupStateSummary"]
# KIP-1071 streams groups (issue 35): generated alone with --streams from the 4.4 jars'
# common/message (kafka-clients), like --kraft.
STREAMS_APIS = ["StreamsGroupHeartbeat", "StreamsGroupDescribe", "StreamsGroupTopologyDescriptionUpdate"]
APIS += STREAMS_APIS
# The metadata records of __cluster_metadata (kafka-metadata's common/metadata/*.json), framed by
# api key and version (protocol/metadata_records.py's BY_API_KEY; Kafka: MetadataRecordType).
METADATA_RECORDS = [
    "RegisterBrokerRecord", "UnregisterBrokerRecord", "TopicRecord", "PartitionRecord", "ConfigRecord",
    "PartitionChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord", "RemoveTopicRecord",
    "DelegationTokenRecord", "UserScramCredentialRecord", "FeatureLevelRecord", "ClientQuotaRecord",
    "ProducerIdsRecord", "BrokerRegistrationChangeRecord", "AccessControlEntryRecord",
    "RemoveAccessControlEntryRecord", "NoOpRecord", "ZkMigrationStateRecord",
    "RemoveUserScramCredentialRecord", "BeginTransactionRecord", "EndTransactionRecord",
    "AbortTransactionRecord", "RemoveDelegationTokenRecord", "RegisterControllerRecord",
    "ClearElrRecord", "UnregisterControllerRecord",
]
# The values of KRaft's control records (KIP-595, KIP-630, KIP-853), keyed by ControlRecordType.
RAFT_RECORDS = ["LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord",
                "VotersRecord"]
# Records the share coordinator writes to __share_group_state (protocol/share_records.py).
SHARE_RECORDS = ["ShareSnapshotKey", "ShareSnapshotValue", "ShareUpdateKey", "ShareUpdateValue"]
# Records Kafka's coordinators write to __consumer_offsets / __transaction_state.
RECORDS = ["OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue",
           "TransactionLogKey", "TransactionLogValue",
           # KIP-848 consumer groups (key versions 3-8 and 16 in __consumer_offsets)
           "ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue",
           "ConsumerGroupPartitionMetadataKey", "ConsumerGroupPartitionMetadataValue",
           "ConsumerGroupMemberMetadataKey", "ConsumerGroupMemberMetadataValue",
           "ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupTargetAssignmentMetadataValue",
           "ConsumerGroupTargetAssignmentMemberKey", "ConsumerGroupTargetAssignmentMemberValue",
           "ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue",
           "ConsumerGroupRegularExpressionKey", "ConsumerGroupRegularExpressionValue"]
# KIP-1071 streams-group records of __consumer_offsets (record types 17 and 19-23; Kafka 4.4 has no
# StreamsGroupPartitionMetadata, type 18): protocol/streams_group_records.py, generated alone with
# --streams-records from the 4.4 kafka-group-coordinator jar's common/message.
STREAMS_RECORDS = ["StreamsGroupMetadataKey", "StreamsGroupMetadataValue",
                   "StreamsGroupMemberMetadataKey", "StreamsGroupMemberMetadataValue",
                   "StreamsGroupTargetAssignmentMetadataKey", "StreamsGroupTargetAssignmentMetadataValue",
                   "StreamsGroupTargetAssignmentMemberKey", "StreamsGroupTargetAssignmentMemberValue",
                   "StreamsGroupCurrentMemberAssignmentKey", "StreamsGroupCurrentMemberAssignmentValue",
                   "StreamsGroupTopologyKey", "StreamsGroupTopologyValue"]
# KIP-932 share-group records of __consumer_offsets (record types 10-15; Kafka 4.4 has no
# ShareGroupPartitionMetadata, type 9): protocol/share_group_records.py, generated alone with
# --share-group-records from the 4.4 kafka-group-coordinator jar's common/message.
SHARE_GROUP_RECORDS = ["ShareGroupMemberMetadataKey", "ShareGroupMemberMetadataValue",
                       "ShareGroupMetadataKey", "ShareGroupMetadataValue",
                       "ShareGroupTargetAssignmentMetadataKey", "ShareGroupTargetAssignmentMetadataValue",
                       "ShareGroupTargetAssignmentMemberKey", "ShareGroupTargetAssignmentMemberValue",
                       "ShareGroupCurrentMemberAssignmentKey", "ShareGroupCurrentMemberAssignmentValue",
                       "ShareGroupStatePartitionMetadataKey", "ShareGroupStatePartitionMetadataValue"]


def load(path: Path) -> dict:
    text = "\n".join(line for line in path.read_text().splitlines() if not line.strip().startswith("//"))
    return json.loads(text)


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return s.lower()


def module_name(api: str) -> str:
    return snake(api)


def default_literal(ftype: str, raw: str | None, nullable: str) -> str | None:
    """Python literal for a non-obvious default, or None when the type's zero value applies."""
    if raw is None or raw == "":
        return None
    raw = str(raw).lower() if isinstance(raw, bool) else str(raw)
    if raw == "null":
        return "None"
    if ftype == "bool":
        return "True" if raw == "true" else None
    if ftype in ("int8", "int16", "uint16", "int32", "int64"):
        v = int(raw, 16) if raw.lower().startswith("0x") else int(raw)
        return None if v == 0 else str(v)
    if ftype == "float64":
        return None if float(raw) == 0 else repr(float(raw))
    if ftype == "string":
        return repr(raw)
    return None


class Emitter:
    def __init__(self, common: dict[str, list]):
        self.common = common
        self.lines: list[str] = []

    def fields(self, fields: list, indent: int) -> None:
        pad = " " * indent
        for f in fields:
            ftype: str = f["type"]
            base = ftype[2:] if ftype.startswith("[]") else ftype
            sub = f.get("fields")
            if base[0].isupper() and sub is None:
                sub = self.common[base]
            args = [repr(snake(f["name"])), repr(ftype), repr(f.get("versions", f.get("taggedVersions")))]
            if f.get("nullableVersions"):
                args.append(f"nullable={f['nullableVersions']!r}")
            if "tag" in f:
                args.append(f"tag={f['tag']}")
                args.append(f"tagged={f['taggedVersions']!r}")
            d = default_literal(base, f.get("default"), f.get("nullableVersions", ""))
            if d is None and "default" in f and f["default"] is None and not (
                    "tag" in f and sub and not ftype.startswith("[]")):
                # JSON null: a nullable field absent unless set (a tagged one is not written). Not
                # for a tagged struct: Kafka's generated code compares it with its empty instance,
                # so a null one is written (marker 0) and an absent one reads as empty
                d = "None"
            if d is not None:
                args.append(f"default={d}")
            if f.get("ignorable"):
                args.append("ignorable=True")
            if f.get("flexibleVersions"):
                args.append(f"flexible={f['flexibleVersions']!r}")
            if sub:
                self.lines.append(f"{pad}F({', '.join(args)}, fields=[")
                self.fields(sub, indent + 4)
                self.lines.append(f"{pad}]),")
            else:
                self.lines.append(f"{pad}F({', '.join(args)}),")


# Versions Kafka 4 removed (KIP-896) that minibroker keeps serving for old clients: the schema
# starts at 0 (its fields say "0+", so v0 is the v1 layout, as in Kafka 3.x's JSON).
KEEP_FROM_ZERO = {"DescribeLogDirsRequest", "DescribeLogDirsResponse"}


def valid_range(d: dict) -> str:
    vv = d["validVersions"]
    if d["name"] in KEEP_FROM_ZERO:
        vv = "0-" + vv.partition("-")[2]
    if d.get("latestVersionUnstable"):
        lo, _, hi = vv.partition("-")
        vv = lo if not hi or int(hi) - 1 == int(lo) else f"{lo}-{int(hi) - 1}"
    return vv


def emit_struct(name: str, d: dict, var: str, out: list[str]) -> None:
    common = {c["name"]: c["fields"] for c in d.get("commonStructs", [])}
    e = Emitter(common)
    e.fields(d["fields"], 8)
    out.append(f"{var} = Schema(")
    out.append(f"    {name!r}, {valid_range(d)!r}, flexible={d.get('flexibleVersions', 'none')!r},")
    out.append("    fields=[")
    out.extend(e.lines)
    out.append("    ],")
    out.append(")")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--only"]:
        only(argv[1].split(","), [Path(p) for p in argv[2:]])
        return
    if argv[:1] == ["--streams-records"]:
        write_streams_records({p.stem: p for d in argv[1:] for p in Path(d).glob("*.json")})
        write_stubs()
        return
    if argv[:1] == ["--share-group-records"]:
        write_group_records({p.stem: p for d in argv[1:] for p in Path(d).glob("*.json")}, SHARE_GROUP_RECORDS,
                            "share_group_records", "KIP-932 share-group records")
        write_stubs()
        return
    kraft_only = argv[:1] == ["--kraft"]
    streams_only = argv[:1] == ["--streams"]
    dirs = [Path(p) for p in argv[1 if kraft_only or streams_only else 0:]]
    files = {p.stem: p for d in dirs for p in d.glob("*.json")}
    # the metadata records' JSON is named after the file, not always after the record
    files.update({load(p)["name"]: p for d in dirs for p in d.glob("*Record.json")})
    outdir = Path(__file__).resolve().parent.parent / "protocol" / "apis"
    apis = KRAFT_APIS if kraft_only else STREAMS_APIS if streams_only else APIS
    for api in apis:
        write_api(api, files, outdir)
    if streams_only:
        print(f"wrote {len(apis)} API modules")
        write_stubs()
        return
    write_kraft_records(files, outdir.parent)
    if kraft_only:
        print(f"wrote {len(apis)} API modules and the KRaft records")
        write_stubs()
        return
    _write_records(files, outdir)


def only(apis: list[str], dirs: list[Path]) -> None:
    """Regenerate just `apis` (and every stub), leaving the other schemas at their release."""
    files = {p.stem: p for d in dirs for p in d.glob("*.json")}
    outdir = Path(__file__).resolve().parent.parent / "protocol" / "apis"
    for api in apis:
        write_api(api, files, outdir)
    print(f"wrote {len(apis)} API modules")
    write_stubs()


def write_api(api: str, files: dict[str, Path], outdir: Path) -> None:
    """protocol/apis/<api>.py from the API's request and response JSON."""
    req, resp = load(files[api + "Request"]), load(files[api + "Response"])
    out = [
        f'"""{api} (api key {req["apiKey"]}): schema data generated from Kafka\'s message definitions',
        "by tools/gen_schemas.py. Edit the generator, not this file.\"\"\"",
        "",
        "from minibroker_protocol.schema import Api, F, Schema, message_classes",
        "",
    ]
    emit_struct(api + "Request", req, "REQUEST", out)
    out.append("")
    emit_struct(api + "Response", resp, "RESPONSE", out)
    out.append("")
    out.append(f"API = Api({req['apiKey']}, {api!r}, REQUEST, RESPONSE)")
    out.append("__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi")
    (outdir / f"{module_name(api)}.py").write_text("\n".join(out) + "\n")


def _write_records(files: dict[str, Path], outdir: Path) -> None:
    rec = [
        '"""Coordinator records (__consumer_offsets, __transaction_state): schema data generated from',
        "Kafka's definitions by tools/gen_schemas.py. Edit the generator, not this file.\"\"\"",
        "",
        "from minibroker_protocol.schema import F, Schema, message_classes",
        "",
    ]
    for name in RECORDS:
        d = load(files[name])
        emit_struct(name, d, snake(name).upper(), rec)
        rec.append("")
    rec.append(f"__getattr__ = message_classes({', '.join(snake(n).upper() for n in RECORDS)})")
    rec.append("")
    (outdir.parent / "coordinator_records.py").write_text("\n".join(rec))
    share = [
        '"""Share-coordinator records (__share_group_state, KIP-932): schema data generated from',
        "Kafka's definitions by tools/gen_schemas.py. Edit the generator, not this file.\"\"\"",
        "",
        "from minibroker_protocol.schema import F, Schema, message_classes",
        "",
    ]
    for name in SHARE_RECORDS:
        emit_struct(name, load(files[name]), snake(name).upper(), share)
        share.append("")
    share.append(f"__getattr__ = message_classes({', '.join(snake(n).upper() for n in SHARE_RECORDS)})")
    share.append("")
    (outdir.parent / "share_records.py").write_text("\n".join(share))
    names = ", ".join(module_name(a) for a in APIS)
    print(f"wrote {len(APIS)} API modules: {names}")
    write_stubs()


def write_streams_records(files: dict[str, Path]) -> None:
    """protocol/streams_group_records.py: the KIP-1071 records, keyed by record type in BY_TYPE."""
    write_group_records(files, STREAMS_RECORDS, "streams_group_records", "KIP-1071 streams-group records")


def write_group_records(files: dict[str, Path], names: list[str], module: str, what: str) -> None:
    """protocol/<module>.py: one kind of group's __consumer_offsets records, keyed by record type in BY_TYPE."""
    out = [
        f'"""{what} (__consumer_offsets): schema data generated from Kafka\'s',
        "definitions by tools/gen_schemas.py. Edit the generator, not this file. BY_TYPE maps a record",
        "type (the key's int16 prefix; Kafka: CoordinatorRecordType) to its (key, value) schemas.\"\"\"",
        "",
        "from minibroker_protocol.schema import F, Message, Schema, message_classes",
        "",
    ]
    types: dict[int, str] = {}
    for name in names:
        d = load(files[name])
        if name.endswith("Key"):
            types[d["apiKey"]] = snake(name[:-3]).upper()
        emit_struct(name, d, snake(name).upper(), out)
        out.append("")
    out.append("BY_TYPE: dict[int, tuple[Schema[Message], Schema[Message]]] = {")
    out.extend(f"    {k}: ({v}_KEY, {v}_VALUE)," for k, v in sorted(types.items()))
    out.append("}")
    out.append(f"__getattr__ = message_classes({', '.join(snake(n).upper() for n in names)})")
    out.append("")
    (ROOT / "protocol" / f"{module}.py").write_text("\n".join(out))


def write_kraft_records(files: dict[str, Path], outdir: Path) -> None:
    """protocol/metadata_records.py (with BY_API_KEY) and protocol/raft_records.py."""
    meta = [
        '"""KRaft metadata records (__cluster_metadata): schema data generated from Kafka\'s',
        "common/metadata definitions by tools/gen_schemas.py. Edit the generator, not this file.",
        "BY_API_KEY maps the api key a record is framed with to its schema (Kafka: MetadataRecordType).\"\"\"",
        "",
        "from minibroker_protocol.schema import F, Message, Schema, message_classes",
        "",
    ]
    keys = {}
    for name in METADATA_RECORDS:
        d = load(files[name])
        keys[d["apiKey"]] = snake(name).upper()
        emit_struct(name, d, snake(name).upper(), meta)
        meta.append("")
    meta.append("BY_API_KEY: dict[int, Schema[Message]] = {")
    meta.extend(f"    {k}: {v}," for k, v in sorted(keys.items()))
    meta.append("}")
    meta.append(f"__getattr__ = message_classes({', '.join(snake(n).upper() for n in METADATA_RECORDS)})")
    meta.append("")
    (outdir / "metadata_records.py").write_text("\n".join(meta))
    raft = [
        '"""KRaft control record values (LeaderChange, snapshot header/footer, KRaftVersion, Voters): schema',
        "data generated from Kafka's definitions by tools/gen_schemas.py. Edit the generator, not this file.\"\"\"",
        "",
        "from minibroker_protocol.schema import F, Schema, message_classes",
        "",
    ]
    for name in RAFT_RECORDS:
        emit_struct(name, load(files[name]), snake(name).upper(), raft)
        raft.append("")
    raft.append(f"__getattr__ = message_classes({', '.join(snake(n).upper() for n in RAFT_RECORDS)})")
    raft.append("")
    (outdir / "raft_records.py").write_text("\n".join(raft))


# ------------------------------------------------------------------------------------ stubs

_SCALAR = {
    "bool": "bool", "int8": "int", "int16": "int", "uint16": "int", "int32": "int", "int64": "int",
    "float64": "float", "string": "str", "bytes": "bytes", "uuid": "uuid.UUID",
}
_STUB_NAMES = {"bool", "int", "float", "str", "bytes", "list", "type", "uuid", "None", "MemoryRecords",
               "BaseRecords", "Message", "Schema", "Api"}


def stub_modules() -> dict[str, list[str]]:
    """Module (dotted) -> the names of its schema variables, for every module that gets a stub."""
    mods = {f"minibroker_protocol.apis.{module_name(a)}": ["REQUEST", "RESPONSE"] for a in APIS}
    mods["minibroker_protocol.coordinator_records"] = [snake(n).upper() for n in RECORDS]
    mods["minibroker_protocol.share_records"] = [snake(n).upper() for n in SHARE_RECORDS]
    mods["minibroker_protocol.streams_group_records"] = [snake(n).upper() for n in STREAMS_RECORDS]
    mods["minibroker_protocol.share_group_records"] = [snake(n).upper() for n in SHARE_GROUP_RECORDS]
    mods["minibroker_protocol.metadata_records"] = [snake(n).upper() for n in METADATA_RECORDS]
    mods["minibroker_protocol.raft_records"] = [snake(n).upper() for n in RAFT_RECORDS]
    return mods


def field_type(f, top: str, request: bool) -> str:  # f: minibroker_protocol.schema.F
    if f.is_struct:
        assert f.struct is not None
        t = f"{top}.{f.struct.__name__}"
    elif f.base == "records":
        t = "MemoryRecords" if request else "BaseRecords"  # Kafka: MemoryRecords in, BaseRecords out
    else:
        t = _SCALAR[f.base]
    if f.is_array:
        t = f"list[{t}]"
    if f.nullable.lo <= f.nullable.hi or f._default is None:
        t += " | None"
    return t


def render_stub(module: str, variables: list[str]) -> str:
    """The .pyi text describing `module`'s schemas as the run time builds them."""
    mod = importlib.import_module(module)
    out = [
        f'"""Types of {module}: generated by tools/gen_schemas.py --stubs. Edit the generator, not',
        'this file. The classes exist at run time (protocol/schema.py makes them); `_...Schema` are',
        'type-only views of the module\'s Schema objects."""',
        "",
    ]
    header = len(out)
    for var in variables:
        schema = getattr(mod, var)
        top = schema.name
        request = top.endswith("Request")
        classes = schema.classes
        # a field or struct named like a type the stub spells would shadow it inside the class body
        shadowing = ({f.name for cls in classes.values() for f in cls._fields} | set(classes)) & _STUB_NAMES
        assert not shadowing, f"{module}: fields shadow names the stub uses: {shadowing}"
        typed: dict[str, list[tuple[str, str]]] = {
            name: [(f.name, field_type(f, top, request)) for f in cls._fields] for name, cls in classes.items()
        }

        def body(fields: list[tuple[str, str]], pad: str) -> list[str]:
            lines = [f"{pad}{n}: {t}" for n, t in fields]
            params = "".join(f", {n}: {t} = ..." for n, t in fields)
            lines.append(f"{pad}def __init__(self{', *' if fields else ''}{params}) -> None: ...")
            return lines

        out.append(f"class {top}(Message):")
        for name in classes:
            if name != top:
                out.append(f"    class {name}(Message):")
                out.extend(body(typed[name], " " * 8))
                out.append("")
        out.extend(body(typed[top], "    "))
        out.append("")
        view = f"_{top}Schema"
        out.append(f"class {view}(Schema[{top}]):")
        for name in classes:
            if name != top:
                out.append(f"    {name}: type[{top}.{name}]")
        out.append("    @property")
        out.append(f"    def cls(self) -> type[{top}]: ...")
        params = "".join(f", {n}: {t} = ..." for n, t in typed[top])
        # narrower than Schema.__call__(**kwargs: Any) on purpose: this is the typed view of it
        out.append(f"    def __call__(self{', *' if typed[top] else ''}{params}) -> {top}: ...  # type: ignore[override]")
        out.append("")
        out.append(f"{var}: {view}")
        out.append("")
    if hasattr(mod, "API"):
        out.append("API: Api")
        out.append("")
    if hasattr(mod, "BY_API_KEY"):
        out.append("BY_API_KEY: dict[int, Schema[Message]]")
        out.append("")
    if hasattr(mod, "BY_TYPE"):
        out.append("BY_TYPE: dict[int, tuple[Schema[Message], Schema[Message]]]")
        out.append("")
    text = "\n".join(out[header:])
    used = [n for n in ("Api", "BaseRecords", "MemoryRecords", "Message", "Schema") if re.search(rf"\b{n}\b", text)]
    imports = ["import uuid", ""] if "uuid.UUID" in text else []
    imports += [f"from minibroker_protocol.schema import {', '.join(used)}", "", ""]
    return "\n".join(out[:header] + imports) + text


def stub_path(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".pyi")


def write_stubs() -> None:
    sys.path.insert(0, str(ROOT))
    mods = stub_modules()
    for module, variables in mods.items():
        stub_path(module).write_text(render_stub(module, variables))
    print(f"wrote {len(mods)} stubs")


if __name__ == "__main__":
    if sys.argv[1:] == ["--stubs"]:
        write_stubs()
    else:
        main(sys.argv[1:])
