"""Custom rootfs templates of one account: Dockerfile builds on the fake clock.

The build runs when the template is created (``RUN`` through the sandbox shell on a private
disk) and its result is then revealed on the fake clock: ``pending`` for
``template_pending_seconds``, ``building`` for ``template_step_seconds`` per Dockerfile step,
then ``ready`` or ``failed``; each log line appears when its step is reached. A sandbox
created with the template's id or name as ``rootfs`` starts from a copy of the built files
and the ``ENV`` values.

A build that takes real time and was under way when the fake stopped (``serve --state-dir``)
is started again from its Dockerfile when the fake serves again, as the next build *attempt*
(the service numbers attempts: the TS SDK's ``TemplateLogEvent.attempt``, ``logs`` filtered
by ``attempt``); closing the fake cancels it first (``cancel_builds``): its build sandbox goes.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.models.errors import BadRequest, Conflict, NotFound, QuotaExceeded
from fake_server.models.resources.base import check_name
from fake_server.models.resources.dockerfile import BASE_IMAGES, Instruction, parse, parse_env
from fake_server.models.waiting import handed_off

if TYPE_CHECKING:
    from fake_server.models.context import Context
    from fake_server.models.sandbox import Sandbox
    from fake_server.runtime.api import Builder, Image

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
    #: The build attempt that wrote it (a build started again after a restart is the next).
    attempt: int = 1


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
    image: Image | None = None
    env: dict[str, str] = field(default_factory=dict)
    size: int = 0
    #: A build that takes real time is still running (``building`` until it ends).
    running: bool = False
    task: asyncio.Task[None] | None = field(default=None, repr=False, compare=False)
    #: The build attempt under way or last made (``LogLine.attempt``).
    attempt: int = 1
    #: A build the fake stopped during, to start again once it serves (``resume_builds``).
    interrupted: bool = False

    def status(self, now: float) -> str:
        if now < self.started + self.pending:
            return "pending"
        if self.running or now < self.started + self.pending + self.duration:
            return "building"
        return self.outcome

    def finished_at(self) -> float:
        return self.started + self.pending + self.duration

    def visible_log(self, now: float) -> list[LogLine]:
        began = self.started + self.pending
        return [
            line
            for line in self.log
            if began + line.offset <= now or line.attempt < self.attempt  # an earlier attempt's
        ]

    def fail(self, now: float, reason: str) -> None:
        """Out-of-band: the build ends ``failed`` now; the log keeps what was shown so far."""
        earlier = [line for line in self.log if line.attempt < self.attempt]
        if now < self.started + self.pending:  # still queued: no step has run
            self.pending = max(0.0, now - self.started)
            self.log = earlier
        at = max(0.0, now - self.started - self.pending)
        self.log = [line for line in self.log if line.offset <= at or line in earlier]
        self.log.append(LogLine(at, "error", f"build failed: {reason}", self.attempt))
        self.duration = at
        self.outcome = "failed"
        self.running = self.interrupted = False
        self.stop()
        if self.image is not None:
            self.image.discard()
        self.image, self.size = None, 0

    def stop(self) -> None:
        """Cancel a build still running (its builder drops what it made)."""
        task, self.task = self.task, None
        if task is not None and not task.done():
            task.cancel()


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
        build = _Build(self._ctx, template, steps)
        if build.start():  # real time: the create answers now, the build goes on
            template.started = self._ctx.clock.now()
            template.running = True
            template.task = asyncio.get_running_loop().create_task(build.run())
            return template
        try:
            await build.run()
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
        template.stop()
        if template.image is not None:
            with contextlib.suppress(OSError):
                template.image.discard()
        return template

    def clear(self) -> None:
        """Drop every template, its build and its image (a reset)."""
        for template_id in list(self.items):
            self.delete(template_id)

    def cancel_builds(self) -> list[asyncio.Task[None]]:
        """The fake stops: cancel every build under way (each builder drops its build
        sandbox: processes killed, directories removed), leaving the templates ``building``
        so a saved state starts them again (``resume_builds``); the tasks, to wait for."""
        tasks = []
        for template in self.items.values():
            task, template.task = template.task, None
            if task is not None and not task.done():
                task.cancel()
                tasks.append(task)
        return tasks

    def resume_builds(self) -> None:
        """Start again, from its Dockerfile, each build the fake stopped during (restored
        ``interrupted``); on the running loop, once the fake serves."""
        for template in self.items.values():
            if not template.interrupted:
                continue
            template.interrupted = False
            build = _Build(self._ctx, template, parse(template.dockerfile))
            if build.start() or build.builder is not None:
                template.task = asyncio.get_running_loop().create_task(build.run())

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
    """Runs a Dockerfile's steps on the runtime's ``Builder`` and records the log.

    A build on the fake's clock (bashkit's) runs inside the create and its log is revealed
    step by step; one that takes real time (the process runtime's) runs after the create
    answered, ``building`` until it ends, each line shown when it was written."""

    def __init__(self, ctx: Context, template: Template, steps: list[Instruction]) -> None:
        self.ctx = ctx
        self.template = template
        self.steps = steps
        self.step = 0.0
        self.workdir = "/root"
        self.builder: Builder | None = None

    def say(self, line: str, level: str = "info") -> None:
        template = self.template
        if template.running:  # real time: when it was written, past the pending time
            self.step = max(0.0, self.ctx.clock.now() - template.started - template.pending)
        template.log.append(LogLine(self.step, level, line, template.attempt))

    def start(self) -> bool:
        """Apply ``FROM`` and make the builder; whether the rest runs in the background."""
        first = self.steps[0]
        self.say(f"Step 1/{len(self.steps)} : {first.text}")
        error = self.base(first)
        if error:
            self.end_failed(1, first, error)
            return False
        from fake_server.runtime.api import RuntimeUnavailable

        try:
            self.builder = self.ctx.runtime_choice().builder(self.template.base, self.ctx.clock)
        except (RuntimeUnavailable, OSError) as exc:
            self.end_failed(1, first, f"the build cannot run here: {exc}")
            return False
        return self.builder.background

    async def run(self) -> None:
        template, builder = self.template, self.builder
        if builder is None:
            return
        seconds = self.ctx.resources.template_step_seconds
        total = len(self.steps)
        try:
            for index, step in enumerate(self.steps[1:], 2):
                self.step = (index - 1) * seconds
                self.say(f"Step {index}/{total} : {step.text}")
                error = await self.apply(step, builder)
                if error:
                    self.end_failed(index, step, error)
                    builder.discard()
                    return
            try:
                image = await builder.finish()
            except OSError as exc:  # the layer could not be kept (a full disk): nothing is
                self.end_failed(total, self.steps[-1], f"the result cannot be kept: {exc}")
                return
        except BaseException:
            builder.discard()
            raise
        finally:
            self.builder = None
        if template.outcome == "failed":  # failed out of band meanwhile
            image.discard()
            return
        self.step = total * seconds
        self.say(f"built template {template.name} on {template.base}")
        template.image, template.size = image, image.size
        self.end(total * seconds, "ready")

    def end(self, duration: float, outcome: str) -> None:
        template = self.template
        if template.running:
            duration = max(0.0, self.ctx.clock.now() - template.started - template.pending)
            template.running = False
        template.outcome, template.duration = outcome, duration
        template.task = None

    def end_failed(self, index: int, step: Instruction, error: str) -> None:
        self.step = index * self.ctx.resources.template_step_seconds
        self.say(f"build failed at line {step.line}: {error}", "error")
        self.end(self.step, "failed")

    def base(self, step: Instruction) -> str:
        image = step.argument.split(" AS ")[0].split(" as ")[0].strip()
        base = image if image in self.ctx.catalog.rootfs else BASE_IMAGES.get(image)
        if base is None:
            return f"unknown base image {image!r}"
        self.template.base = self.template.base or base
        return ""

    async def apply(self, step: Instruction, builder: Builder) -> str:
        if step.keyword == "ENV":
            try:
                self.template.env.update(parse_env(step.argument))
            except ValueError as exc:
                return f"ENV {exc}"
            return ""
        if step.keyword == "RUN":
            return await self._run(step.argument, builder)
        if step.keyword == "WORKDIR":
            path = posixpath.normpath(posixpath.join(self.workdir, step.argument or "/"))
            builder.make_dir(path)
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

    async def _run(self, script: str, builder: Builder) -> str:
        from fake_server.runtime import CapacityError, CommandNotStarted, ProcessSignal
        from fake_server.runtime.api import run_step

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = [""]
        live = self.template.running  # real time: each line when it is written

        async def sink(data: bytes) -> None:
            text[0] += decoder.decode(data)
            if live:
                *lines, text[0] = text[0].split("\n")
                for line in lines:
                    self.say(line.rstrip("\r"))

        env = self.template.env
        try:
            if live:
                code = await run_step(
                    builder.step_runner(), script, cwd=self.workdir, env=env, on_output=sink
                )
            else:
                with handed_off(self.ctx.clock) as bridge:
                    code = await run_step(
                        builder.step_runner(),
                        script,
                        cwd=self.workdir,
                        env=env,
                        on_output=sink,
                        started=bridge.release,
                    )
        except ProcessSignal as exc:
            return f"RUN killed by {exc.signal}"
        except (CapacityError, CommandNotStarted, OSError) as exc:
            return f"RUN could not start: {exc}"
        for line in (text[0] + decoder.decode(b"", final=True)).splitlines():
            self.say(line)
        return f"RUN exited with status {code}" if code else ""


def seed_sandbox(template: Template, sandbox: Sandbox) -> None:
    """A new sandbox from the template gets its ``ENV`` values (its files came with its
    machine: ``Runtimes.new_sandbox(..., image=)``)."""
    sandbox.envs.update(template.env)
