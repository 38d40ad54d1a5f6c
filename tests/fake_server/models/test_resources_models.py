"""Unit checks of the account-resource models: the operation table, Dockerfile parsing,
bucket mounts and desktop limits (their HTTP behaviour is tested in tests/e2e/)."""

from __future__ import annotations

import pytest

from fake_server.faults.fault import OPERATIONS
from fake_server.http.resources_routes import RESOURCE_ROUTES
from fake_server.models import BadRequest, Conflict
from fake_server.models.resources.desktop import MAX_SCREENS, Desktop
from fake_server.models.resources.dockerfile import parse, parse_env
from fake_server.runtime.bashkit.mounts import Bucket, MountingDisk, empty_bucket


def test_each_resource_route_has_an_operation_of_its_own() -> None:
    names = [route[2] for route in RESOURCE_ROUTES]
    assert len(names) == len(set(names)) == 53
    assert set(names) <= OPERATIONS


def test_dockerfile_logical_lines_comments_and_keywords() -> None:
    steps = parse("# base\nfrom devbox:1\n\nRUN echo a \\\n  && echo b\nenv A=1\n")
    assert [(s.line, s.keyword, s.argument) for s in steps] == [
        (2, "FROM", "devbox:1"),
        (4, "RUN", "echo a && echo b"),
        (6, "ENV", "A=1"),
    ]
    with pytest.raises(BadRequest) as caught:
        parse("FROM devbox:1\nADD x /y\n")
    assert caught.value.message == (
        "line 2: COPY and ADD are not permitted; bring content in with RUN"
    )
    with pytest.raises(BadRequest):
        parse("FROM a\n" + "#" * 70_000)


def test_env_forms() -> None:
    assert parse_env('A=1 B="two words"') == {"A": "1", "B": "two words"}
    assert parse_env("NAME some value") == {"NAME": "some value"}
    for bad, message in (('A="x', "unbalanced quotes"), ("A=1 B", "'B' is not NAME=value")):
        with pytest.raises(ValueError, match=message):
            parse_env(bad)


def test_mounts_route_the_files_api_and_survive_a_wipe() -> None:
    bucket = empty_bucket()
    assert bucket.read_dir("/") == []
    one, two = MountingDisk(), MountingDisk()
    one.mount("/mnt/d", bucket)
    two.mount("/data", bucket)
    one.write_file("/mnt/d/sub/f.txt", b"shared")
    assert two.read_file("/data/sub/f.txt") == b"shared"
    assert two.is_dir("/data/sub")
    assert not one.exists("/mnt/d/other")
    with pytest.raises(PermissionError):
        two.remove("/data")
    one.wipe()
    assert two.read_file("/data/sub/f.txt") == b"shared"
    two.unmount("/data")
    assert not two.exists("/data/sub/f.txt")


def test_desktop_screen_limit_and_bounds() -> None:
    desktop = Desktop(None, "sb-1")  # type: ignore[arg-type]
    for _ in range(MAX_SCREENS - 1):
        desktop.create_screen({"width": 640, "height": 480})
    with pytest.raises(Conflict, match="at most 8 screens"):
        desktop.create_screen({})
    with pytest.raises(BadRequest) as caught:
        desktop.create_screen({"width": 10})
    assert (caught.value.field, caught.value.message) == ("width", "must be between 64 and 7680")
    with pytest.raises(BadRequest) as screen_id:
        desktop.screen("screen-99")
    assert screen_id.value.field == "screen_id"


def test_bucket_sub_folders_nest_and_unmount_only_their_own_mounts() -> None:
    bucket, other = Bucket(), empty_bucket()
    root, sub = MountingDisk(), MountingDisk()
    bucket.mount(root, "/d", "")
    root.write_file("/d/a/run.sh", b"echo")
    root.mounts["/d"].chmod("/a/run.sh", 0o755)
    root.mounts["/d"].symlink("/a/run.sh", "/a/link")
    bucket.mount(sub, "/s", "./a/")  # moves what the root held under a/ into its own part
    assert sub.read_file("/s/run.sh") == b"echo"
    assert sub.mode("/s/run.sh") & 0o777 == 0o755
    assert sub.mounts["/s"].read_link("/link") == "/a/run.sh"
    assert sorted(root.mounts) == ["/d", "/d/a"]
    root.mount("/d/a/other", other)  # another disk nested in this one stays mounted
    bucket.unmount(root, "/d")
    assert sorted(root.mounts) == ["/d/a/other"]
    assert sub.read_file("/s/run.sh") == b"echo"
