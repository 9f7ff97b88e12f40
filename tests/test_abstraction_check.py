"""The distinctive-terms check on model-written abstractions (issue 19 §6): a rewrite that keeps
a number or a name in disguise is caught. Actor: an abstractor (an opt-in model) whose output
an agent may have steered. Pure logic, no store."""

from __future__ import annotations

import pytest

from bureau.mediation.abstraction import digit_view, fold, leaked_terms

SAFE = "The safe in the study opens with the combination 0427."
MEETING = "Mr Holloway met her at 23:40 on Friday."
PAYMENT = "She paid 1,250 pounds in March 2024."


@pytest.mark.parametrize("original,abstraction,term", [
    (SAFE, "It opens with 04-27.", "0427"),
    (SAFE, "The code is 0 4 2 7.", "0427"),
    (SAFE, "The code is zero four two seven.", "0427"),
    (SAFE, "The code is four hundred and twenty-seven.", "0427"),
    (SAFE, "The code is ０４２７ (full width).", "0427"),
    (SAFE, "The code is ٠٤٢٧ (Arabic-Indic digits).", "0427"),
    (SAFE, "The code is ०४२७ (Devanagari digits).", "0427"),
    (MEETING, "H0lloway was there.", "holloway"),
    (MEETING, "Ноllоwау was there (Cyrillic letters).", "holloway"),
    (MEETING, "Hollowáy was there.", "holloway"),
    (MEETING, "They met at twenty-three forty.", "23:40"),
    (MEETING, "They met at 2340.", "23:40"),
    (MEETING, "They met on FRIDAY.", "friday"),
    (PAYMENT, "She paid one thousand two hundred fifty.", "1,250"),
    (PAYMENT, "She paid twelve fifty.", "1,250"),
    (PAYMENT, "In twenty twenty-four.", "2024"),
])
def test_a_disguised_term_is_caught(original, abstraction, term):
    assert term in leaked_terms(original, abstraction)


@pytest.mark.parametrize("original,abstraction", [
    (SAFE, "The informant knows how to open the study safe; it takes a four-digit code."),
    (SAFE, "A code of 10427 is something else entirely."),
    (MEETING, "Someone met her late one evening."),
    (MEETING, "Two people met at night."),
    (PAYMENT, "She paid a sum in spring."),
])
def test_a_safe_abstraction_passes(original, abstraction):
    assert leaked_terms(original, abstraction) == []


def test_the_views_normalise():
    assert fold("Ｈｏｌｌｏｗａｙ") == "holloway"
    assert digit_view("zero four two seven") == "0427"
    assert digit_view("04-27 and 23:40") == "0427 and 2340"
