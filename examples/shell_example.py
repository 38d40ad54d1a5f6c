"""An interactive shell in a sandbox over a WebSocket (``GET …/shell-ws``): keystrokes in as
binary frames, terminal output back, a JSON ``resize`` message, and the exit status at the end.
"""

import json

import aiohttp
import pytest


@pytest.mark.asyncio
async def test_interactive_shell(createos_fake):
    fake = createos_fake
    headers = {"X-Api-Key": fake.api_key}
    async with aiohttp.ClientSession(headers=headers) as http:
        created = await http.post(f"{fake.url}/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = (await created.json())["data"]["id"]
        url = f"{fake.url}/v1/sandboxes/{sandbox_id}/shell-ws?rows=24&cols=80"
        async with http.ws_connect(url) as shell:
            await shell.send_str(json.dumps({"type": "resize", "rows": 40, "cols": 120}))
            await shell.send_bytes(b"echo hello from the shell; stty size\n")
            output = b""
            while b"40 120" not in output:
                output += (await shell.receive()).data
            assert b"hello from the shell" in output
            await shell.send_bytes(b"exit 7\n")
            frames = [message async for message in shell]
        assert json.loads(frames[-1].data) == {"type": "exit", "exit_code": 7}
        await http.delete(f"{fake.url}/v1/sandboxes/{sandbox_id}")
