"""The devbox:1 image's build (bun from the npm registry, once) and what happens without it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from _process_runtime import no_bwrap_left

from fake_server import VirtualClock
from fake_server.__main__ import main
from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.process import ProcessRuntime
from fake_server.runtime.process.images import debian, desktop_image, image, system

if TYPE_CHECKING:
    from pathlib import Path

#: An ``npm`` that fails as the real one does offline (its error names the registry's URL).
OFFLINE_NPM = """#!/bin/sh
echo 'npm error code ENOTFOUND' >&2
echo 'npm error request to https://registry.npmjs.org/bun failed' >&2
exit 1
"""
#: An ``npm`` that installs a ``bun`` into the ``--prefix`` it is given.
WORKING_NPM = """#!/bin/sh
while [ "$1" != --prefix ]; do shift; done
mkdir -p "$2/bin" && printf '#!/bin/sh\\necho 1.0.0\\n' > "$2/bin/bun" && chmod 755 "$2/bin/bun"
"""


#: A Debian builder that makes the smallest tree taken as built (its arguments: the staging
#: directory, the mirror), or fails as mmdebstrap does when the mirror cannot be reached.
WORKING_BUILDER = '#!/bin/sh\nmkdir -p "$1/usr/bin" && touch "$1/usr/bin/python3"\n'
FAILING_BUILDER = "#!/bin/sh\necho 'E: apt-get update failed' >&2\nexit 1\n"


#: The desktop's install step (its arguments: the tree, the packages): one that adds the X
#: server, or fails as apt-get does when a package is not in the mirror.
WORKING_INSTALL = '#!/bin/sh\nmkdir -p "$1/usr/bin" && touch "$1/usr/bin/Xvfb"\n'
FAILING_INSTALL = "#!/bin/sh\necho 'E: Unable to locate package evilwm' >&2\nexit 100\n"


def fake_builder(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    script: str | None,
    install: str = WORKING_INSTALL,
) -> None:
    """Point the Debian 13 build at ``script`` (``None``: no builder installed) and the
    desktop's install step at ``install``."""
    builder = tmp_path / "builder"
    if script is not None:
        builder.write_text(script)
        builder.chmod(0o755)
    monkeypatch.setattr(
        debian, "_builder", lambda ids, filter_fd: [str(builder)] if script else None
    )
    installer = tmp_path / "install"
    installer.write_text(install)
    installer.chmod(0o755)
    monkeypatch.setattr(desktop_image, "_installer", lambda: [str(installer)])


def fake_npm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: str | None) -> Path:
    """Point the image's cache at ``tmp_path/cache`` and its ``npm`` at ``script``."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    npm = tmp_path / "npm"
    if script is not None:
        npm.write_text(script)
        npm.chmod(0o755)
    monkeypatch.setattr(image, "npm_path", lambda: str(npm) if script else None)
    return tmp_path / "cache" / "createos-fake" / "images"


def test_the_image_is_built_once_with_a_progress_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = fake_npm(monkeypatch, tmp_path, WORKING_NPM)
    lines: list[str] = []
    assert system.choose(progress=lines.append) == system.System(bun=cache / "bun")
    assert system.choose(progress=lines.append) == system.System(bun=cache / "bun")
    assert lines == [f"createos-fake: building image devbox:1 once: npm install bun into {cache}"]
    assert sorted(p.name for p in cache.iterdir()) == [".lock", "bun"]


@pytest.mark.parametrize(
    ("npm", "why"),
    [(OFFLINE_NPM, "npm failed (ENOTFOUND)"), (None, "npm is not installed")],
)
def test_an_image_that_cannot_be_built_says_what_to_do_and_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, npm: str | None, why: str
) -> None:
    cache = fake_npm(monkeypatch, tmp_path, npm)
    with pytest.raises(RuntimeUnavailable) as info:
        system.choose()
    assert str(info.value) == (
        f"the devbox:1 image cannot be built: installing bun from the npm registry failed: "
        f"{why}. Run the fake once where the npm registry is reachable (or point npm at a "
        f"registry you can reach: npm config set registry URL); the image is kept in {cache}. "
        "Or allow the fallback (serve --image-fallback, FakeCreateOS(image_fallback=True)): "
        "sandboxes then run the host's programs as user sandbox on a read-only /usr, without "
        "root or package installs"
    )
    assert "https://" not in str(info.value)
    assert [p.name for p in cache.iterdir()] == [".lock"]  # no half-built install left


def test_the_image_command_builds_it_and_says_what_each_rootfs_boots(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = fake_npm(monkeypatch, tmp_path, WORKING_NPM)
    fake_builder(monkeypatch, tmp_path, WORKING_BUILDER)
    assert main(["image"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"createos-fake: building image devbox:1 once: npm install bun into {cache}",
        f"createos-fake: building image devbox:1 once: Debian 13 (trixie) from "
        f"{debian.mirror()} into {cache} (a few minutes)",
        "createos-fake: adding desktop:1's X desktop once (xvfb, evilwm, xdotool, python3-xlib, "
        f"xclip, xterm) from {debian.mirror()}",
        "images: rootfs devbox:1, desktop:1, ubuntu:24.04, node:22, python:3.12 boot devbox:1: "
        "Debian 13 (trixie) on a copy-on-write root per sandbox (user root; apt-get, pip, "
        "npm -g; bun); desktop:1 adds an X desktop (Xvfb, evilwm, xdotool)",
    ]
    monkeypatch.setattr(image, "npm_path", lambda: None)
    fake_builder(monkeypatch, tmp_path, None)
    assert main(["image"]) == 0  # cached: neither npm nor a builder needed any more
    assert capsys.readouterr().out.startswith("images: rootfs devbox:1, ")
    chosen = system.choose()
    assert chosen == system.System(
        bun=cache / "bun", root=debian.tree(cache), desktop_root=desktop_image.tree(cache)
    )
    # desktop:1 boots the tree with the X desktop, every other rootfs the plain one
    assert [chosen.tree(name) for name in ("desktop:1", "devbox:1", "node:22")] == [
        "desktop", "devbox", "devbox"
    ]  # fmt: skip
    # the desktop's tree is a copy of the devbox tree's files, with what apt-get added
    assert (desktop_image.tree(cache) / "usr/bin/python3").stat().st_ino == (
        debian.tree(cache) / "usr/bin/python3"
    ).stat().st_ino
    assert not (debian.tree(cache) / "usr/bin/Xvfb").exists()


def test_a_desktop_that_cannot_be_added_says_why_and_leaves_the_devbox_tree(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = fake_npm(monkeypatch, tmp_path, WORKING_NPM)
    fake_builder(monkeypatch, tmp_path, WORKING_BUILDER, FAILING_INSTALL)
    assert main(["image"]) == 1
    assert capsys.readouterr().err == (
        "createos-fake: desktop:1's X desktop cannot be added to the Debian 13 (trixie) image: "
        "apt-get failed (status 100): E: Unable to locate package evilwm. Computer use on the "
        "process runtime answers 409 until it is (createos-fake image)\n"
    )
    assert sorted(p.name for p in cache.iterdir()) == [".lock", "bun", debian.tree(cache).name]
    # sandboxes boot the devbox tree meanwhile, without a desktop
    assert system.choose() == system.System(bun=cache / "bun", root=debian.tree(cache))


@pytest.mark.parametrize(
    ("builder", "why"),
    [
        (FAILING_BUILDER, "builder failed (status 1): E: apt-get update failed"),
        (None, "neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)"),
    ],
)
def test_a_debian_tree_that_cannot_be_built_says_why_and_leaves_the_hosts_programs(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    builder: str | None,
    why: str,
) -> None:
    cache = fake_npm(monkeypatch, tmp_path, WORKING_NPM)
    fake_builder(monkeypatch, tmp_path, builder)
    assert main(["image"]) == 1
    assert capsys.readouterr().err == (
        f"createos-fake: the Debian 13 (trixie) image for devbox:1 cannot be built: {why}. "
        "Sandboxes boot the host's own programs until it is (createos-fake image builds it "
        f"into {cache})\n"
    )
    assert sorted(p.name for p in cache.iterdir()) == [".lock", "bun"]  # nothing half-built
    chosen = system.choose()
    assert chosen == system.System(bun=cache / "bun")
    assert "(no Debian 13 (trixie) image yet: createos-fake image builds it)" in chosen.describe(
        ["devbox:1"]
    )


def test_the_mirror_is_the_hosts_apt_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert debian._SOURCE.search("Types: deb\nURIs: http://mirror.test/debian\nSuites: x\n")
    found = debian._SOURCE.search("deb [arch=amd64] https://mirror.test/debian/ bookworm main\n")
    assert found is not None
    assert found.group(1) == "https://mirror.test/debian"
    monkeypatch.setenv("CREATEOS_FAKE_DEBIAN_MIRROR", "http://chosen.test/debian")
    assert debian.mirror() == "http://chosen.test/debian"


def test_serve_refuses_to_start_without_the_image_unless_the_fallback_is_allowed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_npm(monkeypatch, tmp_path, OFFLINE_NPM)
    for command in (["serve", "--runtime", "process", "--port", "0"], ["image"]):
        assert main(command) == 1
        error = capsys.readouterr().err
        assert error.startswith("createos-fake: the devbox:1 image cannot be built: installing")
        assert error.endswith("without root or package installs\n")


def test_the_allowed_fallback_runs_sandboxes_on_the_host_directory_layout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_npm(monkeypatch, tmp_path, OFFLINE_NPM)
    chosen = system.choose(fallback=True)
    assert chosen == system.System(
        missing="installing bun from the npm registry failed: npm failed (ENOTFOUND)"
    )
    assert chosen.describe(["devbox:1"]) == (
        "images: rootfs devbox:1 boot the host's programs on a read-only /usr as user sandbox "
        "(no devbox:1 image: installing bun from the npm registry failed: npm failed "
        "(ENOTFOUND))"
    )
    runtime = ProcessRuntime(base=tmp_path / "sandboxes", image_fallback=True)
    try:
        machine = runtime.new_sandbox("sb")
        output: list[bytes] = []

        async def sink(data: bytes) -> None:
            output.append(data)

        async def whoami() -> int:
            runner = machine.runner(VirtualClock())
            return await runner.run(["sh", "-c", "id -un; pwd"], on_stdout=sink, on_stderr=sink)

        assert asyncio.run(whoami()) == 0
        assert b"".join(output) == b"sandbox\n/home/sandbox\n"
        assert machine.home == "/home/sandbox"  # what a process started without cwd reports
        assert machine.rootfs is None
    finally:
        runtime.close()
    assert asyncio.run(no_bwrap_left())
    assert list((tmp_path / "sandboxes").iterdir()) == []
