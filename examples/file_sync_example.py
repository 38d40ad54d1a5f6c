"""sync_in a project (with exclusions and a post-upload command), sync_out a report."""

import pytest

from pytest_createos.provider import FileMapping, PostUploadCommand, SyncOperation


@pytest.mark.asyncio
async def test_sync_in_then_out(createos_provider, createos_env, createos_lease, tmp_path):
    project = tmp_path / "project"
    (project / "node_modules").mkdir(parents=True)
    (project / "node_modules" / "dep.js").write_text("skipped")
    (project / "debug.log").write_text("skipped")
    (project / "main.py").write_text("print('hi')\n")

    synced = await createos_provider.sync_in(
        createos_env,
        createos_lease,
        [
            SyncOperation(
                operation_id="src",
                mappings=[
                    FileMapping(
                        "directory",
                        str(project),
                        "/paperclip-workspace/project",
                        exclude=["node_modules", "*.log"],
                    )
                ],
                post_upload_commands=[
                    PostUploadCommand(
                        "ls > /paperclip-workspace/report.txt",
                        cwd="/paperclip-workspace/project",
                        timeout_ms=600_000,
                    )
                ],
            )
        ],
    )
    [(operation_id, files, _bytes)] = synced.operations
    assert (operation_id, files) == ("src", 1)  # main.py only

    report = tmp_path / "out" / "report.txt"
    report.parent.mkdir()
    await createos_provider.sync_out(
        createos_env,
        createos_lease,
        [
            SyncOperation(
                "report",
                [FileMapping("file", "/paperclip-workspace/report.txt", str(report), mode=0o644)],
            )
        ],
    )
    assert report.read_text() == "main.py\n"
    assert report.stat().st_mode & 0o777 == 0o644
