"""Bringing a saved world back into a new fake: accounts, sandboxes (paused), their files,
networks, disks, templates, the journal, and ids that do not repeat the earlier starts'."""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.models import Account, Event
from fake_server.models.errors import ApiError
from fake_server.models.resources.disks import shared_mounts
from fake_server.persist.codec import (
    RESTORED_STATUS,
    decode_attachment,
    decode_disk,
    decode_event,
    decode_network,
    decode_sandbox,
    decode_template,
)
from fake_server.runtime.api import BucketMounts, FeatureUnavailable, RuntimeUnavailable

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models import Sandbox
    from fake_server.models.resources.disks import Attachment
    from fake_server.models.resources.holdings import AccountResources
    from fake_server.models.resources.templates import Template
    from fake_server.persist.blobs import Blobs
    from fake_server.persist.saver import Saver
    from fake_server.persist.store import Store
    from fake_server.runtime.api import FileKeeper, Machine, Snapshot
    from fake_server.server import FakeCreateOS

__all__ = ["Restored", "restore"]


@dataclass
class Restored:
    """What a start found in the state directory."""

    accounts: int = 0
    sandboxes: int = 0
    #: Sandboxes that were running (or on their way) and came back paused.
    paused: int = 0
    notes: list[str] = field(default_factory=list)


def derived_seed(seed: int, generation: int) -> int:
    """The id seed of the ``generation``-th start on one state directory: every start draws
    other keys, tokens and names than the starts before it."""
    digest = hashlib.sha256(f"{seed}/{generation}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def restore(
    fake: FakeCreateOS, store: Store, blobs: Blobs, saver: Saver, *, keep_key: bool
) -> Restored:
    """Load everything ``store`` holds into ``fake`` (fresh, not serving) and prime ``saver``.

    ``keep_key``: the fake's default key was chosen by the user, so it stays (an account of
    its own when the store does not know it); otherwise the first saved account's key is the
    default again.
    """
    done = Restored()
    world, ctx = fake.world, fake.world.ctx
    rows = store.rows("accounts")
    generation = store.meta("generation", -1) + 1
    seed = store.meta("seed", fake.seed)
    manifests: dict[str, Snapshot | str] = {
        owner: json.loads(text) for owner, text in store.rows("filesystems")
    }
    saver.manifests = {o: m for o, m in manifests.items() if isinstance(m, list)}
    read = functools.lru_cache(maxsize=4096)(blobs.get)
    if generation:
        ctx.ids.reseed(derived_seed(seed, generation))
        _accounts(fake, rows, saver, keep_key=keep_key)
        done.accounts = len(rows)
    events: list[tuple[list[Any], float]] = []
    for seq, count, offset, text in store.rows("journal"):
        saver.journal_rows.append((seq, count))
        events.extend((values, offset) for values in json.loads(text))
    for values, offset in events[-(ctx.journal.max_events or 0) :]:
        ctx.journal.record(decode_event(values, offset, ctx.clock))
    ctx.journal.tap = saver.events  # from here on, every event is saved
    space = store.meta("bucket_space")
    if isinstance(space, str):  # the process runtime's bucket directories are this start's
        ctx.resources.bucket_space = space
        saver.rows["m:bucket_space"] = json.dumps(space)
    _buckets(fake, saver.manifests, read, saver)
    sandboxes: dict[str, Sandbox] = {}
    saved = [(row[0], row[1], row[2], json.loads(row[2])) for row in store.rows("sandboxes")]
    saved.sort(key=lambda row: (row[3]["created_at"], row[0]))  # listings keep their order
    for sandbox_id, account_key, text, data in saved:
        saver.rows["s:" + sandbox_id] = text
        account = world.accounts.get(account_key)
        if account is None or RESTORED_STATUS.get(data["status"]) is None:
            continue  # destroyed, or its account is gone: the first save deletes it
        try:
            machine = _machine(fake, data, manifests.get("sandbox:" + sandbox_id), read, saver)
            sandbox = decode_sandbox(data, machine, ctx)
        except (RuntimeUnavailable, OSError) as exc:
            done.notes.append(f"sandbox {sandbox_id} not restored (kept in the state): {exc}")
            saver.kept.add(sandbox_id)
            continue
        sandboxes[sandbox_id] = sandbox
        account.sandboxes[sandbox_id] = sandbox
        account.track_usage(sandbox)
        saver.saved_ids.setdefault(account_key, set()).add(sandbox_id)
        done.sandboxes += 1
        if data["status"] != sandbox.status:
            done.paused += _was_running(data)
            ctx.journal.record(
                Event(
                    time=ctx.clock.now(),
                    kind="transition",
                    account_id=account.id,
                    sandbox_id=sandbox_id,
                    detail=f"{data['status']} -> {sandbox.status} (the fake restarted)",
                )
            )
    for key, _position, text in rows:
        _resources(
            fake, world.accounts[key], json.loads(text), sandboxes, saver.manifests, read, done
        )
    numbers = [int(e.request_id[4:]) for e in ctx.journal.events if e.request_id]
    world.requests = max([store.meta("requests", 0), *numbers])
    with store.transaction() as db:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (str(generation),))
        db.execute("INSERT OR REPLACE INTO meta VALUES ('seed', ?)", (json.dumps(seed),))
    return done


def _was_running(data: dict[str, Any]) -> bool:
    """Whether the sandbox ran, or was on its way to run, when it was saved."""
    status = data["status"]
    if status == "forking":
        return bool(data["fork_target"] == "running")
    return status in ("creating", "running", "resuming")


def _accounts(
    fake: FakeCreateOS, rows: list[tuple[Any, ...]], saver: Saver, *, keep_key: bool
) -> None:
    """The saved accounts replace the one a new fake starts with, unless its key was given."""
    world = fake.world
    fresh = dict(world.accounts)
    world.accounts.clear()
    for key, _position, text in rows:
        data = json.loads(text)
        world.accounts[key] = Account(account_id=data["id"], api_key=key, ctx=world.ctx)
        saver.rows["a:" + key] = text
    if rows and fake.api_key not in world.accounts and not keep_key:
        fake.api_key = next(iter(world.accounts))
    for key, account in fresh.items():
        if key == fake.api_key and key not in world.accounts:
            world.accounts[key] = account


def _machine(
    fake: FakeCreateOS,
    data: dict[str, Any],
    manifest: Snapshot | str | None,
    read: Callable[[str], bytes],
    saver: Saver,
) -> Machine:
    """The saved sandbox's machine: adopted from its directory by a runtime that keeps its
    files on disk (``directory`` saved), else its files come back from the snapshot."""
    runtime = fake.runtimes.get(str(data["runtime"]))
    if data.get("directory") is not None:
        return runtime.adopt(data)
    keeper = runtime.keeper()
    if keeper is None:
        raise RuntimeUnavailable(f"the {runtime.name} runtime kept no files of this sandbox")
    owner = "sandbox:" + data["id"]

    def fill(files: Any, install_image: Callable[[], None]) -> None:
        """On first use: the saved files, or the image's (``saver.IMAGE``: never written)."""
        if isinstance(manifest, list):
            _fill(keeper, files, owner, manifest, read, saver)
        else:
            install_image()
            saver.pristine[owner] = time.time()  # after its files were written

    return keeper.adopt(fill)


def _fill(
    keeper: FileKeeper,
    files: Any,
    owner: str,
    manifest: Snapshot,
    read: Callable[[str], bytes],
    saver: Saver,
) -> None:
    """Restore ``files`` and remember its snapshot as the saver will next compare it (the new
    mtimes, the same blobs), so nothing is read or hashed again."""
    keeper.restore(files, manifest, read)
    saver.manifests[owner] = keeper.snapshot(files, saver.blobs, None, copied_from=manifest)


def _buckets(
    fake: FakeCreateOS,
    manifests: dict[str, Snapshot],
    read: Callable[[str], bytes],
    saver: Saver,
) -> None:
    keeper = fake.runtimes.keeper()
    parts: dict[tuple[str, str], dict[str, Any]] = {}
    for owner, manifest in manifests.items():
        if owner.startswith("bucket:"):
            endpoint, name, part = json.loads(owner.removeprefix("bucket:"))
            files = keeper.empty_files()
            _fill(keeper, files, owner, manifest, read, saver)
            parts.setdefault((endpoint, name), {})[part] = files
    for key, found in parts.items():
        fake.world.ctx.resources.buckets[key] = keeper.restored_bucket(found)


def _resources(
    fake: FakeCreateOS,
    account: Account,
    data: dict[str, Any],
    sandboxes: dict[str, Sandbox],
    manifests: dict[str, Snapshot],
    read: Callable[[str], bytes],
    done: Restored,
) -> None:
    resources, clock = account.resources, fake.clock
    mine = {s: sandboxes[s] for s in account.sandboxes if s in sandboxes}
    for raw in data["networks"]:
        network = resources.networks.items[raw["id"]] = decode_network(raw, mine)
        for sandbox_id, member in list(network.members.items()):
            address = f"{member.ip}/{network.cidr.prefixlen}"
            try:
                member.sandbox.machine.join_network(network.id, address)
            except (FeatureUnavailable, OSError) as exc:
                del network.members[sandbox_id]
                done.notes.append(f"sandbox {sandbox_id} left network {network.id}: {exc}")
    for raw in data["disks"]:
        disk = decode_disk(raw)
        resources.disks.items[disk.id] = disk
    for raw in data["attachments"]:
        attachment = decode_attachment(raw, resources.disks.items, mine)
        if attachment is not None and isinstance(attachment.sandbox.machine, BucketMounts):
            _remount(resources, attachment, done)
        elif attachment is not None:
            shared_mounts(attachment.sandbox).mount_shared(
                resources.disks.bucket(attachment.disk), attachment.mount_path, attachment.sub_path
            )
            resources.disks.attachments.append(attachment)
    for raw in data["templates"]:
        template = decode_template(raw, clock)
        _template_image(fake, template, raw, manifests.get(f"template:{template.id}"), read, done)
        resources.templates.items[template.id] = template


def _template_image(
    fake: FakeCreateOS,
    template: Template,
    raw: dict[str, Any],
    manifest: Snapshot | None,
    read: Callable[[str], bytes],
    done: Restored,
) -> None:
    """Bring back a template's image: a layer its runtime kept on disk (``image`` saved as
    what ``Image.saved()`` said), or files saved as a snapshot (``image: true``, as every
    version before layers wrote)."""
    saved = raw["image"]
    try:
        if isinstance(saved, dict):
            template.image = fake.runtimes.get(str(saved["runtime"])).adopt_image(saved)
        elif saved and manifest is not None:
            keeper = fake.runtimes.keeper()
            template.image = keeper.restored_image(
                lambda files: keeper.restore(files, manifest, read)
            )
    except (RuntimeUnavailable, OSError) as exc:
        done.notes.append(f"template {template.id} lost its image: {exc}")


def _remount(resources: AccountResources, attachment: Attachment, done: Restored) -> None:
    """Mount a process-runtime sandbox's disk again (its bucket directory is in the state
    directory, files and all); one that cannot be is dropped with a note."""
    try:
        resources.disks.mount(
            attachment.sandbox, attachment.disk, attachment.mount_path, attachment.sub_path
        )
    except (ApiError, OSError) as exc:
        done.notes.append(f"sandbox {attachment.sandbox.id} lost disk {attachment.disk.id}: {exc}")
