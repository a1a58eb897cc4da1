"""Edits to a GGUF file's metadata for tests, in place: the reader and writer
of the format's key/value section (GGUF v3), small enough to need no numpy.
Used to make deliberately broken model versions from real files."""
import struct

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _skip(data, off, vtype):
    """The offset past one value of `vtype` at `off`."""
    if vtype in _SCALARS:
        return off + struct.calcsize(_SCALARS[vtype])
    if vtype == 8:  # string: u64 length, bytes
        (n,) = struct.unpack_from("<Q", data, off)
        return off + 8 + n
    if vtype == 9:  # array: u32 element type, u64 count, elements
        etype, n = struct.unpack_from("<IQ", data, off)
        off += 12
        for _ in range(n):
            off = _skip(data, off, etype)
        return off
    raise ValueError(f"GGUF value type {vtype} unknown")


def _fields(data):
    """(key, type, value offset) for each metadata entry."""
    magic, version, _, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    if magic != b"GGUF" or version < 2:
        raise ValueError("not a GGUF v2/v3 file")
    off = 24
    for _ in range(n_kv):
        (n,) = struct.unpack_from("<Q", data, off)
        key = data[off + 8:off + 8 + n].decode()
        (vtype,) = struct.unpack_from("<I", data, off + 8 + n)
        yield key, vtype, off + 12 + n
        off = _skip(data, off + 12 + n, vtype)


def token_id(path, piece):
    """The id of the vocabulary token spelled `piece` (e.g. "ĠParis")."""
    data = open(path, "rb").read()
    for key, vtype, off in _fields(data):
        if key != "tokenizer.ggml.tokens":
            continue
        _, n = struct.unpack_from("<IQ", data, off)
        off += 12
        for i in range(n):
            (ln,) = struct.unpack_from("<Q", data, off)
            if data[off + 8:off + 8 + ln] == piece.encode():
                return i
            off += 8 + ln
    raise KeyError(piece)


def set_uint32(path, key, value):
    """Overwrites the uint32 metadata entry `key` in place."""
    with open(path, "r+b") as f:
        data = f.read()
        for k, vtype, off in _fields(data):
            if k == key:
                if vtype != 4:
                    raise ValueError(f"{key} is type {vtype}, not uint32")
                f.seek(off)
                f.write(struct.pack("<I", value))
                return
    raise KeyError(key)


def copy_with_uint32(src, dst, entries):
    """Writes `src` to `dst` with the uint32 metadata entries `entries`
    ({key: value}, keys it does not have) added after its own: the tensor
    infos follow as they were, the data after them realigned (their offsets
    are from the data's start, so they hold)."""
    data = open(src, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    alignment = 32
    kv_end = 24
    for key, vtype, off in _fields(data):
        if key in entries:
            raise ValueError(f"{src} already has {key}")
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", data, off)
        kv_end = _skip(data, off, vtype)
    off = kv_end
    for _ in range(n_tensors):  # name, n_dims, dims, type, offset
        (n,) = struct.unpack_from("<Q", data, off)
        (n_dims,) = struct.unpack_from("<I", data, off + 8 + n)
        off += 8 + n + 4 + 8 * n_dims + 4 + 8
    data_start = -(-off // alignment) * alignment
    added = b"".join(struct.pack("<Q", len(k)) + k.encode() + struct.pack("<II", 4, v)
                     for k, v in entries.items())
    head = struct.pack("<4sIQQ", magic, version, n_tensors, n_kv + len(entries))
    infos = head + data[24:kv_end] + added + data[kv_end:off]
    with open(dst, "wb") as f:
        f.write(infos)
        f.write(b"\0" * (-len(infos) % alignment))
        f.write(data[data_start:])


def copy_with_fim_markers(src, dst):
    """A copy of `src` (the default model's vocabulary) whose metadata names
    three of its unused control tokens as fill-in-the-middle markers, so
    llama.cpp prompts it as a code model (tests and benchmarks of /infill;
    no code model is available offline)."""
    copy_with_uint32(src, dst, {key: token_id(src, text) for key, text in (
        ("tokenizer.ggml.fim_pre_token_id", "<issue_start>"),
        ("tokenizer.ggml.fim_suf_token_id", "<issue_comment>"),
        ("tokenizer.ggml.fim_mid_token_id", "<issue_closed>"))})
