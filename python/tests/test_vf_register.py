"""verifiers' ``register_client``: an engine URL a rollout's client names is registered with the
operator's control token only when the operator's ``register_allow`` lists it (issue 48 item 10;
the env-server attack itself runs in test/integration/verifiers.test.ts)."""

from __future__ import annotations

import pytest

from polar_rollouts.register_allow import RegisterRefused, allowed_replica, engine_root

ALLOW = ["http://10.0.0.5:8000", "https://engine.internal/v1/"]


@pytest.mark.parametrize(
    ("given", "root"),
    [
        ("http://10.0.0.5:8000/v1", "http://10.0.0.5:8000"),
        ("http://10.0.0.5:8000/", "http://10.0.0.5:8000"),
        ("HTTP://10.0.0.5:8000/v1/", "http://10.0.0.5:8000"),
        ("https://ENGINE.internal/v1", "https://engine.internal:443"),
    ],
)
def test_an_allowed_engine_is_registered_in_one_form(given: str, root: str) -> None:
    assert allowed_replica(given, ALLOW) == root


@pytest.mark.parametrize(
    "given",
    [
        "http://attacker.example:8000/v1",  # the red team's: any address a client chooses
        "http://10.0.0.5:8001/v1",  # another port of an allowed host
        "http://10.0.0.5:8000/other/v1",  # another path
        "https://10.0.0.5:8000/v1",  # another scheme
        "http://polar:secret@10.0.0.5:8000/v1",  # credentials riding along
        "http://10.0.0.5:8000/v1?x=1",
        "file:///etc/passwd",
        "not a url",
    ],
)
def test_any_other_address_is_refused_naming_it(given: str) -> None:
    with pytest.raises(RegisterRefused):
        allowed_replica(given, ALLOW)


def test_nothing_is_registered_when_the_operator_allowed_nothing() -> None:
    with pytest.raises(RegisterRefused, match=r"register_allow does not list .*\(empty\)"):
        allowed_replica("http://10.0.0.5:8000/v1", [])
    assert engine_root("http://[::1]:9/v1") == "http://[::1]:9"
