#!/usr/bin/env python3
"""Changes bytes inside one tensor entry of a torch zip archive, in place, as a
damaged disk or a partial copy would: the entry's CRC-32 no longer matches.

    damage_entry.py FILE [--nan] [--bytes N]

The entry is the largest stored one that is not itself an archive (in a
checkpoint: a model weight, not the optimiser state). N bytes (default 400)
in its middle are overwritten with 0x5A, or with float NaNs (--nan). Prints
the entry's name (as zip names it: "archive/data/3"); fails unless Python's
zipfile.testzip() then names that entry too.
"""
import argparse
import struct
import sys
import zipfile


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--nan", action="store_true")
    p.add_argument("--bytes", type=int, default=400)
    a = p.parse_args()
    with open(a.file, "rb") as f:
        data = bytearray(f.read())
    with zipfile.ZipFile(a.file) as z:
        infos = [i for i in z.infolist() if i.compress_type == zipfile.ZIP_STORED and "/data/" in i.filename]
        best = None
        for i in infos:
            # The data follows the local header (30 bytes), its name and its extra field.
            name_len, extra_len = struct.unpack("<HH", data[i.header_offset + 26:i.header_offset + 30])
            start = i.header_offset + 30 + name_len + extra_len
            if data[start:start + 4] == b"PK\x03\x04":
                continue  # an archive within (the optimiser state)
            if best is None or i.file_size > best[0].file_size:
                best = (i, start)
    if best is None:
        sys.exit(f"{a.file}: no stored tensor entry")
    info, start = best
    n = min(a.bytes, info.file_size) // 4 * 4
    at = start + (info.file_size - n) // 2 // 4 * 4
    data[at:at + n] = struct.pack("<f", float("nan")) * (n // 4) if a.nan else b"\x5a" * n
    with open(a.file, "wb") as f:
        f.write(data)
    with zipfile.ZipFile(a.file) as z:
        bad = z.testzip()
    if bad != info.filename:
        sys.exit(f"{a.file}: zipfile.testzip() names {bad!r}, not the damaged {info.filename!r}")
    print(info.filename)


if __name__ == "__main__":
    main()
