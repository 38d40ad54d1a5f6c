"""S3-backed persistent disks of one account: registrations, credentials, attachments.

A disk's files live in a shared bucket store (``ResourceSettings.buckets``, one per endpoint
and bucket) mounted into each sandbox it is attached to (the runtime's ``SharedMounts``, or
``BucketMounts`` where it binds host directories itself): every sandbox sees the same
files at once and they outlive the sandbox and the registration, as a real bucket does; a
``sub_path`` mount shows one folder of it. Credentials are kept but no read ever returns them.
Sources of each decision: docs/fidelity-resources.md.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fake_server.models.errors import (
    BadRequest,
    Conflict,
    NotFound,
    QuotaExceeded,
    ServiceUnavailable,
)
from fake_server.models.paths import check_abs_path
from fake_server.models.resources.base import check_name
from fake_server.models.transitions import GONE
from fake_server.runtime.api import BucketMounts, FeatureUnavailable, SharedMounts

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models.context import Context
    from fake_server.models.sandbox import Sandbox
    from fake_server.runtime.api import SharedBucket

__all__ = ["Attachment", "Disk", "Disks"]

#: Guest paths a disk may not be mounted over.
_RESERVED = ("/", "/bin", "/usr", "/etc", "/dev", "/proc", "/sys", "/tmp", "/root")


@dataclass(slots=True)
class Disk:
    id: str
    name: str
    config: dict[str, Any]
    access_key: str
    secret_key: str
    created_at: float
    kind: str = "s3"
    #: How many times the credentials were replaced (tests read it; the API never shows keys).
    rotations: int = 0


@dataclass(slots=True)
class Attachment:
    disk: Disk
    sandbox: Sandbox
    mount_path: str
    sub_path: str = ""
    status: str = "mounted"
    error: str = ""


class Disks:
    """The account's disks by id, and every attachment of them."""

    def __init__(self, ctx: Context, sandbox: Callable[[str], Sandbox]) -> None:
        self._ctx = ctx
        self._sandbox = sandbox
        self.items: dict[str, Disk] = {}
        self.attachments: list[Attachment] = []

    def require_configured(self) -> None:
        if not self._ctx.resources.disks_configured:
            raise ServiceUnavailable("disks API not configured", code="disks_not_configured")

    # -- registrations ------------------------------------------------------------------------

    def create(self, body: dict[str, Any]) -> tuple[Disk, bool]:
        """The disk and whether it is new (a create is idempotent by name)."""
        self.require_configured()
        name = check_name(body.get("name"))
        kind = body.get("kind", "s3")
        if kind not in ("s3", None, ""):
            raise BadRequest("must be s3", field="kind")
        config = _config(body.get("config"))
        access, secret = _credentials(body.get("credentials"))
        existing = self._by_name(name)
        if existing is not None:
            if existing.config != config:
                raise Conflict(
                    "a disk with this name exists with another config", code="disk_exists"
                )
            return existing, False
        if len(self.items) >= self._ctx.resources.max_disks:
            quota = self._ctx.resources.max_disks
            raise QuotaExceeded(f"disk quota exceeded ({quota} per account)")
        disk = Disk(
            id="disk_" + self._ctx.ids.ulid().lower(),
            name=name,
            config=config,
            access_key=access,
            secret_key=secret,
            created_at=self._ctx.clock.time(),
        )
        self.items[disk.id] = disk
        return disk, True

    def get(self, id_or_name: str) -> Disk:
        self.require_configured()
        disk = self.items.get(id_or_name) or self._by_name(id_or_name)
        if disk is None:
            raise NotFound("disk not found", code="disk_not_found")
        return disk

    def listing(self) -> list[Disk]:
        self.require_configured()
        return list(self.items.values())

    def delete(self, id_or_name: str) -> Disk:
        disk = self.get(id_or_name)
        if self.live_attachments(disk=disk):
            raise Conflict("disk is attached to a sandbox; detach it first", code="disk_attached")
        del self.items[disk.id]
        return disk

    def rotate(self, id_or_name: str, body: dict[str, Any]) -> Disk:
        disk = self.get(id_or_name)
        disk.access_key, disk.secret_key = _credentials(body.get("credentials"))
        disk.rotations += 1
        return disk

    def _by_name(self, name: str) -> Disk | None:
        return next((d for d in self.items.values() if d.name == name), None)

    # -- attachments --------------------------------------------------------------------------

    def live_attachments(
        self, *, disk: Disk | None = None, sandbox: Sandbox | None = None
    ) -> list[Attachment]:
        kept = []
        for item in self.attachments:
            item.sandbox.settle()
            if item.sandbox.status in GONE or item.sandbox.gone():
                continue
            kept.append(item)
        self.attachments = kept
        return [
            a
            for a in kept
            if (disk is None or a.disk is disk) and (sandbox is None or a.sandbox is sandbox)
        ]

    def check_attachment(self, body: Any) -> tuple[Disk, str, str]:
        """Validate one ``{disk_id, mount_path, sub_path}`` (request body or create entry)."""
        self.require_configured()
        if not isinstance(body, dict):
            raise BadRequest("must be an object with disk_id and mount_path", field="disks")
        disk_id = body.get("disk_id")
        if not isinstance(disk_id, str) or not disk_id:
            raise BadRequest("is required", field="disk_id")
        disk = self.get(disk_id)
        mount_path = check_abs_path(body.get("mount_path"), "mount_path")
        if mount_path in _RESERVED or any(mount_path.startswith(p + "/") for p in _RESERVED[1:]):
            raise BadRequest("is a system path a disk cannot be mounted over", field="mount_path")
        sub_path = body.get("sub_path") or ""
        if not isinstance(sub_path, str) or sub_path.startswith("/") or ".." in sub_path.split("/"):
            raise BadRequest("must be relative and must not contain ..", field="sub_path")
        return disk, mount_path, posixpath.normpath(sub_path) if sub_path else ""

    def attach(self, sandbox_id: str, body: Any) -> Attachment:
        disk, mount_path, sub_path = self.check_attachment(body)
        sandbox = self._sandbox(sandbox_id)
        sandbox.require_running()
        return self.mount(sandbox, disk, mount_path, sub_path)

    def mount(self, sandbox: Sandbox, disk: Disk, mount_path: str, sub_path: str) -> Attachment:
        for other in self.live_attachments(sandbox=sandbox):
            if other.mount_path == mount_path:
                raise Conflict("mount_path is already in use in this sandbox", code="mount_busy")
        attachment = Attachment(disk, sandbox, mount_path, sub_path)
        if isinstance(sandbox.machine, BucketMounts):
            space = self._ctx.resources.bucket_space
            _mount_host(sandbox.machine, "\0".join((space, *_key(disk))), mount_path, sub_path)
        else:
            mounting = shared_mounts(sandbox)
            try:
                mounting.mount_shared(self.bucket(disk), mount_path, sub_path)
            except FeatureUnavailable as exc:
                raise Conflict(str(exc), code="runtime_unsupported") from None
            except (OSError, RuntimeError):
                raise BadRequest(_FILE_IN_BUCKET, field="sub_path") from None
        self.attachments.append(attachment)
        return attachment

    def detach(self, sandbox_id: str, disk_id: str, mount_path: str) -> bool:
        """Whether an attachment went (``disk_id`` is the raw id: names are not resolved)."""
        self.require_configured()
        sandbox = self._sandbox(sandbox_id)
        if disk_id not in self.items:
            raise NotFound("disk not found (detach takes the disk id, not its name)")
        matches = [a for a in self.live_attachments(sandbox=sandbox) if a.disk.id == disk_id]
        if mount_path:
            matches = [a for a in matches if a.mount_path == posixpath.normpath(mount_path)]
        elif len(matches) > 1:
            raise BadRequest(
                "is required: the disk is mounted at several paths", field="mount_path"
            )
        self.unmount(matches)
        return bool(matches)

    def bucket(self, disk: Disk) -> SharedBucket:
        key = _key(disk)
        buckets = self._ctx.resources.buckets
        if key not in buckets:
            buckets[key] = self._ctx.runtime_choice().new_bucket()
        return buckets[key]

    def unmount(self, attachments: list[Attachment]) -> None:
        """Drop these attachments and their mounts (a detach, or an out-of-band one)."""
        for attachment in attachments:
            self.attachments.remove(attachment)
            machine = attachment.sandbox.machine
            if isinstance(machine, BucketMounts):
                machine.unmount_bucket(attachment.mount_path)
                continue
            bucket = self.bucket(attachment.disk)
            shared_mounts(attachment.sandbox).unmount_shared(bucket, attachment.mount_path)


_FILE_IN_BUCKET = "names a file in the bucket, not a folder"


def _key(disk: Disk) -> tuple[str, str]:
    """The bucket a disk names: every disk on the same endpoint and bucket shares its files."""
    return (str(disk.config["endpoint"]), str(disk.config["bucket"]))


def _mount_host(machine: BucketMounts, key: str, mount_path: str, sub: str) -> None:
    """Mount on a runtime that binds host directories; its errors as the API answers them."""
    try:
        machine.mount_bucket(key, mount_path, sub)
    except FeatureUnavailable as exc:
        raise Conflict(str(exc), code="runtime_unsupported") from None
    except FileExistsError:
        raise BadRequest("names a file in the sandbox, not a folder", field="mount_path") from None
    except NotADirectoryError:
        raise BadRequest(_FILE_IN_BUCKET, field="sub_path") from None


DISKS_NEED_BASHKIT = (
    "disks need the bashkit runtime; this sandbox runs the process runtime (real programs "
    "see a host directory, where a disk bucket cannot be mounted)"
)


def shared_mounts(sandbox: Sandbox) -> SharedMounts:
    """The sandbox's machine, which mounts in-memory buckets; 409 on a runtime that cannot."""
    machine = sandbox.machine
    if not isinstance(machine, SharedMounts):
        raise Conflict(DISKS_NEED_BASHKIT, code="runtime_unsupported")
    return machine


def _config(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise BadRequest("must be an object with bucket and endpoint", field="config")
    bucket, endpoint = raw.get("bucket"), raw.get("endpoint")
    if not isinstance(bucket, str) or not bucket:
        raise BadRequest("is required", field="config.bucket")
    if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
        raise BadRequest("must be an http(s) URL", field="config.endpoint")
    config: dict[str, Any] = {"bucket": bucket, "endpoint": endpoint}
    region = raw.get("region")
    if region not in (None, ""):
        if not isinstance(region, str):
            raise BadRequest("must be a string", field="config.region")
        config["region"] = region
    path_style = raw.get("use_path_style")
    if path_style not in (None, False):
        if path_style is not True:
            raise BadRequest("must be a boolean", field="config.use_path_style")
        config["use_path_style"] = True
    return config


def _credentials(raw: Any) -> tuple[str, str]:
    if not isinstance(raw, dict):
        raise BadRequest("must be an object with access_key and secret_key", field="credentials")
    access, secret = raw.get("access_key"), raw.get("secret_key")
    if not isinstance(access, str) or not access:
        raise BadRequest("must not be empty", field="credentials.access_key")
    if not isinstance(secret, str) or not secret:
        raise BadRequest("must not be empty", field="credentials.secret_key")
    return access, secret
