"""The codecs: stream layouts as the Java client writes them, interop with kafka-python's codecs,
round trips, corruption and decompression bombs."""

from __future__ import annotations

import gzip
import os
import struct
import tracemalloc
import zlib

import kafka.codec as kc
import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    XERIAL_BLOCK_SIZE,
    XERIAL_HEADER,
    ZSTD,
    Codec,
    CompressionError,
    DecompressionBomb,
    codec_of,
    compress,
    decompress,
    lz4_header_checksum,
)
from minibroker_protocol.records.xxhash32 import xxh32

CODECS = [GZIP, SNAPPY, LZ4, ZSTD]
CODEC_MAGIC = [(c, m) for c in CODECS for m in (0, 1, 2) if not (c is ZSTD and m < 2)]


# ---------------------------------------------------------------------------- xxhash32


def test_xxh32_known_vectors():
    # Reference values of the xxHash specification's XXH32 (seed 0).
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    assert xxh32(b"", seed=1) != xxh32(b"")


@given(st.binary(max_size=300))
@settings(max_examples=50, deadline=None)
def test_xxh32_matches_lz4_frame_header_checksums(data):
    # The lz4 library computes HC = (xxh32(descriptor) >> 8) & 0xFF; check ours agrees on a
    # frame whose descriptor carries the content size (so the hash covers 10 bytes).
    frame = lz4.frame.compress(data, store_size=True, block_linked=False)
    hc_pos = 14 if frame[4] & 0x08 else 6  # the library leaves the size out for empty input
    assert frame[hc_pos] == lz4_header_checksum(frame, broken=False)


# -------------------------------------------------------------------------------- ids


def test_codec_ids_are_kafkas():
    assert [int(c) for c in (NONE, GZIP, SNAPPY, LZ4, ZSTD)] == [0, 1, 2, 3, 4]
    assert [c.kafka_name for c in Codec] == ["NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD"]
    for bad in (5, 6, 7):
        with pytest.raises(CompressionError):
            codec_of(bad)
        with pytest.raises(CompressionError):
            decompress(bad, b"x", max_size=10)


def test_zstd_needs_magic_2():
    for magic in (0, 1):
        with pytest.raises(CompressionError) as e:
            compress(ZSTD, b"x", magic=magic)
        assert e.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


# ---------------------------------------------------------------------------- layouts


def test_gzip_header_is_javas():
    out = compress(GZIP, b"hello kafka")
    # ID1 ID2 deflate, no flags, mtime 0, XFL 0, OS 255 (java.util.zip.GZIPOutputStream)
    assert out[:10].hex() == "1f8b08000000000000ff"
    assert struct.unpack("<II", out[-8:]) == (zlib.crc32(b"hello kafka"), 11)
    assert gzip.decompress(out) == b"hello kafka"


def test_snappy_is_xerial_framed_in_32k_blocks():
    data = bytes(range(256)) * 300  # 76800 bytes: 3 blocks of at most 32 KiB
    out = compress(SNAPPY, data)
    assert out[:16] == bytes.fromhex("82534e4150505900 00000001 00000001".replace(" ", ""))
    assert XERIAL_HEADER == out[:16]
    pos, blocks = 16, []
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        blocks.append(snappy.decompress(out[pos + 4:pos + 4 + n]))
        pos += 4 + n
    assert [len(b) for b in blocks] == [XERIAL_BLOCK_SIZE, XERIAL_BLOCK_SIZE, len(data) - 2 * XERIAL_BLOCK_SIZE]
    assert b"".join(blocks) == data


def test_snappy_reads_raw_blocks_and_concatenated_xerial_streams():
    data = os.urandom(100) + b"z" * 5000
    assert decompress(SNAPPY, snappy.compress(data), max_size=len(data)) == data
    twice = compress(SNAPPY, data) + compress(SNAPPY, data)
    assert decompress(SNAPPY, twice, max_size=2 * len(data)) == data + data


def test_lz4_frame_layout_is_kafkas():
    out = compress(LZ4, b"x" * 1000, magic=2)
    magic, flg, bd = struct.unpack_from("<IBB", out)
    assert magic == 0x184D2204
    assert flg == 0x60  # version 01, independent blocks, no checksums, no content size
    assert bd == 0x40  # 64 KiB blocks
    assert out[6] == (xxh32(out[4:6]) >> 8) & 0xFF  # the correct HC (KIP-57)
    assert out[-4:] == b"\0\0\0\0"  # end mark, no content checksum


def test_lz4_kafka_3160_broken_checksum_for_magic_0():
    out0 = compress(LZ4, b"x" * 1000, magic=0)
    out1 = compress(LZ4, b"x" * 1000, magic=1)
    broken = (xxh32(out0[0:6]) >> 8) & 0xFF  # hash over the magic number too
    assert out0[6] == broken
    assert out1[6] == (xxh32(out1[4:6]) >> 8) & 0xFF
    assert out0[6] != out1[6]
    assert out0[7:] == out1[7:]
    # magic 0 reads either checksum; magic 1 and 2 insist on the real one
    assert decompress(LZ4, out0, magic=0, max_size=1000) == b"x" * 1000
    assert decompress(LZ4, out1, magic=0, max_size=1000) == b"x" * 1000
    for magic in (1, 2):
        with pytest.raises(CompressionError):
            decompress(LZ4, out0, magic=magic, max_size=1000)


def test_lz4_dependent_blocks_are_refused_like_kafka():
    linked = lz4.frame.compress(b"abc" * 100000, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    with pytest.raises(CompressionError):
        decompress(LZ4, linked, max_size=1 << 20)


def test_zstd_frames_without_content_size_and_concatenated():
    data = os.urandom(50) + b"q" * 300000
    cobj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    frame = cobj.compress(data) + cobj.flush()
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(ZSTD, frame, max_size=len(data)) == data
    with_checksum = zstandard.ZstdCompressor(write_checksum=True).compress(data)
    assert decompress(ZSTD, with_checksum + frame, max_size=2 * len(data)) == data + data


def test_gzip_reads_concatenated_members():
    assert decompress(GZIP, gzip.compress(b"ab") + gzip.compress(b"cd"), max_size=4) == b"abcd"


# ---------------------------------------------------------------------- kafka-python


@pytest.mark.parametrize("codec", CODECS)
@given(data=st.binary(min_size=1, max_size=100000))
@settings(max_examples=15, deadline=None)
def test_kafka_python_reads_ours_and_we_read_theirs(codec, data):
    # min_size=1: for empty input xerial (and so Java) writes the bare 16-byte header, which
    # kafka-python does not recognise as xerial; a batch never compresses nothing.
    ours = compress(codec, data)
    theirs_decode = {GZIP: kc.gzip_decode, SNAPPY: kc.snappy_decode, LZ4: kc.lz4_decode, ZSTD: kc.zstd_decode}
    theirs_encode = {GZIP: kc.gzip_encode, SNAPPY: kc.snappy_encode, LZ4: kc.lz4_encode, ZSTD: kc.zstd_encode}
    assert theirs_decode[codec](ours) == data
    assert decompress(codec, theirs_encode[codec](data), max_size=len(data)) == data


def test_we_read_kafka_python_raw_snappy():
    data = b"raw snappy " * 100
    assert decompress(SNAPPY, kc.snappy_encode(data, xerial_compatible=False), max_size=len(data)) == data


# ------------------------------------------------------------------------- properties


@pytest.mark.parametrize("codec,magic", CODEC_MAGIC)
@given(data=st.one_of(st.binary(max_size=5000), st.binary(max_size=20).map(lambda b: b * 4000)))
@settings(max_examples=25, deadline=None)
def test_round_trip(codec, magic, data):
    out = compress(codec, data, magic=magic)
    assert decompress(codec, out, magic=magic, max_size=len(data)) == data
    if data:
        with pytest.raises(DecompressionBomb):
            decompress(codec, out, magic=magic, max_size=len(data) - 1)


@pytest.mark.parametrize("codec,magic", CODEC_MAGIC)
def test_truncated_streams_are_corrupt(codec, magic):
    data = os.urandom(3000) + b"a" * 70000
    out = compress(codec, data, magic=magic)
    for cut in (1, 5, len(out) // 2, len(out) - 9):
        with pytest.raises(CompressionError) as e:
            decompress(codec, out[:cut], magic=magic, max_size=1 << 20)
        assert e.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", CODECS)
@given(garbage=st.binary(max_size=200))
@settings(max_examples=40, deadline=None)
def test_garbage_raises_compression_error_only(codec, garbage):
    try:
        decompress(codec, garbage, max_size=1 << 16)
    except CompressionError:
        pass


# ------------------------------------------------------------------------------- bombs


@pytest.mark.parametrize("codec,magic", CODEC_MAGIC)
def test_decompression_bomb_is_bounded(codec, magic):
    bomb = compress(codec, bytes(32 << 20), magic=magic)  # 32 MiB of zeros
    assert len(bomb) < (2 << 20)
    limit = 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(DecompressionBomb) as e:
            decompress(codec, bomb, magic=magic, max_size=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert e.value.code == ErrorCode.INVALID_RECORD
    # Output is counted chunk by chunk: never much more than the limit is held.
    assert peak < len(bomb) * 3 + limit + (1 << 20), peak


def test_snappy_bomb_is_refused_from_its_length_preamble():
    # A raw snappy block states its uncompressed length up front; a lie that big is not attempted.
    claim = bytes([0x80, 0x80, 0x80, 0x80, 0x0F]) + b"\x00"  # 4 GiB - 1 claimed
    with pytest.raises(DecompressionBomb):
        decompress(SNAPPY, claim, max_size=1 << 20)
    with pytest.raises(DecompressionBomb):
        decompress(SNAPPY, XERIAL_HEADER + struct.pack(">i", len(claim)) + claim, max_size=1 << 20)


def test_none_codec_is_bounded_too():
    assert decompress(NONE, b"abc", max_size=3) == b"abc"
    with pytest.raises(DecompressionBomb):
        decompress(NONE, b"abcd", max_size=3)
