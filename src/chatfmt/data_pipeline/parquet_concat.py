"""Concatenate complete Parquet files byte-wise, without decoding or re-encoding any page.

Each part's column-chunk bytes are copied verbatim into the output; only the footers
(Thrift Compact Protocol ``FileMetaData``) are decoded, their absolute offsets shifted,
and one merged footer is written at the end. Typical use: worker processes write small
Parquet files in memory, the parent streams them into one output file::

    with ParquetConcatWriter("out.parquet", schema) as writer:
        for part in parts:  # bytes of complete Parquet files with the same schema
            writer.append(part)
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Union

from chatfmt.errors import ChatFmtError

__all__ = [
    "ParquetConcatError",
    "ParquetConcatWriter",
    "RawStruct",
    "ThriftDecodeError",
    "ThriftField",
    "ThriftList",
    "ThriftMap",
    "ThriftStruct",
    "ThriftValue",
    "concat_parquet_bytes",
    "decode_struct",
    "encode_struct",
    "parse_footer",
]

MAGIC = b"PAR1"
MAGIC_ENCRYPTED = b"PARE"


class ParquetConcatError(ChatFmtError, ValueError):
    """A part that cannot be concatenated (malformed, encrypted, other schema, ...).

    ``part`` is the 0-based index of the offending :meth:`ParquetConcatWriter.append`
    call, or ``None`` when the problem is not tied to one part.
    """

    def __init__(self, message: str, *, part: int | None = None) -> None:
        self.part = part
        self.reason = message
        super().__init__(f"part {part}: {message}" if part is not None else message)


class ThriftDecodeError(ParquetConcatError):
    """Bytes that are not a well-formed Thrift Compact Protocol struct."""


# --------------------------------------------------------------------------------------
# Thrift Compact Protocol
# --------------------------------------------------------------------------------------

# Compact-protocol type ids. A bool *field* stores its value in the type nibble
# (1 true, 2 false); ThriftField.type is normalised to CT_BOOL for both.
CT_STOP = 0
CT_BOOL = 1
CT_BOOL_FALSE = 2
CT_I8 = 3
CT_I16 = 4
CT_I32 = 5
CT_I64 = 6
CT_DOUBLE = 7
CT_BINARY = 8
CT_LIST = 9
CT_SET = 10
CT_MAP = 11
CT_STRUCT = 12
CT_UUID = 13

_INT_BITS = {CT_I8: 8, CT_I16: 16, CT_I32: 32, CT_I64: 64}
_MAX_DEPTH = 64
_DOUBLE = struct.Struct("<d")

ThriftValue = Union[bool, int, float, bytes, "ThriftList", "ThriftMap", "ThriftStruct", "RawStruct"]


@dataclass
class ThriftField:
    """One struct field: id, compact type (``CT_*``; bools use ``CT_BOOL``) and value."""

    id: int
    type: int
    value: ThriftValue


@dataclass
class ThriftList:
    """A list (or set, ``is_set=True``) with its declared element type."""

    elem_type: int
    items: list[ThriftValue] = field(default_factory=list)
    is_set: bool = False


@dataclass
class ThriftMap:
    """A map with its declared key and value types, entries in wire order."""

    key_type: int
    value_type: int
    items: list[tuple[ThriftValue, ThriftValue]] = field(default_factory=list)


@dataclass(frozen=True)
class RawStruct:
    """An already encoded struct (including its STOP byte), written as-is."""

    data: bytes


@dataclass
class ThriftStruct:
    """A decoded struct: every field, in wire order, unknown ones included."""

    fields: list[ThriftField] = field(default_factory=list)

    def get(self, fid: int) -> ThriftValue | None:
        """Value of field ``fid``, or ``None`` when absent."""
        for f in self.fields:
            if f.id == fid:
                return f.value
        return None

    def has(self, fid: int) -> bool:
        """Whether field ``fid`` is present."""
        return any(f.id == fid for f in self.fields)

    def set(self, fid: int, ctype: int, value: ThriftValue) -> None:
        """Replace field ``fid`` in place, or insert it before the first higher id."""
        for i, f in enumerate(self.fields):
            if f.id == fid:
                self.fields[i] = ThriftField(fid, ctype, value)
                return
            if f.id > fid:
                self.fields.insert(i, ThriftField(fid, ctype, value))
                return
        self.fields.append(ThriftField(fid, ctype, value))

    def get_int(self, fid: int) -> int | None:
        """Integer value of field ``fid`` (``None`` when absent); raises on another type."""
        v = self.get(fid)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise ThriftDecodeError(f"field {fid} is not an integer")
        return v

    def get_struct(self, fid: int) -> ThriftStruct | None:
        """Struct value of field ``fid`` (``None`` when absent); raises on another type."""
        v = self.get(fid)
        if v is None:
            return None
        if not isinstance(v, ThriftStruct):
            raise ThriftDecodeError(f"field {fid} is not a struct")
        return v

    def get_struct_list(self, fid: int) -> list[ThriftStruct] | None:
        """List-of-structs value of field ``fid`` (``None`` when absent)."""
        v = self.get(fid)
        if v is None:
            return None
        if not isinstance(v, ThriftList) or not all(isinstance(x, ThriftStruct) for x in v.items):
            raise ThriftDecodeError(f"field {fid} is not a list of structs")
        return [x for x in v.items if isinstance(x, ThriftStruct)]


class _Decoder:
    """Cursor over a bytes buffer reading compact-protocol values."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def _fail(self, what: str) -> ThriftDecodeError:
        return ThriftDecodeError(f"malformed Thrift at byte {self.pos}: {what}")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self._fail("unexpected end of data")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        result = shift = 0
        data, pos, end = self.data, self.pos, len(self.data)
        while True:
            if pos >= end:
                self.pos = pos
                raise self._fail("unexpected end of data in varint")
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                self.pos = pos
                return result
            shift += 7
            if shift >= 70:
                self.pos = pos
                raise self._fail("varint longer than 10 bytes")

    def zigzag(self, bits: int) -> int:
        z = self.varint()
        n = (z >> 1) ^ -(z & 1)
        if not -(1 << (bits - 1)) <= n < (1 << (bits - 1)):
            raise self._fail(f"integer {n} out of range for i{bits}")
        return n

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self._fail(f"length {n} runs past the end of data")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def size(self, n: int, min_bytes: int) -> int:
        if n * min_bytes > len(self.data) - self.pos:
            raise self._fail(f"collection size {n} exceeds the remaining data")
        return n

    def value(self, ctype: int, depth: int) -> ThriftValue:
        if ctype == CT_STRUCT:
            return self.struct(depth + 1)
        if ctype in (CT_I16, CT_I32, CT_I64):
            return self.zigzag(_INT_BITS[ctype])
        if ctype == CT_BINARY:
            return self.take(self.varint())
        if ctype in (CT_BOOL, CT_BOOL_FALSE):  # element of a list/set/map: one byte
            return self.byte() == 1
        if ctype == CT_I8:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ctype == CT_DOUBLE:
            return float(_DOUBLE.unpack(self.take(8))[0])
        if ctype in (CT_LIST, CT_SET):
            if depth >= _MAX_DEPTH:
                raise self._fail("nesting too deep")
            header = self.byte()
            n, elem = header >> 4, header & 0x0F
            if n == 15:
                n = self.varint()
            self.size(n, 1)
            return ThriftList(
                elem, [self.value(elem, depth + 1) for _ in range(n)], ctype == CT_SET
            )
        if ctype == CT_MAP:
            if depth >= _MAX_DEPTH:
                raise self._fail("nesting too deep")
            n = self.size(self.varint(), 2)
            if n == 0:
                return ThriftMap(0, 0, [])
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            items = [(self.value(kt, depth + 1), self.value(vt, depth + 1)) for _ in range(n)]
            return ThriftMap(kt, vt, items)
        if ctype == CT_UUID:
            return self.take(16)
        raise self._fail(f"unknown compact type {ctype}")

    def struct(self, depth: int = 0) -> ThriftStruct:
        if depth > _MAX_DEPTH:
            raise self._fail("nesting too deep")
        fields: list[ThriftField] = []
        last = 0
        while True:
            header = self.byte()
            if header == CT_STOP:
                return ThriftStruct(fields)
            ctype, delta = header & 0x0F, header >> 4
            fid = last + delta if delta else self.zigzag(16)
            if ctype in (CT_BOOL, CT_BOOL_FALSE):
                fields.append(ThriftField(fid, CT_BOOL, ctype == CT_BOOL))
            else:
                fields.append(ThriftField(fid, ctype, self.value(ctype, depth)))
            last = fid


def decode_struct(data: bytes | bytearray | memoryview, pos: int = 0) -> tuple[ThriftStruct, int]:
    """Decode one compact-protocol struct starting at ``pos``; return it and the end offset."""
    dec = _Decoder(bytes(data), pos)
    return dec.struct(), dec.pos


def _varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int, bits: int) -> None:
    if not -(1 << (bits - 1)) <= n < (1 << (bits - 1)):
        raise ParquetConcatError(f"integer {n} out of range for i{bits}")
    _varint(out, n << 1 if n >= 0 else ((-n) << 1) - 1)


def _encode_value(out: bytearray, ctype: int, v: ThriftValue) -> None:
    if ctype == CT_STRUCT:
        if isinstance(v, RawStruct):
            out += v.data
        elif isinstance(v, ThriftStruct):
            _encode_struct(out, v)
        else:
            raise ParquetConcatError(f"struct expected, got {type(v).__name__}")
    elif ctype in (CT_I16, CT_I32, CT_I64) and isinstance(v, int) and not isinstance(v, bool):
        _zigzag(out, v, _INT_BITS[ctype])
    elif ctype in (CT_BINARY, CT_UUID) and isinstance(v, bytes):
        if ctype == CT_BINARY:
            _varint(out, len(v))
        elif len(v) != 16:
            raise ParquetConcatError("uuid must be 16 bytes")
        out += v
    elif ctype in (CT_BOOL, CT_BOOL_FALSE) and isinstance(v, bool):
        out.append(CT_BOOL if v else CT_BOOL_FALSE)
    elif ctype == CT_I8 and isinstance(v, int) and not isinstance(v, bool):
        if not -128 <= v <= 127:
            raise ParquetConcatError(f"integer {v} out of range for i8")
        out.append(v & 0xFF)
    elif ctype == CT_DOUBLE and isinstance(v, (int, float)) and not isinstance(v, bool):
        out += _DOUBLE.pack(v)
    elif ctype in (CT_LIST, CT_SET) and isinstance(v, ThriftList):
        n = len(v.items)
        if n < 15:
            out.append((n << 4) | v.elem_type)
        else:
            out.append(0xF0 | v.elem_type)
            _varint(out, n)
        for item in v.items:
            _encode_value(out, v.elem_type, item)
    elif ctype == CT_MAP and isinstance(v, ThriftMap):
        _varint(out, len(v.items))
        if v.items:
            out.append((v.key_type << 4) | v.value_type)
            for key, val in v.items:
                _encode_value(out, v.key_type, key)
                _encode_value(out, v.value_type, val)
    else:
        raise ParquetConcatError(f"cannot encode {type(v).__name__} as compact type {ctype}")


def _encode_struct(out: bytearray, s: ThriftStruct) -> None:
    last = 0
    for f in s.fields:
        ctype = f.type
        if ctype in (CT_BOOL, CT_BOOL_FALSE):
            if not isinstance(f.value, bool):
                raise ParquetConcatError(f"field {f.id}: bool expected")
            ctype = CT_BOOL if f.value else CT_BOOL_FALSE
        delta = f.id - last
        if 0 < delta <= 15:
            out.append((delta << 4) | ctype)
        else:
            out.append(ctype)
            _zigzag(out, f.id, 16)
        if ctype not in (CT_BOOL, CT_BOOL_FALSE):
            _encode_value(out, ctype, f.value)
        last = f.id
    out.append(CT_STOP)


def encode_struct(s: ThriftStruct) -> bytes:
    """Encode a struct with the compact protocol (minimal varints, short headers)."""
    out = bytearray()
    _encode_struct(out, s)
    return bytes(out)


# --------------------------------------------------------------------------------------
# Parquet footer
# --------------------------------------------------------------------------------------

# FileMetaData
_FMD_SCHEMA, _FMD_NUM_ROWS, _FMD_ROW_GROUPS, _FMD_ENCRYPTION = 2, 3, 4, 8
# RowGroup
_RG_COLUMNS, _RG_NUM_ROWS, _RG_FILE_OFFSET, _RG_ORDINAL = 1, 3, 5, 7
# ColumnChunk
_CC_FILE_PATH, _CC_FILE_OFFSET, _CC_META = 1, 2, 3
_CC_OFFSET_INDEX, _CC_OFFSET_INDEX_LEN = 4, 5
_CC_COLUMN_INDEX, _CC_COLUMN_INDEX_LEN = 6, 7
_CC_CRYPTO, _CC_ENCRYPTED_META = 8, 9
# ColumnMetaData
_CMD_TOTAL_COMPRESSED = 7
_CMD_DATA_PAGE, _CMD_INDEX_PAGE, _CMD_DICT_PAGE, _CMD_BLOOM = 9, 10, 11, 14
_CMD_BLOOM_LEN = 15
# OffsetIndex.page_locations -> PageLocation.offset
_OI_PAGE_LOCATIONS, _PL_OFFSET = 1, 1


def _footer_bounds(data: memoryview) -> tuple[int, int]:
    """``(start, end)`` of the footer of a complete Parquet file; validates the magic bytes."""
    n = len(data)
    if n < 12:
        raise ParquetConcatError(f"{n} bytes is too short for a Parquet file")
    head, tail = bytes(data[:4]), bytes(data[n - 4 :])
    if MAGIC_ENCRYPTED in (head, tail):
        raise ParquetConcatError("encrypted Parquet files (PARE footer) are not supported")
    if head != MAGIC:
        raise ParquetConcatError(f"bad magic bytes at the start: {head!r} (expected b'PAR1')")
    if tail != MAGIC:
        raise ParquetConcatError(
            f"bad magic bytes at the end: {tail!r} (expected b'PAR1'; truncated file?)"
        )
    length = int.from_bytes(data[n - 8 : n - 4], "little")
    start = n - 8 - length
    if length == 0 or start < 4:
        raise ParquetConcatError(f"footer length {length} does not fit a {n}-byte file")
    return start, n - 8


def parse_footer(data: bytes | bytearray | memoryview) -> ThriftStruct:
    """Decode the ``FileMetaData`` footer of one complete (unencrypted) Parquet file."""
    mv = memoryview(data).cast("B")
    start, end = _footer_bounds(mv)
    meta, pos = decode_struct(mv[start:end])
    if meta.has(_FMD_ENCRYPTION):
        raise ParquetConcatError("encrypted Parquet files are not supported")
    if pos != end - start:
        raise ThriftDecodeError(
            f"footer has {end - start - pos} trailing bytes after FileMetaData (corrupt footer?)"
        )
    return meta


def _schema_paths(elements: list[ThriftValue]) -> list[str]:
    """Dotted path of every SchemaElement (depth-first list, root first)."""
    paths: list[str] = []
    stack: list[tuple[str, int]] = []  # (parent path, children still expected)
    for i, el in enumerate(elements):
        name = el.get(4) if isinstance(el, ThriftStruct) else None
        label = name.decode("utf-8", "replace") if isinstance(name, bytes) else f"#{i}"
        while stack and stack[-1][1] == 0:
            stack.pop()
        parent = ""
        if stack:
            parent, left = stack[-1]
            stack[-1] = (parent, left - 1)
        path = f"{parent}.{label}" if parent else label
        paths.append(path)
        children = el.get_int(5) if isinstance(el, ThriftStruct) else None
        if children:
            stack.append(("" if i == 0 else path, children))
    return paths


def _schema_difference(first: ThriftValue | None, other: ThriftValue | None) -> str:
    """Human-readable first difference between two FileMetaData.schema values."""
    a = first.items if isinstance(first, ThriftList) else []
    b = other.items if isinstance(other, ThriftList) else []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            path = _schema_paths(b[: i + 1])[i]
            return f"schema differs from part 0's at element {i} ({path!r})"
    return f"schema has {len(b)} elements, part 0's has {len(a)}"


class _Shifter:
    """Validates and shifts the absolute offsets of one part's row groups."""

    def __init__(self, data: memoryview, data_end: int, delta: int, out_base: int) -> None:
        self.data = data
        self.data_end = data_end  # footer start == end of the copied region
        self.delta = delta
        self.out_base = out_base  # output position where the part's extra bytes start
        self.extra = bytearray()  # rewritten offset indexes, written after the region

    def shift(
        self, s: ThriftStruct, fid: int, what: str, *, required: bool = False, loose: bool = False
    ) -> None:
        """Add the output shift to offset field ``fid`` after checking it lies in the region.

        ``loose`` accepts an offset equal to the region end (deprecated ``file_offset``
        fields, which some writers point just past the column chunk).
        """
        v = s.get_int(fid)
        if v is None or (v == 0 and not required):
            if required:
                raise ParquetConcatError(f"{what} is missing")
            return  # absent, or 0 = "not set" as some writers record it
        if not 4 <= v < self.data_end + int(loose):
            raise ParquetConcatError(
                f"{what} {v} lies outside the data region [4, {self.data_end})"
            )
        s.set(fid, CT_I64, v + self.delta)

    def range(self, start: int | None, length: int | None, what: str) -> tuple[int, int]:
        if start is None or length is None or length < 0:
            raise ParquetConcatError(f"{what} has no valid offset/length")
        if not 4 <= start <= start + length <= self.data_end:
            raise ParquetConcatError(
                f"{what} [{start}, {start + length}) lies outside the data region"
            )
        return start, length

    def column(self, cc: ThriftStruct, where: str) -> None:
        if cc.has(_CC_CRYPTO) or cc.has(_CC_ENCRYPTED_META):
            raise ParquetConcatError(f"{where}: encrypted columns are not supported")
        if cc.has(_CC_FILE_PATH):
            raise ParquetConcatError(f"{where}: column chunks in external files are not supported")
        md = cc.get_struct(_CC_META)
        if md is None:
            raise ParquetConcatError(f"{where}: ColumnMetaData is missing")
        data_page = md.get_int(_CMD_DATA_PAGE)
        dict_page = md.get_int(_CMD_DICT_PAGE)
        start = dict_page if dict_page else data_page
        self.range(start, md.get_int(_CMD_TOTAL_COMPRESSED), f"{where}: column chunk")
        self.shift(md, _CMD_DATA_PAGE, f"{where}: data_page_offset", required=True)
        self.shift(md, _CMD_INDEX_PAGE, f"{where}: index_page_offset")
        self.shift(md, _CMD_DICT_PAGE, f"{where}: dictionary_page_offset")
        if md.get_int(_CMD_BLOOM):
            bloom_len = md.get_int(_CMD_BLOOM_LEN)
            if bloom_len is not None:
                self.range(md.get_int(_CMD_BLOOM), bloom_len, f"{where}: bloom filter")
            self.shift(md, _CMD_BLOOM, f"{where}: bloom_filter_offset")
        self.shift(cc, _CC_FILE_OFFSET, f"{where}: file_offset", loose=True)
        if cc.get_int(_CC_COLUMN_INDEX):
            self.range(
                cc.get_int(_CC_COLUMN_INDEX),
                cc.get_int(_CC_COLUMN_INDEX_LEN),
                f"{where}: column index",
            )
            self.shift(cc, _CC_COLUMN_INDEX, f"{where}: column_index_offset")
        if cc.get_int(_CC_OFFSET_INDEX):
            self.offset_index(cc, where)

    def offset_index(self, cc: ThriftStruct, where: str) -> None:
        """Re-encode the OffsetIndex with shifted page offsets and point ``cc`` at the copy.

        Its PageLocation offsets are absolute, and shifting can change the encoded length,
        so the rewritten index is appended after the part's data (the original stays as
        unreferenced bytes).
        """
        start, length = self.range(
            cc.get_int(_CC_OFFSET_INDEX), cc.get_int(_CC_OFFSET_INDEX_LEN), f"{where}: offset index"
        )
        index, end = decode_struct(self.data[start : start + length])
        if end != length:
            raise ThriftDecodeError(f"{where}: offset index length {length} != decoded {end}")
        for i, loc in enumerate(index.get_struct_list(_OI_PAGE_LOCATIONS) or []):
            self.shift(loc, _PL_OFFSET, f"{where}: page location {i}", required=True)
        encoded = encode_struct(index)
        cc.set(_CC_OFFSET_INDEX, CT_I64, self.out_base + len(self.extra))
        cc.set(_CC_OFFSET_INDEX_LEN, CT_I32, len(encoded))
        self.extra += encoded


class ParquetConcatWriter:
    """Stream complete Parquet files (as bytes) into one Parquet file without re-encoding.

    Every appended part must have the same Parquet schema as the first. The merged
    footer is the first part's ``FileMetaData`` with ``num_rows`` summed and all row
    groups in append order (ordinals renumbered); key/value metadata (including
    ``ARROW:schema``), ``created_by`` and column orders come from the first part.
    ``schema`` (a ``pyarrow.Schema``) and ``write_options`` (``pq.write_table``
    keywords) are only used to write an empty file when no part was appended.
    Use as a context manager: on an exception the incomplete output file is removed.
    """

    def __init__(
        self, path: str | os.PathLike[str], schema: Any = None, **write_options: Any
    ) -> None:
        self.path = Path(path)
        self._schema = schema
        self._write_options = write_options
        self._fh: BinaryIO | None = open(self.path, "wb")  # noqa: SIM115 - closed in close()/abort()
        self._pos = 0
        self._write(MAGIC)
        self._meta: ThriftStruct | None = None
        self._row_groups: list[RawStruct] = []
        self._num_rows = 0
        self._parts = 0

    @property
    def num_rows(self) -> int:
        """Rows appended so far."""
        return self._num_rows

    @property
    def num_row_groups(self) -> int:
        """Row groups appended so far."""
        return len(self._row_groups)

    @property
    def num_parts(self) -> int:
        """Number of :meth:`append` calls so far (including rejected parts)."""
        return self._parts

    @property
    def closed(self) -> bool:
        """Whether the output file is closed (finished or aborted)."""
        return self._fh is None

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        if self._fh is None:
            raise ParquetConcatError("writer is closed")
        try:
            self._fh.write(data)
        except BaseException:
            self.abort()
            raise
        self._pos += len(data)

    def append(self, data: bytes | bytearray | memoryview) -> None:
        """Append one complete Parquet file's bytes (anything supporting the buffer protocol).

        Raises :class:`ParquetConcatError` naming the part index when the part is
        malformed, encrypted, uses external column files, or its schema differs from the
        first part's; a rejected part leaves the writer unchanged.
        """
        index = self._parts
        self._parts += 1
        if self._fh is None:
            raise ParquetConcatError("writer is closed", part=index)
        try:
            self._append(memoryview(data).cast("B"))
        except ParquetConcatError as exc:
            if exc.part is not None:
                raise
            raise type(exc)(exc.reason, part=index) from exc

    def _append(self, mv: memoryview) -> None:
        meta = parse_footer(mv)
        footer_start = len(mv) - 8 - int.from_bytes(mv[-8:-4], "little")
        schema = meta.get(_FMD_SCHEMA)
        if not isinstance(schema, ThriftList) or not schema.items:
            raise ParquetConcatError("FileMetaData.schema is missing or not a list")
        if self._meta is not None and schema != self._meta.get(_FMD_SCHEMA):
            raise ParquetConcatError(_schema_difference(self._meta.get(_FMD_SCHEMA), schema))
        num_rows = meta.get_int(_FMD_NUM_ROWS)
        row_groups = meta.get_struct_list(_FMD_ROW_GROUPS)
        if num_rows is None or row_groups is None:
            raise ParquetConcatError("FileMetaData lacks num_rows or row_groups")
        if sum(rg.get_int(_RG_NUM_ROWS) or 0 for rg in row_groups) != num_rows:
            raise ParquetConcatError(f"row groups do not add up to num_rows={num_rows}")

        region_len = footer_start - 4
        shifter = _Shifter(mv, footer_start, self._pos - 4, self._pos + region_len)
        encoded: list[RawStruct] = []
        if num_rows > 0:
            for i, rg in enumerate(row_groups):
                where = f"row group {i}"
                for j, cc in enumerate(rg.get_struct_list(_RG_COLUMNS) or []):
                    shifter.column(cc, f"{where} column {j}")
                shifter.shift(rg, _RG_FILE_OFFSET, f"{where}: file_offset", loose=True)
                if rg.has(_RG_ORDINAL):
                    ordinal = len(self._row_groups) + len(encoded)
                    if ordinal >= 1 << 15:
                        raise ParquetConcatError("more than 32767 row groups (i16 ordinal)")
                    rg.set(_RG_ORDINAL, CT_I16, ordinal)
                encoded.append(RawStruct(encode_struct(rg)))

        if self._meta is None:
            meta.set(_FMD_ROW_GROUPS, CT_LIST, ThriftList(CT_STRUCT, []))
            self._meta = meta
        if encoded:
            self._write(mv[4:footer_start])
            self._write(shifter.extra)
            self._row_groups.extend(encoded)
            self._num_rows += num_rows

    def close(self) -> None:
        """Write the merged footer and close the file (idempotent).

        With no part appended, writes an empty table of ``schema`` (raises
        :class:`ParquetConcatError` and removes the file when ``schema`` is ``None``).
        """
        if self._fh is None:
            return
        if self._meta is None:
            if self._schema is None:
                self.abort()
                raise ParquetConcatError(
                    "no part was appended and no schema was given for an empty file"
                )
            self._append(memoryview(self._empty_part()))
        assert self._meta is not None
        meta = ThriftStruct(list(self._meta.fields))
        meta.set(_FMD_NUM_ROWS, CT_I64, self._num_rows)
        meta.set(_FMD_ROW_GROUPS, CT_LIST, ThriftList(CT_STRUCT, list(self._row_groups)))
        footer = encode_struct(meta)
        self._write(footer)
        self._write(len(footer).to_bytes(4, "little") + MAGIC)
        fh, self._fh = self._fh, None
        fh.close()

    def _empty_part(self) -> bytes:
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_table(self._schema.empty_table(), sink, **self._write_options)
        return bytes(sink.getvalue())

    def abort(self) -> None:
        """Close without a footer and remove the incomplete output file (idempotent)."""
        if self._fh is None:
            return
        fh, self._fh = self._fh, None
        try:
            fh.close()
        finally:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> ParquetConcatWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def concat_parquet_bytes(
    parts: Iterable[bytes | bytearray | memoryview],
    path: str | os.PathLike[str],
    schema: Any = None,
    **write_options: Any,
) -> int:
    """Concatenate complete Parquet files (bytes) into ``path``; return the row count.

    ``schema``/``write_options`` are only used when ``parts`` is empty (see
    :class:`ParquetConcatWriter`).
    """
    with ParquetConcatWriter(path, schema, **write_options) as writer:
        for part in parts:
            writer.append(part)
    return writer.num_rows
