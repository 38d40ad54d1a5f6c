"""Assert on the JSON the code sent, and fail only the calls whose body matches."""

import pytest
from createos import CreateSandboxRequest, RunCommandRequest

from pytest_createos import Fault, HttpError


def test_the_app_asks_for_the_configured_rootfs(createos_sdk, createos_fake):
    sandbox = createos_sdk.create_sandbox(
        CreateSandboxRequest(
            shape="s-1vcpu-1gb", rootfs="python:3.12", environment_variables={"A": "1"}
        )
    )

    create = createos_fake.calls.filter(operation="create_sandbox").last
    assert create.request.json()["rootfs"] == "python:3.12"
    assert create.request.header("X-Api-Key") == "<redacted>"  # credentials never kept
    assert create.response.json()["data"]["id"] == sandbox.id
    # The same check as a one-liner: the body contains these fields (nested objects too).
    createos_fake.calls.assert_called_once("create_sandbox", json={"envs": {"A": "1"}})
    sandbox.destroy()


def test_only_the_command_that_matches_fails(createos_sdk, createos_fake):
    # when= a dict: the request's JSON body must contain it; a callable gets the call.
    fault = createos_fake.faults.add(Fault("exec", HttpError(503), when={"cmd": "rm"}, times=None))
    sandbox = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))

    listed = sandbox.run_command(RunCommandRequest(command="ls", arguments=["/"]))
    assert listed.result.exit_code == 0
    with pytest.raises(Exception, match="503"):
        sandbox.run_command(RunCommandRequest(command="rm", arguments=["-rf", "/tmp/x"]))

    assert fault.fired == 1
    assert fault.calls[0].call.json()["args"] == ["-rf", "/tmp/x"]
    sandbox.destroy()
