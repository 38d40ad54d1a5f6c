"""The official CreateOS SDK against the fake: same sandboxes, same shell."""

from createos import CreateSandboxRequest, RunCommandRequest


def test_official_sdk(createos_sdk, createos_fake):
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    sandbox.wait_until_running()

    response = sandbox.run_command(RunCommandRequest(command="echo", arguments=["from the SDK"]))
    assert response.result.exit_code == 0
    assert response.result.standard_output == "from the SDK\n"

    sandbox.destroy()
    assert createos_fake.sandbox(sandbox.id).status in ("destroying", "destroyed")
