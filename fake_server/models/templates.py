"""Custom rootfs templates of one account: Dockerfile builds on the fake clock.

The build runs when the template is created (``RUN`` through the sandbox shell on a private
disk) and its result is then revealed on the fake clock: ``pending`` for
``template_pending_seconds``, ``building`` for ``template_step_seconds`` per Dockerfile step,
then ``ready`` or ``failed``; each log line appears when its step is reached. A sandbox
created with the template's id or name as ``rootfs`` starts from a copy of the built files
and the ``ENV`` values.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.models.dockerfile import BASE_IMAGES, Instruction, parse, parse_env
from fake_server.models.errors import BadRequest, Conflict, NotFound, QuotaExceeded
from fake_server.models.resource_base import check_name
from fake_server.models.waiting import handed_off

if TYPE_CHECKING:
    from fake_server.models.context import Context
    from fake_server.models.sandbox import Sandbox
    from fake_server.runtime.bashkit import SandboxDisk

__all__ = ["LogLine", "Template", "Templates"]

#: What the fake does not do with these instructions (logged as not honoured).
_IGNORED = {
    "WORKDIR": "",
    "CMD": "sandboxes run no default command",
    "ENTRYPOINT": "sandboxes run no default command",
    "EXPOSE": "ports are reached through ingress",
    "USER": "commands run as the runtime's user (root, as on the devbox VM)",
}


@dataclass(frozen=True, slots=True)
class LogLine:
    offset: float  # fake seconds after the build started
    level: str
    line: str


@dataclass(slots=True)
class Template:
    id: str
    name: str
    base: str
    dockerfile: str
    created_at: float  # wall (fake) time
    started: float  # clock reading when pending began
    pending: float
    duration: float = 0.0
    outcome: str = "ready"
    log: list[LogLine] = field(default_factory=list)
    image: SandboxDisk | None = None
    env: dict[str, str] = field(default_factory=dict)
    size: int = 0

    def status(self, now: float) -> str:
        if now < self.started + self.pending:
            return "pending"
        if now < self.started + self.pending + self.duration:
            return "building"
        return self.outcome

    def finished_at(self) -> float:
        return self.started + self.pending + self.duration

    def visible_log(self, now: float) -> list[LogLine]:
        began = self.started + self.pending
        return [line for line in self.log if began + line.offset <= now]

    def fail(self, now: float, reason: str) -> None:
        """Out-of-band: the build ends ``failed`` now; the log keeps what was shown so far."""
        if now < self.started + self.pending:  # still queued: no step has run
            self.pending = max(0.0, now - self.started)
            self.log = []
        at = max(0.0, now - self.started - self.pending)
        self.log = [line for line in self.log if line.offset <= at]
        self.log.append(LogLine(at, "error", f"build failed: {reason}"))
        self.duration = at
        self.outcome = "failed"
        self.image, self.size = None, 0


class Templates:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self.items: dict[str, Template] = {}

    async def create(self, body: dict[str, Any]) -> Template:
        name = check_name(body.get("name"))
        steps = parse(body.get("dockerfile"))
        base_field = body.get("base") or ""
        if not isinstance(base_field, str):
            raise BadRequest("must be a string", field="base")
        if base_field and base_field not in self._ctx.catalog.rootfs:
            raise BadRequest("unknown rootfs", field="base")
        if any(t.name == name for t in self.items.values()):
            raise Conflict("a template with this name already exists", code="template_exists")
        settings = self._ctx.resources
        if len(self.items) >= settings.max_templates:
            raise QuotaExceeded(f"template quota exceeded ({settings.max_templates} per account)")
        template = Template(
            id="tpl_" + self._ctx.ids.ulid().lower(),
            name=name,
            base=base_field,
            dockerfile=str(body["dockerfile"]),
            created_at=self._ctx.clock.time(),
            started=0.0,
            pending=settings.template_pending_seconds,
        )
        self.items[template.id] = template
        try:
            await _Build(self._ctx, template, steps).run()
        finally:
            template.started = self._ctx.clock.now()
        return template

    def get(self, id_or_name: str) -> Template:
        template = self.items.get(id_or_name) or next(
            (t for t in self.items.values() if t.name == id_or_name), None
        )
        if template is None:
            raise NotFound("template not found", code="template_not_found")
        return template

    def delete(self, template_id: str) -> Template:
        template = self.get(template_id)
        del self.items[template.id]
        return template

    def listing(self) -> list[Template]:
        return list(self.items.values())

    def rootfs_names(self) -> set[str]:
        """Every ``rootfs`` value that names one of these templates (ids and names)."""
        return {*self.items, *(t.name for t in self.items.values())}

    def rootfs(self, name: str) -> Template | None:
        """The template a create's ``rootfs`` names, when it names one (it must be ready)."""
        try:
            template = self.get(name)
        except NotFound:
            return None
        status = template.status(self._ctx.clock.now())
        if status != "ready" or template.image is None:
            raise BadRequest(f"template is not ready (status {status})", field="rootfs")
        return template


class _Build:
    """Runs a Dockerfile's steps against a private disk and records the log."""

    def __init__(self, ctx: Context, template: Template, steps: list[Instruction]) -> None:
        self.ctx = ctx
        self.template = template
        self.steps = steps
        self.step = 0.0
        self.workdir = "/root"

    def say(self, line: str, level: str = "info") -> None:
        self.template.log.append(LogLine(self.step, level, line))

    async def run(self) -> None:
        from fake_server.runtime.bashkit import SandboxDisk

        template = self.template
        disk = SandboxDisk()
        seconds = self.ctx.resources.template_step_seconds
        total = len(self.steps)
        for index, step in enumerate(self.steps, 1):
            self.step = (index - 1) * seconds
            self.say(f"Step {index}/{total} : {step.text}")
            error = await self.apply(step, disk)
            if error:
                self.step = index * seconds
                self.say(f"build failed at line {step.line}: {error}", "error")
                template.outcome, template.duration = "failed", index * seconds
                return
        self.step = total * seconds
        template.image, template.size = disk, disk.used_bytes()
        template.duration = total * seconds
        self.say(f"built template {template.name} on {template.base}")

    async def apply(self, step: Instruction, disk: SandboxDisk) -> str:
        if step.keyword == "FROM":
            image = step.argument.split(" AS ")[0].split(" as ")[0].strip()
            base = image if image in self.ctx.catalog.rootfs else BASE_IMAGES.get(image)
            if base is None:
                return f"unknown base image {image!r}"
            self.template.base = self.template.base or base
            return ""
        if step.keyword == "ENV":
            try:
                self.template.env.update(parse_env(step.argument))
            except ValueError as exc:
                return f"ENV {exc}"
            return ""
        if step.keyword == "RUN":
            return await self._run(step.argument, disk)
        if step.keyword == "WORKDIR":
            path = posixpath.normpath(posixpath.join(self.workdir, step.argument or "/"))
            disk.write_file(path + "/.keep", b"")
            disk.remove(path + "/.keep")
            self.workdir = path
            self.say(
                "note: WORKDIR applies to the following RUN lines; sandboxes still start in "
                "/root (the fake does not change their default directory)",
                "warn",
            )
            return ""
        reason = _IGNORED.get(step.keyword, "the fake has no equivalent")
        self.say(f"not honoured by the fake: {step.keyword} (line {step.line}): {reason}", "warn")
        return ""

    async def _run(self, script: str, disk: SandboxDisk) -> str:
        from fake_server.runtime import ProcessSignal
        from fake_server.runtime.bashkit import Shell

        output: list[bytes] = []

        async def sink(data: bytes) -> None:
            output.append(data)

        shell = Shell(disk, self.ctx.clock, self.ctx.commands)
        with handed_off(self.ctx.clock) as bridge:
            try:
                code = await shell.run(
                    ["bash", "-c", script],
                    cwd=self.workdir,
                    env=self.template.env,
                    on_stdout=sink,
                    on_stderr=sink,
                    started=bridge.release,
                )
            except ProcessSignal as exc:
                return f"RUN killed by {exc.signal}"
        for text in b"".join(output).decode(errors="replace").splitlines():
            self.say(text)
        return f"RUN exited with status {code}" if code else ""


#: Trees a sandbox's kernel provides: never copied from a template's files.
_KERNELS = frozenset({"/dev", "/proc", "/sys"})


def seed_sandbox(template: Template, sandbox: Sandbox) -> None:
    """Copy the built files and ENV values into a new sandbox's disk.

    Files the build left as the bashkit image has them (its ``/usr/bin`` command wrappers,
    ``/etc/os-release``…) are not copied: on the process runtime they would replace the
    sandbox's real programs."""
    from fake_server.runtime.bashkit import vfs
    from fake_server.runtime.bashkit.disk import SandboxDisk
    from fake_server.runtime.process.dirdisk import DirDisk

    image = template.image
    if image is None:
        return
    base = SandboxDisk()
    try:
        stack = ["/"]
        while stack:
            directory = stack.pop()
            for name, entry in vfs.list_dir(image.fs, directory):
                path = posixpath.join(directory, name)
                if path in _KERNELS:
                    continue  # the sandbox's kernel provides them (bashkit's are stand-ins)
                if entry.kind == "directory":
                    if isinstance(sandbox.disk, SandboxDisk):
                        vfs.mkdirs(sandbox.disk.fs, path)
                    elif isinstance(sandbox.disk, DirDisk):
                        sandbox.disk.make_dirs(path)
                    stack.append(path)
                elif entry.kind == "file":
                    data = image.read_file(path)
                    if not (base.exists(path) and base.read_file(path) == data):
                        sandbox.disk.write_file(path, data, mode=entry.mode)
    finally:
        base.wipe()
    sandbox.envs.update(template.env)
