"""``ArchiveMeter`` follows tar headers in a streamed download and stops a bloated archive."""

from __future__ import annotations

import io
import tarfile

import pytest

from pytest_createos.provider._errors import CreateosError
from pytest_createos.provider._tarmeter import RECORD, ArchiveMeter

UNSAFE = "CreateOS archive contains unsafe entries or exceeds the extraction limit."


def _archive(fmt: int, files: dict[str, bytes]) -> bytes:
    """A tar of ``files`` under a root directory entry, with a symlink at the end."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        root = tarfile.TarInfo(".")
        root.type = tarfile.DIRTYPE
        tar.addfile(root)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("./link")
        link.type, link.linkname = tarfile.SYMTYPE, "a"
        tar.addfile(link)
    return buffer.getvalue()


def _feed(meter: ArchiveMeter, data: bytes, step: int) -> None:
    for at in range(0, len(data), step):
        meter.feed(data[at : at + step])


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
@pytest.mark.parametrize("step", [1, 7, 512, 513, 65536])
def test_real_archives_pass_in_any_chunking(fmt: int, step: int) -> None:
    files = {"./a": b"x" * 1000, "./" + "long/" * 30 + "name": b"deep", "./empty": b""}
    data = _archive(fmt, files)
    assert len(data) % RECORD == 0
    meter = ArchiveMeter()
    _feed(meter, data, step)
    assert (meter.received, meter.declared) == (len(data), 1004)


def test_declared_sizes_over_the_limit_stop_at_the_header() -> None:
    data = _archive(tarfile.PAX_FORMAT, {"./a": b"1" * 600, "./b": b"2" * 600})
    meter = ArchiveMeter(limit=1000)
    with pytest.raises(CreateosError) as info:
        _feed(meter, data, 512)
    assert str(info.value) == UNSAFE
    # Refused at the second file's header, before its data was read.
    assert meter.received < 512 * 6


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_sizes_past_eight_gib_are_read_from_base256_and_pax(fmt: int) -> None:
    """A file of 11 GiB is declared beyond the octal field: GNU base-256 or a pax record."""
    info = tarfile.TarInfo("./huge")
    info.size = 11 * 1024**3
    header = info.tobuf(fmt, tarfile.ENCODING, "surrogateescape")
    meter = ArchiveMeter()
    with pytest.raises(CreateosError) as caught:
        meter.feed(header + b"\0" * 4096)
    assert str(caught.value) == UNSAFE
    assert meter.declared == info.size  # read from the header, not from 11 GiB of data


def test_bytes_after_the_end_of_archive_beyond_record_padding_are_refused() -> None:
    data = _archive(tarfile.GNU_FORMAT, {"./tiny": b"abc"})
    meter = ArchiveMeter()
    meter.feed(data + b"\0" * RECORD)  # one more record of zeros: still tar-like
    with pytest.raises(CreateosError) as info:
        meter.feed(b"garbage" * 1000)
    assert str(info.value) == UNSAFE


def test_an_oversized_extended_header_is_refused() -> None:
    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = tarfile.GNUTYPE_LONGNAME, 2 * 1024 * 1024
    with pytest.raises(CreateosError) as caught:
        ArchiveMeter().feed(info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "strict"))
    assert str(caught.value) == UNSAFE


def test_an_unreadable_size_field_is_refused() -> None:
    header = bytearray(_archive(tarfile.USTAR_FORMAT, {"./a": b"x"})[:512])
    header[124:136] = b"not-octal!!\0"
    with pytest.raises(CreateosError) as caught:
        ArchiveMeter().feed(bytes(header))
    assert str(caught.value) == UNSAFE
