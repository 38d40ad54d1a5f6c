"""A Dockerfile template: its build runs on the fake clock, then sandboxes start from it."""

from createos import (
    CreateSandboxRequest,
    RunCommandRequest,
    TemplateCreateRequest,
    TemplateStatus,
)

DOCKERFILE = """FROM nodeops/sandbox:debian
ENV GREETING=hello
RUN mkdir -p /opt/tool && echo 1.0 > /opt/tool/VERSION
"""


def test_template_build(createos_sdk, createos_clock):
    template = createos_sdk.templates.create(
        TemplateCreateRequest(name="tool", dockerfile=DOCKERFILE)
    )
    assert template.status is TemplateStatus.PENDING
    createos_clock.advance(2.5)  # 1 s pending, then 0.5 s per Dockerfile step
    assert createos_sdk.templates.get(template.id).status is TemplateStatus.READY
    assert "Step 3/3 : RUN mkdir" in createos_sdk.templates.logs(template.id)

    sandbox = createos_sdk.create_sandbox(
        CreateSandboxRequest(shape="s-1vcpu-1gb", rootfs=template.id)
    )
    sandbox.wait_until_running()
    result = sandbox.run_command(
        RunCommandRequest(command="bash", arguments=["-c", "cat /opt/tool/VERSION; echo $GREETING"])
    )
    assert result.result.standard_output == "1.0\nhello\n"
    sandbox.destroy()
    createos_sdk.templates.delete(template.id)
