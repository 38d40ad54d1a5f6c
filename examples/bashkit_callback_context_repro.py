"""bashkit 0.20.1 entering one context from two threads, and ``callctx.isolate()``."""

import asyncio
import time

import bashkit

from fake_server.runtime.bashkit import callctx


async def body(ctx):
    async for chunk in ctx.stdin:
        await ctx.stdout.write(chunk)
    await ctx.stdout.write(b"x\n")
    return 0


class Command:
    """An async command (to Python 3.11's inspect) whose call takes a moment."""

    __name__, __code__, __defaults__, __kwdefaults__ = "cmd", body.__code__, None, None
    __annotations__ = {}

    def __call__(self, ctx):
        time.sleep(0.2)  # on bashkit's worker thread, inside ctx.run()
        return body(ctx)


async def main():
    bash = bashkit.Bash()
    bash.add_command("cmd", Command())
    callctx.isolate()  # without it: the RuntimeError, then 30 s to bashkit's own time limit
    result = await bash.execute("echo a | cmd | cmd | cmd")
    print("finished:", result.stdout.split())


asyncio.run(main())
