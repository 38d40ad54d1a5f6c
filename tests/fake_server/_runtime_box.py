"""The runtime tests' harness: one sandbox disk and shell on a virtual clock, with output
recorded per stream and stamped with fake time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fake_server.clock import VirtualClock
from fake_server.runtime.bashkit import CommandRegistry, SandboxDisk, Shell

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from fake_server.runtime import StdinPipe

__all__ = ["Box", "Result", "new_box"]


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    chunks: list[tuple[str, float, bytes]] = field(default_factory=list)


@dataclass
class Box:
    disk: SandboxDisk
    clock: VirtualClock
    commands: CommandRegistry
    shell: Shell

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | StdinPipe | None = None,
        on_chunk: Callable[[str, bytes], Awaitable[None]] | None = None,
    ) -> Result:
        result = Result(0, "", "")

        def sink(stream: str) -> Callable[[bytes], Awaitable[None]]:
            async def write(data: bytes) -> None:
                result.chunks.append((stream, self.clock.now(), data))
                if on_chunk is not None:
                    await on_chunk(stream, data)

            return write

        result.code = await self.shell.run(
            argv, cwd=cwd, env=env, stdin=stdin, on_stdout=sink("out"), on_stderr=sink("err")
        )
        result.stdout = b"".join(d for s, _, d in result.chunks if s == "out").decode()
        result.stderr = b"".join(d for s, _, d in result.chunks if s == "err").decode()
        return result

    async def sh(self, script: str, **kwargs: object) -> Result:
        return await self.run(["/bin/bash", "-lc", script], **kwargs)  # type: ignore[arg-type]


def new_box() -> Box:
    clock = VirtualClock()
    disk = SandboxDisk()
    commands = CommandRegistry()
    return Box(disk, clock, commands, Shell(disk, clock, commands))
