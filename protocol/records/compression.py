"""Kafka's compression codecs, with a bound on what decompression may produce.

Theory of operation: a producer compresses the *records section* of a RecordBatch v2 (or the
inner message set of a v0/v1 wrapper) with one codec, named by the low three attribute bits
(org.apache.kafka.common.record.CompressionType). Every codec here writes the stream layout the
Java client writes, so that any consumer can read what the broker re-compresses, and reads every
layout real producers send:

* gzip (1): a gzip member (RFC 1952), header as java.util.zip.GZIPOutputStream writes it; several
  concatenated members are read, as GZIPInputStream does.
* snappy (2): Java wraps snappy in xerial's SnappyOutputStream: a 16-byte header
  (0x82 "SNAPPY" 0x00, int32 version 1, int32 compatible-version 1) then blocks of at most
  32 KiB of input, each written as an int32 length and a raw snappy block. Some clients
  (kafka-python with xerial off, old Go clients) send a bare raw snappy block; both are read.
* lz4 (3): the LZ4 frame format (KIP-57) with independent 64 KiB blocks, no content size and no
  checksums, as Kafka's Lz4BlockOutputStream writes it. KAFKA-3160: before KIP-57, Kafka computed
  the frame descriptor checksum (HC) over the magic number too. Magic 0 messages keep that broken
  checksum: it is written for magic 0 and ignored when reading magic 0; from magic 1 on, the
  checksum is the real one and is checked (Lz4Compression passes `magic == 0` to both streams).
* zstd (4, KIP-110, magic 2 only): one or more zstd frames, with or without a content size (the
  Java client streams, so its frames carry none).

Decompression never trusts a size the data claims: output is produced in chunks and stops with
`DecompressionBomb` (INVALID_RECORD, a non-retriable answer) once it would exceed `max_size`.
Data that is not a valid stream raises `CompressionError` (CORRUPT_MESSAGE). On produce Kafka answers
UNKNOWN_SERVER_ERROR instead (its codecs throw a plain KafkaException); minibroker_protocol.records.validate
translates.
"""

from __future__ import annotations

import functools
import struct
import zlib
from enum import IntEnum
from types import ModuleType

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.batch import InvalidBatch
from minibroker_protocol.records.xxhash32 import xxh32
from minibroker_protocol.types import DecodeError, read_uvarint


class Codec(IntEnum):
    """Compression codec ids, the low three bits of a batch's or message's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4  # KIP-110: RecordBatch v2 only

    @property
    def kafka_name(self) -> str:
        """The name Kafka prints (DumpLogSegments' `compresscodec`) and takes in compression.type."""
        return self.name if self is not Codec.NONE else "NONE"


NONE, GZIP, SNAPPY, LZ4, ZSTD = Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD


# The codec libraries are imported when a batch first needs one (a broker serving uncompressed
# batches never does): together they cost 5-7 ms of the start-up (issue 22).
@functools.cache
def _lz4() -> ModuleType:
    import lz4.frame

    return lz4.frame


@functools.cache
def _snappy() -> ModuleType:
    import snappy

    return snappy


@functools.cache
def _zstd() -> ModuleType:
    import zstandard

    return zstandard

# Output is produced (and counted) in chunks of this size, so a bomb costs at most
# max_size + _CHUNK bytes of memory before it is stopped.
_CHUNK = 64 * 1024
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024


class CompressionError(InvalidBatch):
    """Compressed data that cannot be decompressed (or compressed data the magic forbids)."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.CORRUPT_MESSAGE):
        super().__init__(message, code)


class DecompressionBomb(CompressionError):
    """Decompressed output would exceed the allowed size."""

    def __init__(self, max_size: int):
        super().__init__(f"decompressed data exceeds the limit of {max_size} bytes", ErrorCode.INVALID_RECORD)
        self.max_size = max_size


def codec_of(value: int) -> Codec:
    """The codec for an id, or CompressionError for ids Kafka does not define (5-7)."""
    try:
        return Codec(value)
    except ValueError:
        raise CompressionError(f"unknown compression codec id {value}") from None


def _check_magic(codec: Codec, magic: int) -> None:
    if codec is Codec.ZSTD and magic < 2:
        # Kafka: zstd needs message format v2 (KIP-110); a legacy wrapper cannot hold it.
        raise CompressionError("zstd compression requires magic 2", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)


# ------------------------------------------------------------------------------ compress


def compress(codec: int, data: bytes | bytearray | memoryview, *, magic: int = 2,
             level: int | None = None) -> bytes:
    """Compress `data` the way the Java client does for `codec` and message format `magic`."""
    c = codec_of(codec)
    _check_magic(c, magic)
    if c is Codec.NONE:
        return bytes(data)
    if c is Codec.GZIP:
        return _gzip_compress(data, 6 if level is None else level)
    if c is Codec.SNAPPY:
        return _xerial_compress(data)
    if c is Codec.LZ4:
        return _lz4_compress(data, magic, 0 if level is None else level)
    return _zstd().ZstdCompressor(level=3 if level is None else level).compress(bytes(data))


def decompress(codec: int, data: bytes | bytearray | memoryview, *, magic: int = 2,
               max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress `data`; at most `max_size` bytes of output, else DecompressionBomb."""
    c = codec_of(codec)
    _check_magic(c, magic)
    if c is Codec.NONE:
        if len(data) > max_size:
            raise DecompressionBomb(max_size)
        return bytes(data)
    try:
        if c is Codec.GZIP:
            return _gzip_decompress(data, max_size)
        if c is Codec.SNAPPY:
            return _snappy_decompress(data, max_size)
        if c is Codec.LZ4:
            return _lz4_decompress(data, magic, max_size)
        return _zstd_decompress(data, max_size)
    except CompressionError:
        raise
    except Exception as e:  # each library has its own error types; all mean "corrupt"
        raise CompressionError(f"{c.name.lower()} data is corrupt: {e}") from None


class _Sink:
    """Collects output and enforces the bound."""

    __slots__ = ("out", "max_size")

    def __init__(self, max_size: int):
        self.out = bytearray()
        self.max_size = max_size

    def add(self, chunk: bytes) -> None:
        if len(self.out) + len(chunk) > self.max_size:
            raise DecompressionBomb(self.max_size)
        self.out += chunk


# ---------------------------------------------------------------------------------- gzip

# ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS=255: what GZIPOutputStream writes (JDK 16+; older JDKs
# wrote OS=0). The header is not covered by any checksum, so readers do not care.
_GZIP_HEADER = bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])


def _gzip_compress(data, level: int) -> bytes:
    deflater = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return _GZIP_HEADER + body + trailer


def _gzip_decompress(data, max_size: int) -> bytes:
    sink = _Sink(max_size)
    remaining = bytes(data)
    if not remaining:
        raise CompressionError("empty gzip stream")
    while remaining:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        src = remaining
        while not inflater.eof:
            chunk = inflater.decompress(src, _CHUNK)
            sink.add(chunk)
            src = inflater.unconsumed_tail
            if not src and not chunk and not inflater.eof:
                raise CompressionError("gzip stream is truncated")
        remaining = inflater.unused_data  # another member follows (GZIPInputStream reads on)
    return bytes(sink.out)


# -------------------------------------------------------------------------------- snappy

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible with version 1
XERIAL_BLOCK_SIZE = 32 * 1024  # SnappyOutputStream's default block size
_I32 = struct.Struct(">i")


def _xerial_compress(data) -> bytes:
    mv = memoryview(data)
    out = bytearray(XERIAL_HEADER)
    for start in range(0, len(mv), XERIAL_BLOCK_SIZE):
        block = _snappy().compress(bytes(mv[start:start + XERIAL_BLOCK_SIZE]))
        out += _I32.pack(len(block))
        out += block
    return bytes(out)


def _snappy_block(block, sink: _Sink) -> None:
    """One raw snappy block; its uncompressed length (a uvarint preamble) is checked first."""
    try:
        length, _ = read_uvarint(block, 0)
    except DecodeError as e:
        raise CompressionError(f"snappy block has no valid length: {e}") from None
    if len(sink.out) + length > sink.max_size:
        raise DecompressionBomb(sink.max_size)
    sink.add(_snappy().decompress(bytes(block)))


def _snappy_decompress(data, max_size: int) -> bytes:
    sink = _Sink(max_size)
    mv = memoryview(data)
    if len(mv) < 16 or bytes(mv[:8]) != XERIAL_MAGIC:
        _snappy_block(mv, sink)
        return bytes(sink.out)
    pos = 16  # version and compatible version are ignored, as the Java reader accepts any
    n = len(mv)
    while pos < n:
        if n - pos >= 16 and bytes(mv[pos:pos + 8]) == XERIAL_MAGIC:
            pos += 16  # a concatenated xerial stream: SnappyInputStream skips the new header
            continue
        if n - pos < 4:
            raise CompressionError("truncated xerial snappy block length")
        size = _I32.unpack_from(mv, pos)[0]
        pos += 4
        if size < 0 or pos + size > n:
            raise CompressionError(f"xerial snappy block of {size} bytes runs past the end")
        _snappy_block(mv[pos:pos + size], sink)
        pos += size
    return bytes(sink.out)


# ----------------------------------------------------------------------------------- lz4

LZ4_FRAME_MAGIC = 0x184D2204
_LZ4_FLG_BLOCK_INDEPENDENT = 0x20
_LZ4_FLG_CONTENT_SIZE = 0x08
_LZ4_FLG_DICT_ID = 0x01


def lz4_header_checksum(frame: bytes | bytearray | memoryview, *, broken: bool) -> int:
    """The HC byte of an LZ4 frame descriptor: the second byte of XXH32 over FLG..end of the
    descriptor, or, KAFKA-3160's broken variant, over the magic number and the descriptor."""
    flg = frame[4]
    end = 6 + (8 if flg & _LZ4_FLG_CONTENT_SIZE else 0) + (4 if flg & _LZ4_FLG_DICT_ID else 0)
    return (xxh32(bytes(frame[0 if broken else 4:end])) >> 8) & 0xFF


def _lz4_compress(data, magic: int, level: int) -> bytes:
    frame = _lz4().compress(
        bytes(data), compression_level=level, block_size=_lz4().BLOCKSIZE_MAX64KB, block_linked=False,
        content_checksum=False, block_checksum=False, store_size=False,
    )
    if magic == 0:
        patched = bytearray(frame)
        patched[6] = lz4_header_checksum(patched, broken=True)
        return bytes(patched)
    return frame


def _lz4_decompress(data, magic: int, max_size: int) -> bytes:
    frame = bytes(data)
    if len(frame) < 7 or struct.unpack_from("<I", frame)[0] != LZ4_FRAME_MAGIC:
        raise CompressionError("not an LZ4 frame (bad magic number)")
    flg = frame[4]
    if not flg & _LZ4_FLG_BLOCK_INDEPENDENT:
        # Lz4BlockInputStream rejects linked blocks; a Java consumer could not read them either.
        raise CompressionError("LZ4 frames with dependent blocks are not supported")
    hc_pos = 6 + (8 if flg & _LZ4_FLG_CONTENT_SIZE else 0) + (4 if flg & _LZ4_FLG_DICT_ID else 0)
    if len(frame) <= hc_pos:
        raise CompressionError("truncated LZ4 frame descriptor")
    if magic == 0:
        # Magic 0 came with either checksum; Kafka ignores it. The lz4 library does not, so hand
        # it the correct one.
        good = lz4_header_checksum(frame, broken=False)
        if frame[hc_pos] != good:
            frame = frame[:hc_pos] + bytes([good]) + frame[hc_pos + 1:]
    sink = _Sink(max_size)
    d = _lz4().LZ4FrameDecompressor()
    chunk = d.decompress(frame, max_length=_CHUNK)
    while True:
        sink.add(chunk)
        if d.eof:
            break
        if d.needs_input:
            raise CompressionError("truncated LZ4 frame")
        chunk = d.decompress(b"", max_length=_CHUNK)
    # Bytes after the end mark are ignored, as Lz4BlockInputStream stops reading there.
    return bytes(sink.out)


# ---------------------------------------------------------------------------------- zstd

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
_ZSTD_SKIPPABLE = 0x184D2A50


def _zstd_check_frames(data: memoryview) -> None:
    """Walk frame and block headers (RFC 8878) to be sure every frame is complete: the streaming
    decoder stops quietly at a truncated frame, and truncation must be reported as corruption."""
    n = len(data)
    pos = 0
    if n == 0:
        raise CompressionError("empty zstd stream")
    while pos < n:
        if n - pos < 4:
            raise CompressionError("truncated zstd frame magic")
        magic = struct.unpack_from("<I", data, pos)[0]
        if magic & _ZSTD_SKIPPABLE_MASK == _ZSTD_SKIPPABLE:
            if n - pos < 8:
                raise CompressionError("truncated zstd skippable frame")
            pos += 8 + struct.unpack_from("<I", data, pos + 4)[0]
            continue
        if magic != _ZSTD_MAGIC:
            raise CompressionError("not a zstd frame (bad magic number)")
        pos += 4
        if pos >= n:
            raise CompressionError("truncated zstd frame header")
        fhd = data[pos]
        single_segment = (fhd >> 5) & 1
        fcs_size = (1 if single_segment else 0, 2, 4, 8)[fhd >> 6]
        pos += 1 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3] + fcs_size
        while True:
            if pos + 3 > n:
                raise CompressionError("truncated zstd block header")
            header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            pos += 3
            block_type = (header >> 1) & 3
            if block_type == 3:
                raise CompressionError("reserved zstd block type")
            pos += 1 if block_type == 1 else header >> 3
            if header & 1:
                break
        if fhd & 0x04:
            pos += 4  # content checksum
        if pos > n:
            raise CompressionError("truncated zstd frame")


def _zstd_decompress(data, max_size: int) -> bytes:
    mv = memoryview(data)
    _zstd_check_frames(mv)
    sink = _Sink(max_size)
    reader = _zstd().ZstdDecompressor().stream_reader(bytes(mv), read_across_frames=True)
    with reader:
        while True:
            chunk = reader.read(_CHUNK)
            if not chunk:
                break
            sink.add(chunk)
    return bytes(sink.out)
