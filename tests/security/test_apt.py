"""apt inside devbox:1: with 65,536 ids, apt drops to ``_apt`` as on a VM and installs.

The one test of the suite that reaches past the machine: a sandbox installs a small package
from the Debian archive the host's own apt uses (through the fake's NAT, where nftables is
installed). Skipped, saying why, where the sandbox has no route out.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.security._attack import Target

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(
        shutil.which("nft") is None, reason="sandboxes have no route out without nftables"
    ),
]


def test_apt_get_update_and_install_of_a_small_package(serve: Target) -> None:
    sandbox = serve.create()
    code, out = serve.sh(
        sandbox,
        "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null && "
        "apt-get install -y -qq --no-install-recommends hello >/dev/null 2>&1 && hello",
        timeout=600,
    )
    assert (code, out) == (0, "Hello, world!\n"), out
