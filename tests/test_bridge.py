"""Lesson 09's bridge: a store keyed by a namespace the caller passes (LangGraph's shape) leaks
when one agent names another's namespace; the same methods over a handle refuse it. The actor
is an agent (its code picks every argument); the handle side runs on real seekdb + MiniLM."""

from __future__ import annotations

import pytest

from bureau.course.bridge import SOLUTION, HandleStore, NamespaceStore, check_ported_store
from bureau.course.widgets.exercises import EXERCISES
from bureau.errors import BureauError, InvalidArgumentError, NamespaceRefusedError

QUESTION = "What is the combination of the safe in the study?"


def _state(case) -> tuple[list[tuple[str, str]], int]:
    """Every card each role may list (id, content) and the number of events: what a refused
    call must leave as it was."""
    cards = sorted((c.id, c.content) for r in case.role_names for c in case.cards(r))
    return cards, len(case.bureau.event_log(case.id))


def test_a_namespace_from_the_caller_hands_one_agent_another_roles_private_card(case):
    """The stand-in with LangGraph's shape knows no caller: the suspect's code names the
    informant's namespace, or just the prefix, and gets the informant's secret."""
    store = NamespaceStore.from_case(case)
    secret = case.seed_card("safe-code").content
    named = store.search(("memories", "informant"), query=QUESTION)
    assert named[0].key == "safe-code" and named[0].value["text"] == secret
    assert store.get(("memories", "informant"), "safe-code").value["text"] == secret
    everyone = store.search(("memories",), limit=100)
    assert {i.namespace[1] for i in everyone} == {"informant", "detective", "suspect"}


def test_the_handle_store_refuses_another_roles_namespace_and_changes_nothing(case):
    """put, get and search naming another role are refused from the argument alone: the same
    words for a role that exists and one that does not, no event, no card written."""
    mine = HandleStore(case.agent("suspect"))
    before = _state(case)
    messages = set()
    for other in (("memories", "informant"), ("memories", "no-such-role"), ("secrets",)):
        for call in (lambda ns: mine.search(ns, query=QUESTION), lambda ns: mine.get(ns, "k"),
                     lambda ns: mine.put(ns, "k", {"text": "mine"})):
            with pytest.raises(NamespaceRefusedError) as caught:
                call(other)
            messages.add(caught.value.message)
    assert len(messages) == 1 and "informant" not in messages.pop()
    assert _state(case) == before
    with pytest.raises(InvalidArgumentError):
        mine.put(("memories", "suspect"), "k", "not a dict")  # type: ignore[arg-type]
    assert _state(case) == before


def test_the_handle_store_reads_and_writes_only_what_its_handle_reaches(case):
    """Real storage: a put is the suspect's note (a second put at the key replaces it); the
    widest search, ``()``, reaches the suspect's scopes only, while the informant's own store
    finds its secret with the same question (so the search is not simply empty)."""
    mine = HandleStore(case.agent("suspect"))
    mine.put(("memories", "suspect"), "plan", {"text": "Follow up tomorrow morning."})
    mine.put(("memories", "suspect"), "plan", {"text": "Follow up on Friday instead."})
    notes = [c for c in case.cards("suspect") if c.provenance == "agent-note"]
    assert [(c.owner, c.topic, c.content) for c in notes] == [
        ("suspect", "plan", "Follow up on Friday instead.")]
    assert mine.get(("memories", "suspect"), "plan").value == {"text": notes[0].content}
    secret = case.seed_card("safe-code").content
    wide = mine.search((), query=QUESTION) + mine.search(("memories",), query=QUESTION)
    assert {i.namespace[1] for i in wide} <= {"suspect", "board"}
    assert secret not in str([i.value for i in wide])
    last = [e.payload for e in case.bureau.event_log(case.id)
            if e.type == "retrieval.completed" and e.payload.get("role") == "suspect"][-1]
    assert set(last["searched_scopes"]) == {"suspect", "board"}
    holder = HandleStore(case.agent("informant")).search(("memories", "informant"),
                                                         query=QUESTION)
    assert holder and holder[0].value["text"] == secret


def _solve(case) -> HandleStore:
    from bureau.course.cast import Cast

    cast = Cast.of(case)
    ns = {"HandleStore": HandleStore, "BureauError": BureauError, "case": case,
          "suspect": cast.bystander, "informant": cast.holder,
          "safe_question": cast.secret.question}
    exec(SOLUTION, ns)
    return ns["my_store"]


def test_the_solution_passes_and_is_the_registered_one(case):
    assert EXERCISES["09-port-a-store"].solution == SOLUTION
    verdict = check_ported_store(case, _solve(case))
    assert verdict.ok, verdict.message


def test_wrong_or_missing_answers_get_a_hint(case):
    assert "Replace `None`" in check_ported_store(case, None).message
    assert "HandleStore" in check_ported_store(case, "suspect").message
    assert "another role's handle" in check_ported_store(
        case, HandleStore(case.agent("informant"))).message
    idle = HandleStore(case.agent("suspect"))
    assert "Put one memory" in check_ported_store(case, idle).message
    idle.put(("memories", "suspect"), "plan", {"text": "Follow up tomorrow morning."})
    assert "search ('memories', 'informant')" in check_ported_store(case, idle).message
    # A store that claims a put the bureau does not hold is caught by reading real storage.
    forged = HandleStore(case.agent("detective"), keys=["plan"],
                         refused=[("memories", "informant")])
    assert "holds none of the keys" in check_ported_store(case, forged).message


def test_the_handle_store_names_the_argument_it_refuses(case):
    """An agent's huge offset is refused as the offset (it once surfaced as a wrong ``limit``
    of offset + limit), and a huge limit as the limit; neither touches storage."""
    store = HandleStore(case.agent("suspect"))
    own = ("memories", store.role)
    with pytest.raises(InvalidArgumentError, match=r"^offset must be a whole number from 0 to 90"):
        store.search(own, query="boots", offset=10**30)
    with pytest.raises(InvalidArgumentError, match=r"^limit must be a whole number"):
        store.search(own, query="boots", limit=10**30)
    assert store.search(own, query="boots", offset=0, limit=10) is not None
