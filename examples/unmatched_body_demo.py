"""A failing test on purpose: the body it asserts on is not the one the client sent.

Not collected with the examples (its name does not end in ``_example.py``); the docs run
checks the assertion's message.
"""

from createos import CreateSandboxRequest


def test_created_from_the_python_rootfs(createos_sdk, createos_fake):
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    sandbox.destroy()
    createos_fake.calls.assert_called_once("create_sandbox", json={"rootfs": "python"})
