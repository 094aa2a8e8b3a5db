"""Byte-level Parquet concatenation: Thrift codec, merged files read back by pyarrow, errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

from chatfmt.data_pipeline.parquet_concat import (  # noqa: E402
    CT_BINARY,
    CT_BOOL,
    CT_DOUBLE,
    CT_I8,
    CT_I16,
    CT_I32,
    CT_I64,
    CT_LIST,
    CT_MAP,
    CT_SET,
    CT_STRUCT,
    CT_UUID,
    ParquetConcatError,
    ParquetConcatWriter,
    ThriftDecodeError,
    ThriftField,
    ThriftList,
    ThriftMap,
    ThriftStruct,
    ThriftValue,
    concat_parquet_bytes,
    decode_struct,
    encode_struct,
    parse_footer,
)
from chatfmt.data_pipeline.pipeline import OUTPUT_SCHEMA, WRITE_OPTIONS  # noqa: E402
from chatfmt.errors import ChatFmtError  # noqa: E402

SCHEMA = OUTPUT_SCHEMA()  # the dataset pipeline's output, which these parts stand for
PIPELINE_OPTS: dict[str, Any] = dict(WRITE_OPTIONS)


def make_table(n: int, start: int = 0, seed: int = 0, max_len: int = 12) -> Any:
    """A pipeline-like table with rows ``start..start+n-1`` and random token lists."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, max_len + 1, size=n)
    ids = [rng.integers(0, 50_000, size=k, dtype=np.int32) for k in lens]
    labels = [np.where(rng.random(k) < 0.5, -100, x).astype(np.int32) for k, x in zip(lens, ids)]
    return pa.table(
        {
            "row": pa.array(np.arange(start, start + n, dtype=np.int64)),
            "input_ids": pa.array([x.tolist() for x in ids], pa.list_(pa.int32())),
            "labels": pa.array([x.tolist() for x in labels], pa.list_(pa.int32())),
            "attention_mask": pa.array([[1] * int(k) for k in lens], pa.list_(pa.int8())),
            "num_tokens": pa.array(lens.astype(np.int32)),
            "num_trained": pa.array([int((x != -100).sum()) for x in labels], pa.int32()),
            "truncated": pa.array(rng.random(n) < 0.2),
        },
        schema=SCHEMA,
    )


def to_bytes(table: Any, **options: Any) -> bytes:
    """One complete Parquet file in memory, as a worker would produce it."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **options)
    return bytes(sink.getvalue().to_pybytes())


def make_parts(sizes: list[int], **options: Any) -> tuple[list[bytes], list[Any]]:
    """Parts with consecutive ``row`` values; returns (bytes, tables)."""
    tables, start = [], 0
    for i, n in enumerate(sizes):
        tables.append(make_table(n, start, seed=i))
        start += n
    return [to_bytes(t, **options) for t in tables], tables


def footer_span(data: bytes) -> tuple[int, int]:
    """(start, end) of a Parquet file's footer."""
    length = int.from_bytes(data[-8:-4], "little")
    return len(data) - 8 - length, len(data) - 8


def with_footer(data: bytes, edit: Callable[[ThriftStruct], None]) -> bytes:
    """The file with its FileMetaData decoded, edited in place and re-encoded."""
    start, _ = footer_span(data)
    meta = parse_footer(data)
    edit(meta)
    footer = encode_struct(meta)
    return data[:start] + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def row_groups(meta: ThriftStruct) -> list[ThriftStruct]:
    return meta.get_struct_list(4) or []


def columns(rg: ThriftStruct) -> list[ThriftStruct]:
    return rg.get_struct_list(1) or []


def check_merged(path: Path, tables: list[Any], parts: list[bytes]) -> None:
    """Everything a reader of the merged file relies on."""
    expected = pa.concat_tables(tables)
    assert pq.read_table(path).equals(expected)
    pf = pq.ParquetFile(path)
    assert pf.metadata.num_rows == expected.num_rows
    sources = [pq.ParquetFile(pa.BufferReader(p)) for p in parts]
    want_rgs = sum(s.metadata.num_row_groups for s in sources if s.metadata.num_rows)
    assert pf.metadata.num_row_groups == want_rgs
    assert pf.schema_arrow == SCHEMA
    got = [pf.read_row_group(i) for i in range(pf.metadata.num_row_groups)]
    want = [
        s.read_row_group(i)
        for s in sources
        if s.metadata.num_rows
        for i in range(s.metadata.num_row_groups)
    ]
    assert len(got) == len(want)
    assert all(g.equals(w) for g, w in zip(got, want))
    batches = list(pf.iter_batches(batch_size=7))
    assert pa.Table.from_batches(batches, schema=SCHEMA).equals(expected)


# ----------------------------------------------------------------------------- Thrift codec


FOOTER_OPTIONS: list[dict[str, Any]] = [
    PIPELINE_OPTS,
    {"compression": "snappy", "use_dictionary": True, "row_group_size": 9},
    {"compression": "none", "write_statistics": False},
    {
        "compression": "zstd",
        "write_page_index": True,
        "write_page_checksum": True,
        "bloom_filter_options": {"row": True},
        "max_rows_per_page": 5,
        "row_group_size": 11,
    },
    {"data_page_version": "2.0", "sorting_columns": [pq.SortingColumn(0)]},
    {"version": "1.0", "store_schema": False},
]


@pytest.mark.parametrize("options", FOOTER_OPTIONS)
def test_real_footer_roundtrips_byte_identically(options: dict[str, Any]) -> None:
    data = to_bytes(make_table(30, seed=3), **options)
    start, end = footer_span(data)
    meta, pos = decode_struct(data[start:end])
    assert pos == end - start
    assert meta.get_int(3) == 30
    assert encode_struct(meta) == data[start:end]


def test_codec_covers_every_compact_type() -> None:
    inner = ThriftStruct([ThriftField(1, CT_I32, -7), ThriftField(40, CT_BOOL, False)])
    s = ThriftStruct(
        [
            ThriftField(1, CT_BOOL, True),
            ThriftField(2, CT_BOOL, False),
            ThriftField(3, CT_I8, -128),
            ThriftField(4, CT_I16, -32768),
            ThriftField(5, CT_I32, 2**31 - 1),
            ThriftField(6, CT_I64, -(2**63)),
            ThriftField(7, CT_DOUBLE, -1.5e300),
            ThriftField(8, CT_BINARY, b"\x00\xffbytes"),
            ThriftField(9, CT_LIST, ThriftList(CT_I64, list(range(-10, 10)))),  # long header
            ThriftField(10, CT_SET, ThriftList(CT_BINARY, [b"a", b"b"], is_set=True)),
            ThriftField(11, CT_MAP, ThriftMap(CT_BINARY, CT_STRUCT, [(b"k", inner)])),
            ThriftField(12, CT_MAP, ThriftMap(0, 0, [])),
            ThriftField(13, CT_LIST, ThriftList(CT_BOOL, [True, False, True])),
            ThriftField(14, CT_UUID, bytes(range(16))),
            ThriftField(300, CT_STRUCT, inner),  # id jump > 15: long field header
            ThriftField(5, CT_I16, 1),  # decreasing id: long field header
            ThriftField(6, CT_LIST, ThriftList(CT_STRUCT, [ThriftStruct(), inner])),
        ]
    )
    data = encode_struct(s)
    decoded, end = decode_struct(data + b"trailing")
    assert end == len(data)
    assert decoded == s
    assert encode_struct(decoded) == data


def test_codec_matches_hand_encoded_bytes() -> None:
    # field 1 i32 = -1 (zigzag 1), field 3 binary "hi", field 20 bool true (long header), STOP
    data = bytes([0x15, 0x01, 0x28, 0x02]) + b"hi" + bytes([0x01, 0x28, 0x00])
    s, _ = decode_struct(data)
    assert s == ThriftStruct(
        [
            ThriftField(1, CT_I32, -1),
            ThriftField(3, CT_BINARY, b"hi"),
            ThriftField(20, CT_BOOL, True),
        ]
    )
    assert encode_struct(s) == data


_LEAVES: dict[int, st.SearchStrategy[Any]] = {
    CT_BOOL: st.booleans(),
    CT_I8: st.integers(-128, 127),
    CT_I16: st.integers(-(2**15), 2**15 - 1),
    CT_I32: st.integers(-(2**31), 2**31 - 1),
    CT_I64: st.integers(-(2**63), 2**63 - 1),
    CT_DOUBLE: st.floats(allow_nan=False),
    CT_BINARY: st.binary(max_size=20),
    CT_UUID: st.binary(min_size=16, max_size=16),
}


def values_of(ctype: int, depth: int) -> st.SearchStrategy[Any]:
    """Random values of one compact type (containers only while depth > 0)."""
    if ctype in _LEAVES:
        return _LEAVES[ctype]
    elem_types = st.sampled_from(sorted(_LEAVES) + ([CT_STRUCT, CT_LIST] if depth > 1 else []))
    if ctype == CT_STRUCT:
        return structs(depth - 1)
    if ctype in (CT_LIST, CT_SET):
        return elem_types.flatmap(
            lambda t: st.lists(values_of(t, depth - 1), max_size=17).map(
                lambda xs: ThriftList(t, xs, ctype == CT_SET)
            )
        )
    return st.tuples(st.sampled_from(sorted(_LEAVES)), elem_types).flatmap(
        lambda kv: st.lists(
            st.tuples(values_of(kv[0], 0), values_of(kv[1], depth - 1)), min_size=1, max_size=4
        ).map(lambda items: ThriftMap(kv[0], kv[1], items))
    )


def structs(depth: int) -> st.SearchStrategy[ThriftStruct]:
    types = sorted(_LEAVES) + ([CT_STRUCT, CT_LIST, CT_SET, CT_MAP] if depth > 0 else [])
    fields = st.tuples(st.integers(-3, 40), st.sampled_from(types)).flatmap(
        lambda it: values_of(it[1], depth).map(lambda v: ThriftField(it[0], it[1], v))
    )
    return st.lists(fields, max_size=6).map(ThriftStruct)


@given(structs(3))
def test_codec_roundtrip_property(s: ThriftStruct) -> None:
    data = encode_struct(s)
    decoded, end = decode_struct(data)
    assert end == len(data)
    assert decoded == s
    assert encode_struct(decoded) == data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "unexpected end"),
        (bytes([0x15]), "end of data in varint"),
        (bytes([0x18, 0x05]) + b"ab", "runs past the end"),
        (bytes([0x1E, 0x00]), "unknown compact type 14"),
        (bytes([0x15]) + b"\xff" * 11, "longer than 10 bytes"),
        (bytes([0x19, 0xF5, 0x80, 0x80, 0x04]), "exceeds the remaining data"),
        (bytes([0x15, 0x80, 0x80, 0x80, 0x80, 0x10, 0x00]), "out of range for i32"),
        (bytes([0x1C]) * 100, "nesting too deep"),
    ],
)
def test_decoder_rejects_malformed_input(data: bytes, message: str) -> None:
    with pytest.raises(ThriftDecodeError, match=message) as info:
        decode_struct(data)
    assert isinstance(info.value, ChatFmtError)


def test_encoder_rejects_out_of_range_and_wrong_types() -> None:
    with pytest.raises(ParquetConcatError, match="out of range for i16"):
        encode_struct(ThriftStruct([ThriftField(1, CT_I16, 1 << 15)]))
    with pytest.raises(ParquetConcatError, match="cannot encode"):
        encode_struct(ThriftStruct([ThriftField(1, CT_I32, b"x")]))


# ----------------------------------------------------------------------------- concatenation


def test_pipeline_options_several_row_groups(tmp_path: Path) -> None:
    parts, tables = make_parts([23, 40, 17], row_group_size=10, **PIPELINE_OPTS)
    out = tmp_path / "out.parquet"
    with ParquetConcatWriter(out, SCHEMA) as writer:
        for i, p in enumerate(parts):
            writer.append(p)
            assert writer.num_rows == sum(t.num_rows for t in tables[: i + 1])
    assert writer.closed
    assert writer.num_row_groups == 3 + 4 + 2
    check_merged(out, tables, parts)
    # The data region is copied verbatim: the output is the parts minus their footers.
    body = b"".join(p[4 : footer_span(p)[0]] for p in parts)
    merged = out.read_bytes()
    assert merged[4 : 4 + len(body)] == body
    assert len(merged) == 4 + len(body) + footer_span(merged)[1] - footer_span(merged)[0] + 8
    # RowGroup.file_offset follows its first column chunk's start.
    for rg in row_groups(parse_footer(merged)):
        md = columns(rg)[0].get_struct(3)
        assert md is not None
        assert rg.get(5) == (md.get(11) or md.get(9))


def test_deprecated_file_offset_past_chunk_is_shifted(tmp_path: Path) -> None:
    parts, tables = make_parts([4, 6], **PIPELINE_OPTS)

    def point_past_chunks(meta: ThriftStruct) -> None:
        for rg in row_groups(meta):
            for cc in columns(rg):
                cc.set(2, CT_I64, footer_span(parts[1])[0])

    parts[1] = with_footer(parts[1], point_past_chunks)
    out = tmp_path / "out.parquet"
    concat_parquet_bytes(parts, out)
    check_merged(out, tables, parts)
    shifted = columns(row_groups(parse_footer(out.read_bytes()))[1])[0].get(2)
    assert shifted == footer_span(parts[0])[0] + footer_span(parts[1])[0] - 4


@pytest.mark.parametrize(
    "options",
    [
        {"compression": "snappy"},
        {"compression": "none", "use_dictionary": True},
        {"compression": "zstd", "compression_level": 1, "use_dictionary": True},
        {"compression": "gzip", "write_statistics": False},
        {"compression": "zstd", "data_page_version": "2.0", "max_rows_per_page": 4},
    ],
)
def test_codecs_and_encodings(tmp_path: Path, options: dict[str, Any]) -> None:
    parts, tables = make_parts([12, 30, 5], row_group_size=8, **options)
    out = tmp_path / "out.parquet"
    assert concat_parquet_bytes(parts, out, SCHEMA) == 47
    check_merged(out, tables, parts)


def test_parts_with_different_codecs_merge(tmp_path: Path) -> None:
    tables = [make_table(10, 0, 1), make_table(10, 10, 2)]
    parts = [to_bytes(tables[0], compression="snappy"), to_bytes(tables[1], **PIPELINE_OPTS)]
    out = tmp_path / "out.parquet"
    concat_parquet_bytes(parts, out)
    check_merged(out, tables, parts)
    md = pq.ParquetFile(out).metadata
    assert [md.row_group(i).column(1).compression for i in range(2)] == ["SNAPPY", "ZSTD"]


def test_statistics_and_filters(tmp_path: Path) -> None:
    parts, tables = make_parts([25, 25, 25, 25], row_group_size=10, **PIPELINE_OPTS)
    out = tmp_path / "out.parquet"
    concat_parquet_bytes(parts, out)
    md = pq.ParquetFile(out).metadata
    mins = [md.row_group(i).column(0).statistics.min for i in range(md.num_row_groups)]
    maxs = [md.row_group(i).column(0).statistics.max for i in range(md.num_row_groups)]
    assert mins == [0, 10, 20, 25, 35, 45, 50, 60, 70, 75, 85, 95]
    assert maxs == [9, 19, 24, 34, 44, 49, 59, 69, 74, 84, 94, 99]
    filtered = pq.read_table(out, filters=[("row", ">=", 42), ("row", "<", 57)])
    assert filtered.column("row").to_pylist() == list(range(42, 57))
    assert filtered.equals(pa.concat_tables(tables).slice(42, 15))
    dataset = ds.dataset(out, format="parquet")
    assert dataset.to_table(filter=ds.field("row") == 73).column("row").to_pylist() == [73]
    (fragment,) = dataset.get_fragments()
    # Row-group pruning uses the (relocated) statistics: only groups 6 and 7 overlap [55, 65).
    kept = fragment.split_by_row_group((ds.field("row") >= 55) & (ds.field("row") < 65))
    assert [f.row_groups[0].id for f in kept] == [6, 7]


def test_empty_single_and_many_parts(tmp_path: Path) -> None:
    parts, tables = make_parts([0, 8, 0, 5, 0], **PIPELINE_OPTS)
    out = tmp_path / "mixed.parquet"
    assert concat_parquet_bytes(parts, out) == 13
    check_merged(out, tables, parts)
    assert pq.ParquetFile(out).metadata.num_row_groups == 2

    single, single_tables = make_parts([31], row_group_size=7, **PIPELINE_OPTS)
    out = tmp_path / "single.parquet"
    concat_parquet_bytes(single, out)
    check_merged(out, single_tables, single)
    assert pq.ParquetFile(out).metadata.num_row_groups == 5

    many, many_tables = make_parts([(i * 7) % 11 + 1 for i in range(20)], **PIPELINE_OPTS)
    out = tmp_path / "many.parquet"
    assert concat_parquet_bytes(many, out) == sum(t.num_rows for t in many_tables)
    check_merged(out, many_tables, many)
    assert pq.ParquetFile(out).metadata.num_row_groups == 20


def test_only_empty_parts_and_no_parts(tmp_path: Path) -> None:
    empty = to_bytes(SCHEMA.empty_table(), **PIPELINE_OPTS)
    out = tmp_path / "empty_parts.parquet"
    assert concat_parquet_bytes([empty, empty], out) == 0
    table = pq.read_table(out)
    assert table.num_rows == 0
    assert table.schema == SCHEMA
    assert pq.ParquetFile(out).metadata.num_row_groups == 0

    out = tmp_path / "no_parts.parquet"
    assert concat_parquet_bytes([], out, SCHEMA, **PIPELINE_OPTS) == 0
    assert pq.read_table(out).equals(SCHEMA.empty_table())

    out = tmp_path / "no_schema.parquet"
    with pytest.raises(ParquetConcatError, match="no schema"):
        concat_parquet_bytes([], out)
    assert not out.exists()


def test_buffer_inputs(tmp_path: Path) -> None:
    tables = [make_table(6, 0, 1), make_table(4, 6, 2)]
    sink = pa.BufferOutputStream()
    pq.write_table(tables[0], sink, **PIPELINE_OPTS)
    buf = sink.getvalue()
    raw = to_bytes(tables[1], **PIPELINE_OPTS)
    out = tmp_path / "out.parquet"
    with ParquetConcatWriter(out) as writer:
        writer.append(memoryview(buf))
        writer.append(bytearray(raw))
    check_merged(out, tables, [buf.to_pybytes(), raw])


def test_merged_footer_keeps_first_part_metadata(tmp_path: Path) -> None:
    parts, _ = make_parts([5, 6], row_group_size=3, **PIPELINE_OPTS)
    out = tmp_path / "out.parquet"
    concat_parquet_bytes(parts, out)
    merged, first = parse_footer(out.read_bytes()), parse_footer(parts[0])
    assert [f.id for f in merged.fields] == [f.id for f in first.fields]
    for f in first.fields:
        if f.id not in (3, 4):
            assert merged.get(f.id) == f.value, f.id
    kv = merged.get(5)
    assert isinstance(kv, ThriftList)
    assert any(isinstance(e, ThriftStruct) and e.get(1) == b"ARROW:schema" for e in kv.items)
    assert merged.get(3) == 11
    assert len(row_groups(merged)) == 4


def test_row_group_ordinals_renumbered(tmp_path: Path) -> None:
    def add_ordinals(meta: ThriftStruct) -> None:
        for i, rg in enumerate(row_groups(meta)):
            rg.set(7, CT_I16, i)

    parts, tables = make_parts([7, 0, 9], row_group_size=4, **PIPELINE_OPTS)
    parts = [with_footer(p, add_ordinals) for p in parts]
    out = tmp_path / "out.parquet"
    concat_parquet_bytes(parts, out)
    check_merged(out, tables, parts)
    ordinals = [rg.get(7) for rg in row_groups(parse_footer(out.read_bytes()))]
    assert ordinals == [0, 1, 2, 3, 4]


def test_page_index_bloom_filter_and_checksums(tmp_path: Path) -> None:
    options = {
        **PIPELINE_OPTS,
        "row_group_size": 9,
        "max_rows_per_page": 4,
        "write_page_index": True,
        "write_page_checksum": True,
        "bloom_filter_options": {"row": True, "input_ids.list.element": {"ndv": 100}},
    }
    parts, tables = make_parts([20, 14, 0, 9], **options)
    out = tmp_path / "out.parquet"
    concat_parquet_bytes(parts, out)
    check_merged(out, tables, parts)
    assert pq.read_table(out, page_checksum_verification=True).equals(pa.concat_tables(tables))

    merged = out.read_bytes()
    merged_rgs = row_groups(parse_footer(merged))
    sources = [(p, rg) for p in parts for rg in row_groups(parse_footer(p)) if rg.get(3)]
    assert len(sources) == len(merged_rgs) == 3 + 2 + 1
    n_pages = n_blooms = 0
    for (src, src_rg), rg in zip(sources, merged_rgs):
        for src_cc, cc in zip(columns(src_rg), columns(rg)):
            src_md, md = src_cc.get_struct(3), cc.get_struct(3)
            assert src_md is not None and md is not None
            # Column index: copied verbatim, offset relocated.
            ci, ci_len, src_ci = cc.get_int(6), cc.get_int(7), src_cc.get_int(6)
            assert ci and ci_len and src_ci
            assert merged[ci : ci + ci_len] == src[src_ci : src_ci + ci_len]
            # Bloom filter (when written): copied verbatim, offset relocated.
            if md.get(14) is not None:
                bf, bf_len, src_bf = md.get_int(14), md.get_int(15), src_md.get_int(14)
                assert bf and bf_len and src_bf
                assert merged[bf : bf + bf_len] == src[src_bf : src_bf + bf_len]
                n_blooms += 1
            # Offset index: rewritten; every page location points at the same page bytes.
            oi, oi_len = cc.get_int(4), cc.get_int(5)
            src_oi, src_oi_len = src_cc.get_int(4), src_cc.get_int(5)
            assert oi and oi_len and src_oi and src_oi_len
            index, end = decode_struct(merged[oi : oi + oi_len])
            src_index, _ = decode_struct(src[src_oi : src_oi + src_oi_len])
            assert end == oi_len
            locs, src_locs = index.get_struct_list(1) or [], src_index.get_struct_list(1) or []
            assert len(locs) == len(src_locs) > 0
            assert locs[0].get(1) == md.get(9)  # first data page = data_page_offset
            for loc, src_loc in zip(locs, src_locs):
                off, size, src_off = loc.get_int(1), loc.get_int(2), src_loc.get_int(1)
                assert off is not None and size and src_off is not None
                assert loc.get(3) == src_loc.get(3)  # first_row_index
                assert merged[off : off + size] == src[src_off : src_off + size]
                n_pages += 1
    assert n_blooms == 2 * len(merged_rgs)
    assert n_pages > 7 * len(merged_rgs)  # several pages per chunk were relocated


@given(
    sizes=st.lists(st.integers(0, 25), min_size=1, max_size=6),
    max_len=st.integers(0, 20),
    row_group_size=st.integers(1, 12),
    compression=st.sampled_from(["zstd", "snappy", "none"]),
)
def test_concat_property(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    max_len: int,
    row_group_size: int,
    compression: str,
) -> None:
    tables, start = [], 0
    for i, n in enumerate(sizes):
        tables.append(make_table(n, start, seed=i + 7 * max_len, max_len=max_len))
        start += n
    parts = [
        to_bytes(t, row_group_size=row_group_size, compression=compression, use_dictionary=False)
        for t in tables
    ]
    out = tmp_path_factory.mktemp("prop") / "out.parquet"
    assert concat_parquet_bytes(parts, out, SCHEMA) == sum(sizes)
    assert pq.read_table(out).equals(pa.concat_tables(tables))
    md = pq.ParquetFile(out).metadata
    assert md.num_rows == sum(sizes)
    assert md.num_row_groups == sum(-(-n // row_group_size) for n in sizes)


# ----------------------------------------------------------------------------- errors


def test_mismatched_schema_names_the_part(tmp_path: Path) -> None:
    parts, tables = make_parts([5, 5], **PIPELINE_OPTS)
    other = make_table(4, 10).set_column(2, "labels", pa.array([[1]] * 4, pa.list_(pa.int64())))
    out = tmp_path / "out.parquet"
    with ParquetConcatWriter(out) as writer:
        writer.append(parts[0])
        writer.append(parts[1])
        with pytest.raises(ParquetConcatError, match=r"^part 2: schema differs") as info:
            writer.append(to_bytes(other, **PIPELINE_OPTS))
        assert info.value.part == 2
        assert "'labels.list.element'" in str(info.value)
        assert writer.num_rows == 10
        # A rejected part changes nothing: the writer stays usable.
        extra_table = make_table(3, 10, seed=9)
        extra = to_bytes(extra_table, **PIPELINE_OPTS)
        writer.append(extra)
        assert writer.num_parts == 4
    check_merged(out, [*tables, extra_table], [*parts, extra])

    renamed = to_bytes(make_table(3).rename_columns([*SCHEMA.names[:-1], "cut"]))
    with pytest.raises(ParquetConcatError, match=r"part 1: .*'cut'"):
        concat_parquet_bytes([parts[0], renamed], tmp_path / "renamed.parquet")
    assert not (tmp_path / "renamed.parquet").exists()

    fewer = to_bytes(make_table(3).drop_columns(["truncated"]), **PIPELINE_OPTS)
    with pytest.raises(ParquetConcatError, match=r"^part 1: schema differs .* element 0"):
        concat_parquet_bytes([parts[0], fewer], tmp_path / "fewer.parquet")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d[: len(d) - 10], "bad magic bytes at the end"),
        (lambda d: d[:100], "bad magic bytes at the end"),
        (lambda d: b"PAR2" + d[4:], "bad magic bytes at the start"),
        (lambda d: d[:-4] + b"PARE", "encrypted"),
        (lambda d: b"PAR1", "too short"),
        (lambda d: d[:-8] + (len(d)).to_bytes(4, "little") + b"PAR1", "footer length"),
        (
            lambda d: (
                d[:-8] + (int.from_bytes(d[-8:-4], "little") - 5).to_bytes(4, "little") + b"PAR1"
            ),
            "malformed Thrift|trailing",
        ),
        (
            lambda d: (
                d[:-8] + (int.from_bytes(d[-8:-4], "little") + 3).to_bytes(4, "little") + b"PAR1"
            ),
            "malformed Thrift|trailing",
        ),
    ],
)
def test_corrupt_parts_name_the_part(
    tmp_path: Path, mutate: Callable[[bytes], bytes], message: str
) -> None:
    good = to_bytes(make_table(5), **PIPELINE_OPTS)
    with ParquetConcatWriter(tmp_path / "out.parquet") as writer:
        writer.append(good)
        with pytest.raises(ParquetConcatError, match=f"^part 1: .*({message})") as info:
            writer.append(mutate(good))
        assert info.value.part == 1
        assert isinstance(info.value, ChatFmtError)
    assert pq.read_table(tmp_path / "out.parquet").equals(make_table(5))


def _set_on_first_chunk(fid: int, ctype: int, value: ThriftValue) -> Callable[[ThriftStruct], None]:
    def edit(meta: ThriftStruct) -> None:
        columns(row_groups(meta)[0])[0].set(fid, ctype, value)

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set_on_first_chunk(1, CT_BINARY, b"other.parquet"), "external files"),
        (_set_on_first_chunk(8, CT_STRUCT, ThriftStruct()), "encrypted columns"),
        (lambda m: m.set(8, CT_STRUCT, ThriftStruct()), "encrypted"),
        (lambda m: m.set(3, CT_I64, 99), "do not add up"),
        (lambda m: m.set(2, CT_I32, 5), "schema"),
    ],
)
def test_unsupported_footers_are_refused(
    tmp_path: Path, edit: Callable[[ThriftStruct], None], message: str
) -> None:
    good = to_bytes(make_table(5), **PIPELINE_OPTS)
    with pytest.raises(ParquetConcatError, match=f"^part 0: .*{message}"):
        concat_parquet_bytes([with_footer(good, edit)], tmp_path / "out.parquet")


def test_out_of_range_offset_is_refused(tmp_path: Path) -> None:
    good = to_bytes(make_table(5), **PIPELINE_OPTS)

    def bad_offset(meta: ThriftStruct) -> None:
        md = columns(row_groups(meta)[0])[0].get_struct(3)
        assert md is not None
        md.set(9, CT_I64, len(good))

    with pytest.raises(ParquetConcatError, match=r"part 0: .*outside the data region"):
        concat_parquet_bytes([with_footer(good, bad_offset)], tmp_path / "out.parquet")


def test_exception_inside_context_removes_output(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError), ParquetConcatWriter(out) as writer:
        writer.append(to_bytes(make_table(5), **PIPELINE_OPTS))
        raise RuntimeError("worker failed")
    assert not out.exists()
    with pytest.raises(ParquetConcatError, match="closed"):
        writer.append(to_bytes(make_table(5)))


def test_struct_helpers() -> None:
    s = ThriftStruct([ThriftField(2, CT_I32, 1), ThriftField(5, CT_BINARY, b"x")])
    s.set(3, CT_I64, 7)
    s.set(9, CT_BOOL, True)
    s.set(2, CT_I32, 4)
    assert [(f.id, f.value) for f in s.fields] == [(2, 4), (3, 7), (5, b"x"), (9, True)]
    assert s.get_int(3) == 7 and s.get(4) is None and s.get_struct(4) is None
    with pytest.raises(ThriftDecodeError):
        s.get_int(5)
    with pytest.raises(ThriftDecodeError):
        s.get_struct_list(2)
