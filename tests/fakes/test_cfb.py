"""The compound-file writer the .msg tests rely on, checked with olefile (in its strict mode)."""

from __future__ import annotations

import io

import olefile
import pytest

from tests.fakes.cfb import MsgAttachment, MsgSpec, cfb, make_msg

pytestmark = pytest.mark.unit


def test_streams_big_and_small_and_storages_read_back() -> None:
    big = bytes(range(256)) * 40  # above the 4096-byte cutoff: regular sectors
    tree = {"small": b"x" * 10, "big": big, "empty": b"", "Storage": {"inner": b"hello"}}
    tree.update({f"s{i}": b"%d" % i for i in range(300)})  # several directory and mini-FAT sectors
    ole = olefile.OleFileIO(io.BytesIO(cfb(tree)), raise_defects=olefile.DEFECT_INCORRECT)
    assert ole.openstream("small").read() == b"x" * 10
    assert ole.openstream("big").read() == big
    assert ole.get_size("empty") == 0
    assert ole.openstream(["Storage", "inner"]).read() == b"hello"
    assert ole.openstream("s299").read() == b"299"
    assert len(ole.listdir()) == 304


def test_make_msg_lays_out_the_property_streams() -> None:
    data = make_msg(MsgSpec(subject="Hi", body="text", attachments=[
        MsgAttachment("a.txt", b"attached"), MsgAttachment("fwd.msg", message=MsgSpec(subject="inner"))]))
    ole = olefile.OleFileIO(io.BytesIO(data), raise_defects=olefile.DEFECT_INCORRECT)
    assert ole.openstream("__substg1.0_0037001F").read() == "Hi\0".encode("utf-16-le")
    assert ole.openstream("__attach_version1.0_#00000000/__substg1.0_37010102").read() == b"attached"
    assert ole.exists("__attach_version1.0_#00000001/__substg1.0_3701000D/__substg1.0_0037001F")
    assert len(ole.openstream("__properties_version1.0").read()) % 16 == 0
