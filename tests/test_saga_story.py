"""Lesson 03's bookkeeping of a crashed, recovered and retried publish, on real storage."""

from __future__ import annotations

import pytest

from bureau.course.cast import Cast
from bureau.course.saga_story import SagaStory
from bureau.errors import BureauError
from bureau.service import faults


def test_story_counts_copies_and_cleanups_through_crash_recover_retry(case):
    spare = Cast.of(case).spare
    story = SagaStory(case, case.seed_card(spare.key))
    assert story.record("before") == (0, 0)
    with pytest.raises(BureauError):
        with faults.armed("publish.after_copy_written"), faults.armed("publish.during_compensation"):
            case.publish(spare.owner, story.card.id)
    assert story.record("crash") == (1, 1)  # a stray copy, readable, and a task to remove it
    case.recover()
    assert story.record("recover()") == (0, 0)
    case.publish(spare.owner, story.card.id)
    assert story.record("retry") == (1, 0)
    assert [s for s, *_ in story.steps] == ["before", "crash", "recover()", "retry"]
    assert story.at("crash") == (1, 1) and story.at("retry") == (1, 0)
    with pytest.raises(KeyError):
        story.at("never recorded")


def test_story_counts_only_copies_of_its_own_card(case):
    cast = Cast.of(case)
    story = SagaStory(case, case.seed_card(cast.spare.key))
    case.publish(cast.holder, case.seed_card(cast.secret.key).id)
    assert story.copies() == 0


def test_story_plot_labels_every_step(case):
    story = SagaStory(case, case.seed_card(Cast.of(case).spare.key))
    story.record("before")
    case.publish(story.card.owner, story.card.id)
    story.record("published")
    ax = story.plot().axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["before", "published"]
    assert ax.get_ylabel() == "count" and ax.get_title()
