"""Lesson 00's sentence about where a learner's memory lives names no secret."""

from __future__ import annotations

from bureau.storage.files import write_private
from bureau.tenancy.connection import TenantConnection, where_memory_lives


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


def test_a_host_that_is_no_host_is_refused_typed_before_any_socket(tmp_path):
    """An attacker's (or a typo's) host such as ``127.0.0.1/../x`` used to reach the resolver
    and fail there with an untyped UnicodeError."""
    import pytest

    from bureau.errors import ClassroomError
    from bureau.tenancy.connection import read_connection

    for host in ("127.0.0.1/../x", "http://127.0.0.1", "a..b", "", " 127.0.0.1", "x" * 300):
        path = tmp_path / "bad.json"
        write_private(path, TenantConnection("ada", host, 2881, "learner_ada", "learner_ada",
                                             "pw").as_json())
        with pytest.raises(ClassroomError, match="has no valid host"):
            read_connection(path)
    for host in ("127.0.0.1", "classroom.example", "::1", "[::1]", "10.0.0.5"):
        path = tmp_path / "good.json"
        write_private(path, TenantConnection("ada", host, 2881, "learner_ada", "learner_ada",
                                             "pw").as_json())
        assert read_connection(path).host == host
