"""Environment config validation (spec §6.1): exact messages, normalisation, key fallback."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_createos.provider import CreateosError, CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from tests.provider.conftest import ScriptedApi

URL_RULES = (
    "CreateOS API URL must be an HTTPS origin (optionally ending in /v1); "
    "HTTP is allowed on loopback only."
)
KEY_CHARS = "CreateOS API key must contain printable ASCII characters only."
TIMEOUT_RULE = "timeoutMs must be an integer between 1 and 86400000."
NEEDS_KEY = "CreateOS requires an API key in the environment config or CREATEOS_API_KEY."
CUSTOM_NEEDS_KEY = (
    "Custom CreateOS API endpoints require an explicit environment API key; "
    "the host fallback is only available for https://api.sb.createos.sh."
)


def validate(**config: Any) -> tuple[bool, dict[str, Any] | None, list[str]]:
    result = CreateosProvider().validate_config({"apiUrl": "https://api.test", **config})
    return result.ok, result.normalized_config, result.errors


def error_of(config: dict[str, Any]) -> str:
    result = CreateosProvider().validate_config(config)
    assert not result.ok
    assert result.normalized_config is None
    assert len(result.errors) == 1
    return result.errors[0]


@pytest.mark.parametrize(
    "url",
    [
        "https://user:secret@host.test",
        "https://host.test/?key=secret",
        "http://remote.test",
        "file:///tmp/socket",
        "https://host.test/other",
        "https://host.test/v1/other",
        "https://host.test/#fragment",
        "https://user@host.test",
    ],
)
def test_rejected_api_urls_name_the_rule_and_never_echo_the_url(url: str) -> None:
    """URLs outside an HTTPS origin are refused with one fixed message."""
    message = error_of({"apiUrl": url, "shape": "s-1vcpu-1gb"})
    assert message == URL_RULES
    assert "secret" not in message


@pytest.mark.parametrize("url", ["not a url", "host.test", "https://", "https://host.test:99999"])
def test_unparsable_api_urls_are_invalid(url: str) -> None:
    """Strings that are not URLs at all get the "invalid" message."""
    assert error_of({"apiUrl": url, "shape": "s"}) == "CreateOS API URL is invalid."


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://api.test/v1/", "https://api.test"),
        ("https://api.test/v1", "https://api.test"),
        ("https://api.test/", "https://api.test"),
        ("HTTPS://API.Test:443", "https://api.test"),
        ("https://api.test:8443/v1", "https://api.test:8443"),
        ("  https://api.test  ", "https://api.test"),
        ("http://127.0.0.1:3109/v1/", "http://127.0.0.1:3109"),
        ("http://localhost", "http://localhost"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
    ],
)
def test_api_url_is_normalized_to_its_origin(url: str, origin: str) -> None:
    """The stored URL is the origin, so leases compare equal whatever spelling was used."""
    ok, normalized, _ = validate(apiUrl=url, shape="s")
    assert ok
    assert normalized is not None
    assert normalized["apiUrl"] == origin


def test_normalized_config_has_every_field_with_defaults() -> None:
    """Defaults: timeoutMs 300000, reuseLease false, optional strings null; values trimmed."""
    ok, normalized, errors = validate(shape="  s-1vcpu-1gb ", apiKey=" key ", region="eu")
    assert (ok, errors) == (True, [])
    assert normalized == {
        "apiUrl": "https://api.test",
        "apiKey": "key",
        "shape": "s-1vcpu-1gb",
        "timeoutMs": 300000,
        "reuseLease": False,
        "rootfs": None,
        "region": "eu",
    }


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "CreateOS requires an API URL."),
        ({"apiUrl": None}, "CreateOS requires an API URL."),
        ({"apiUrl": ""}, "apiUrl must be a non-empty string."),
        ({"apiUrl": "   "}, "apiUrl must be a non-empty string."),
        ({"apiUrl": 5}, "apiUrl must be a non-empty string."),
        ({"apiUrl": "https://a.test\0"}, "apiUrl must be a non-empty string."),
        ({"apiUrl": "https://a.test"}, "CreateOS requires a shape from its shape catalog."),
        ({"apiUrl": "https://a.test", "shape": ""}, "shape must be a non-empty string."),
        ({"apiUrl": "https://a.test", "shape": ["s"]}, "shape must be a non-empty string."),
        (
            {"apiUrl": "https://a.test", "shape": "s", "apiKey": " "},
            "apiKey must be a non-empty string.",
        ),
        (
            {"apiUrl": "https://a.test", "shape": "s", "rootfs": ""},
            "rootfs must be a non-empty string.",
        ),
        (
            {"apiUrl": "https://a.test", "shape": "s", "region": 1},
            "region must be a non-empty string.",
        ),
        (
            {"apiUrl": "https://a.test", "shape": "s", "reuseLease": "true"},
            "reuseLease must be a boolean.",
        ),
        (
            {"apiUrl": "https://a.test", "shape": "s", "reuseLease": 1},
            "reuseLease must be a boolean.",
        ),
    ],
)
def test_field_errors(config: dict[str, Any], message: str) -> None:
    """Each malformed field is reported with its exact message."""
    assert error_of(config) == message


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, 1.5, 86400001, "500", True])
def test_bad_timeouts_are_rejected(timeout: object) -> None:
    """timeoutMs must be an integer in 1..86400000 (booleans and strings are not numbers)."""
    assert error_of({"apiUrl": "https://a.test", "shape": "s", "timeoutMs": timeout}) == (
        TIMEOUT_RULE
    )


@pytest.mark.parametrize(("timeout", "stored"), [(1, 1), (86400000, 86400000), (5000.0, 5000)])
def test_timeout_bounds_are_inclusive(timeout: float, stored: int) -> None:
    """Both bounds are accepted; an integral float is stored as an int."""
    _, normalized, _ = validate(shape="s", timeoutMs=timeout)
    assert normalized is not None
    assert normalized["timeoutMs"] == stored
    assert type(normalized["timeoutMs"]) is int


@pytest.mark.parametrize(("value", "stored"), [(True, True), (False, False), (None, False)])
def test_reuse_lease_is_true_only_for_true(value: object, stored: bool) -> None:
    """Only the boolean ``true`` turns lease reuse on."""
    _, normalized, _ = validate(shape="s", reuseLease=value)
    assert normalized is not None
    assert normalized["reuseLease"] is stored


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"apiUrl": "ftp://x", "shape": None, "timeoutMs": 0}, URL_RULES),
        (
            {"apiUrl": "https://a.test", "timeoutMs": 0},
            "CreateOS requires a shape from its shape catalog.",
        ),
        ({"apiUrl": "https://a.test", "shape": "s", "timeoutMs": 0, "reuseLease": 1}, TIMEOUT_RULE),
        (
            {"apiUrl": "https://a.test", "shape": "s", "reuseLease": 1, "apiKey": ""},
            "reuseLease must be a boolean.",
        ),
        (
            {"apiUrl": "https://a.test", "shape": "s", "apiKey": "", "rootfs": ""},
            "apiKey must be a non-empty string.",
        ),
        (
            {"apiUrl": "https://a.test", "shape": "s", "rootfs": "", "region": ""},
            "rootfs must be a non-empty string.",
        ),
    ],
)
def test_check_order(config: dict[str, Any], message: str) -> None:
    """With several problems, the first in spec order is reported."""
    assert error_of(config) == message


def test_non_mapping_config_is_invalid() -> None:
    """A config that is not an object gets the generic message."""
    result = CreateosProvider().validate_config(["apiUrl"])  # type: ignore[arg-type]
    assert (result.ok, result.errors) == (False, ["Invalid CreateOS configuration."])


def test_validation_does_not_resolve_the_api_key() -> None:
    """A custom endpoint without a key still validates: the key is checked at use."""
    ok, normalized, _ = validate(apiUrl="http://127.0.0.1:3109", shape="s")
    assert ok
    assert normalized is not None
    assert normalized["apiKey"] is None


def env_with(config: dict[str, Any]) -> Environment:
    return Environment(company_id="company-a", environment_id="env-a", config=config)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "url",
    [
        "https://api.sb.createos.sh.attacker.test",
        "https://api.sb.createos.sh:8443",
        "http://127.0.0.1:3109",
    ],
)
async def test_custom_endpoint_needs_an_explicit_key(url: str) -> None:
    """The CREATEOS_API_KEY fallback never leaves for another host."""
    provider = CreateosProvider(pacer=Pacer.disabled(), environ={"CREATEOS_API_KEY": "host-key"})
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env_with({"apiUrl": url, "shape": "s"}), run_id="r1")
    assert str(caught.value) == CUSTOM_NEEDS_KEY
    await provider.shutdown()


@pytest.mark.asyncio
@pytest.mark.parametrize("key", [None, "", "   ", "a\nb", "a\rb"])
async def test_public_endpoint_needs_a_usable_key(key: str | None) -> None:
    """Without a configured key the host variable must hold a single-line key."""
    environ = {} if key is None else {"CREATEOS_API_KEY": key}
    provider = CreateosProvider(pacer=Pacer.disabled(), environ=environ)
    config = {"apiUrl": "https://api.sb.createos.sh", "shape": "s"}
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env_with(config), run_id="r1")
    assert str(caught.value) == NEEDS_KEY
    await provider.shutdown()


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["abc\ndef", "abc\rdef", "abc\0def", "\0", "a\r\nb"])
async def test_configured_key_with_a_line_break_or_nul_is_no_key(
    scripted: ScriptedApi, key: str
) -> None:
    """The TypeScript provider's message for a configured key holding CR, LF or NUL (its
    ``resolveApiKey`` treats such a key as none), before any request, the key never shown."""
    provider = CreateosProvider(pacer=Pacer.disabled())
    config = {"apiUrl": scripted.url, "shape": "s", "apiKey": key}
    assert provider.validate_config(config).errors == [NEEDS_KEY]
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env_with(config), run_id="r1")
    assert str(caught.value) == NEEDS_KEY
    assert scripted.calls == []
    await provider.shutdown()


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["clé-secrète", "abc\tdef", "abc\x7fdef", "k\u2028ey"])
async def test_configured_key_outside_printable_ascii_is_refused(
    scripted: ScriptedApi, key: str
) -> None:
    """A key an HTTP header cannot carry is refused by validation already, before any request,
    and the message never shows the key."""
    provider = CreateosProvider(pacer=Pacer.disabled())
    config = {"apiUrl": scripted.url, "shape": "s", "apiKey": key}
    assert provider.validate_config(config).errors == [KEY_CHARS]
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env_with(config), run_id="r1")
    assert str(caught.value) == KEY_CHARS
    assert scripted.calls == []
    await provider.shutdown()


@pytest.mark.asyncio
async def test_host_variable_outside_printable_ascii_is_refused() -> None:
    """CREATEOS_API_KEY with a non-ASCII character: a CreateosError, not a UnicodeEncodeError."""
    provider = CreateosProvider(pacer=Pacer.disabled(), environ={"CREATEOS_API_KEY": "clé"})
    config = {"apiUrl": "https://api.sb.createos.sh", "shape": "s"}
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env_with(config), run_id="r1")
    assert str(caught.value) == KEY_CHARS
    await provider.shutdown()


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("reuselease", "Unknown CreateOS config key 'reuselease' (did you mean 'reuseLease'?)."),
        ("timeout_ms", "Unknown CreateOS config key 'timeout_ms' (did you mean 'timeoutMs'?)."),
        (
            "image",
            "Unknown CreateOS config key 'image' (known keys: apiUrl, apiKey, shape, "
            "timeoutMs, reuseLease, rootfs, region).",
        ),
    ],
)
def test_unknown_config_keys_are_refused(key: str, message: str) -> None:
    """A misspelled key is an error, not a setting silently ignored."""
    assert error_of({"apiUrl": "https://api.test", "shape": "s", key: True}) == message


@pytest.mark.asyncio
async def test_config_errors_happen_before_any_request(scripted: ScriptedApi) -> None:
    """Acquire with a bad config or an expiry request sends nothing."""
    provider = CreateosProvider(clock=scripted.clock, pacer=Pacer.disabled())
    good = {"apiUrl": scripted.url, "shape": "s", "apiKey": "k"}
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(env_with({**good, "timeoutMs": 0}), run_id="r1")
    assert str(caught.value) == TIMEOUT_RULE
    with pytest.raises(CreateosError) as caught:
        await provider.acquire_lease(
            env_with({"apiUrl": "ftp://broken"}), run_id="r1", requested_expires_at="2030-01-01"
        )
    assert str(caught.value) == (
        "CreateOS does not yet support leases with a guaranteed expiration deadline."
    )
    assert scripted.calls == []
    await provider.shutdown()


def test_configured_key_wins_over_the_host_variable() -> None:
    """An explicit key is used even when CREATEOS_API_KEY is set."""
    from pytest_createos.provider._config import parse_config, resolve_api_key

    config = parse_config({"apiUrl": "https://api.sb.createos.sh", "shape": "s", "apiKey": "mine"})
    assert resolve_api_key(config, {"CREATEOS_API_KEY": "host"}) == "mine"
    fallback = parse_config({"apiUrl": "https://api.sb.createos.sh/v1", "shape": "s"})
    assert resolve_api_key(fallback, {"CREATEOS_API_KEY": "  host  "}) == "host"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
CONFIG_KEYS = st.sampled_from(
    ["apiUrl", "apiKey", "shape", "timeoutMs", "reuseLease", "rootfs", "region", "other"]
)
CONFIGS = st.dictionaries(CONFIG_KEYS, JSON_VALUES, max_size=8)
URLS = st.one_of(
    st.text(max_size=60),
    st.builds(
        "{}://{}{}".format,
        st.sampled_from(["https", "http", "HTTP", "file", "ftp", ""]),
        st.text(max_size=30),
        st.text(max_size=20),
    ),
)


def _check_validation(config: dict[str, Any], url: str) -> None:
    """Any JSON config gets a verdict: ok with a normalized config, or exactly one message."""
    provider = CreateosProvider()
    for candidate in (config, {**config, "apiUrl": url, "shape": "s"}):
        result = provider.validate_config(candidate)
        if result.ok:
            assert result.normalized_config is not None
            assert result.errors == []
            normalized = result.normalized_config["apiUrl"]
            assert normalized.startswith(("https://", "http://"))
            assert provider.validate_config(result.normalized_config).ok
        else:
            assert len(result.errors) == 1
            assert result.errors[0].endswith(".")


@given(config=CONFIGS, url=URLS)
def test_validation_never_raises(config: dict[str, Any], url: str) -> None:
    """A few examples here (the suite's hypothesis profile); many in the reliability twin."""
    _check_validation(config, url)


@pytest.mark.reliability
@settings(max_examples=200)
@given(config=CONFIGS, url=URLS)
def test_validation_never_raises_on_many_configs(config: dict[str, Any], url: str) -> None:
    _check_validation(config, url)
