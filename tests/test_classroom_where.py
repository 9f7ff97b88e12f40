"""Lesson 00's sentence about where a learner's memory lives names no secret."""

from __future__ import annotations

from bureau.classroom.connection import TenantConnection, where_memory_lives
from bureau.storage.files import write_private


def test_without_a_classroom_the_memory_is_the_learners_own_embedded_store():
    assert "embedded store" in where_memory_lives(None)


def test_in_a_classroom_it_names_the_tenant_and_never_the_password_or_the_file(tmp_path):
    secret = "s3cret-Pa55word-xyz"
    path = tmp_path / "ada.json"
    write_private(path, TenantConnection("ada", "127.0.0.1", 2881, "learner_ada", "learner_ada",
                                         secret).as_json())
    line = where_memory_lives(path)
    assert "learner_ada" in line and "127.0.0.1:2881" in line
    assert secret not in line and str(tmp_path) not in line
