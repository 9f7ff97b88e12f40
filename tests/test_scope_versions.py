"""Task-scope versions cannot be forged (issue 19 §5).

Actor: a member agent, through its handle's ``scopes.write`` (or the scope_write tool), picking
any ``read_version``. Before, ``read_version=2**62-1`` (never read) wrote version 2**62 and every
honest update after it was refused as stale: one member froze a key. Real storage.
"""

from __future__ import annotations

import pytest

from bureau.errors import InvalidArgumentError


@pytest.fixture
def scope(case):
    lead = case.agent("detective")
    lead.scopes.create("stakeout")
    lead.scopes.invite("stakeout", "informant")
    case.agent("informant").scopes.accept("stakeout")
    return case


def test_a_version_never_read_is_refused_and_changes_nothing(scope):
    case = scope
    mole, honest = case.agent("informant").scopes, case.agent("detective").scopes
    first = honest.write("stakeout", "plan", "Pier 9 at dawn.")
    assert first.version == 1
    history = honest.history("stakeout", "plan")
    for forged in (2, 99, 2**62 - 1):
        with pytest.raises(InvalidArgumentError, match="never written"):
            mole.write("stakeout", "plan", "Nothing happens tonight.", read_version=forged)
    assert honest.history("stakeout", "plan") == history  # refused before any effect
    with pytest.raises(InvalidArgumentError):
        mole.write("stakeout", "fresh-key", "x", read_version=1)  # nothing to have read
    # The honest writer is not frozen out: it updates from what it read.
    update = honest.write("stakeout", "plan", "Pier 9 at six.", read_version=1)
    assert update.version == 2 and not update.stale
    assert honest.read("stakeout", "plan").text == "Pier 9 at six."


def test_the_tool_refuses_a_forged_version_too(scope):
    informant = scope.agent("informant")
    scope.agent("detective").scopes.write("stakeout", "plan", "Pier 9 at dawn.")
    r = informant.call_tool("scope_write", {"name": "stakeout", "key": "plan",
                                            "text": "x", "read_version": 2**30})
    assert not r["ok"] and "never written" in r["message"]
    assert informant.scopes.read("stakeout", "plan").version == 1
