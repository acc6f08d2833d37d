"""Recompression keeps every record and header field, changing only the codec."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker_protocol.records.batch import BatchView, iter_batches
from minibroker_protocol.records.compression import Codec
from minibroker_protocol.records.convert import recompress
from minibroker_protocol.records.v2 import Record, build_batch, decode_batch

codecs = st.sampled_from(list(Codec))


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.binary(max_size=300)), min_size=1, max_size=20),
    source=codecs,
    target=codecs,
    pid=st.integers(-1, 1000),
)
def test_recompress_keeps_records(values, source, target, pid):
    recs = [Record(offset_delta=i, timestamp_delta=i * 3, key=b"k%d" % i, value=v, headers=[("h", b"x")])
            for i, v in enumerate(values)]
    seq = 0 if pid >= 0 else -1
    epoch = 0 if pid >= 0 else -1
    one = build_batch(recs, compression=source, base_timestamp=1_700_000_000_000, producer_id=pid,
                      producer_epoch=epoch, base_sequence=seq)
    two = build_batch(recs[:1], compression=source, base_timestamp=5, base_offset=len(recs))
    out = recompress(one + two, target)
    views = list(iter_batches(out))
    assert len(views) == 2
    for v in views:
        v.validate()
        assert v.compression == target
    before = [decode_batch(one), decode_batch(two, 0)]
    after = [decode_batch(out, v.pos) for v in views]
    for b, a in zip(before, after, strict=True):
        assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in a.records] == \
            [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records]
        assert (a.producer_id, a.producer_epoch, a.base_sequence, a.base_offset, a.last_offset_delta) == \
            (b.producer_id, b.producer_epoch, b.base_sequence, b.base_offset, b.last_offset_delta)
    if source == target:
        assert out == one + two


def test_same_codec_is_untouched():
    b = build_batch([Record(value=b"v")], compression=Codec.LZ4, base_timestamp=1)
    assert recompress(b, Codec.LZ4) == b
    assert BatchView(recompress(b, Codec.GZIP)).compression == Codec.GZIP
