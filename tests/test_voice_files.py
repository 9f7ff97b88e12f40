"""The model files the local voice may load (issue 52 §2), and the machine's choices.

A file named as one of the official GGUFs the course names is checked before it is loaded (size,
then sha256); no server is started for a file that fails. No model runs here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bureau.__main__ import main
from bureau.errors import ModelFileError
from bureau.voice import KNOWN, LocalVoice, bundled_test_model, check_model_file, threads_for
from bureau.voice import gguf as gguf_module

QWEN_15 = "qwen2.5-1.5b-instruct-q4_k_m.gguf"
QWEN_05 = "qwen2.5-0.5b-instruct-q4_k_m.gguf"


def _gguf(path, body=b"rest of a model"):
    path.write_bytes(b"GGUF" + body)
    return path


def test_the_docs_name_the_official_files_with_their_sizes():
    assert set(KNOWN) == {QWEN_15, QWEN_05}
    assert KNOWN[QWEN_15].size == 1_117_320_736 and len(KNOWN[QWEN_15].sha256) == 64
    assert KNOWN[QWEN_15].repo == "Qwen/Qwen2.5-1.5B-Instruct-GGUF"
    text = (Path(__file__).resolve().parents[1] / "docs" / "voice.md").read_text(encoding="utf-8")
    for known in KNOWN.values():
        assert known.file in text and known.repo in text and known.approx in text
    assert KNOWN[QWEN_15].sha256 in text


def test_a_file_that_is_not_a_gguf_is_refused(tmp_path):
    (tmp_path / "m.gguf").write_bytes(b"<html>not found</html>")
    with pytest.raises(ModelFileError, match="not a GGUF"):
        check_model_file(tmp_path / "m.gguf")
    with pytest.raises(ModelFileError, match="No model file"):
        check_model_file(tmp_path / "missing.gguf")


def test_a_known_file_of_the_wrong_size_is_refused_before_hashing(tmp_path, monkeypatch):
    monkeypatch.setattr(gguf_module, "sha256_of", lambda p: pytest.fail("hashed"))
    with pytest.raises(ModelFileError, match="1,117,320,736 bytes"):
        check_model_file(_gguf(tmp_path / QWEN_15))


def test_a_known_file_is_hashed_against_its_pinned_sha256(tmp_path, monkeypatch):
    path = _gguf(tmp_path / QWEN_15)
    size = path.stat().st_size
    good = hashlib.sha256(path.read_bytes()).hexdigest()
    for sha, ok in (("0" * 64, False), (good, True)):
        monkeypatch.setitem(KNOWN, QWEN_15, gguf_module.KnownModel(
            "qwen2.5-1.5b", QWEN_15, "Qwen/Qwen2.5-1.5B-Instruct-GGUF", size, sha, "1.1 GB"))
        if ok:
            assert check_model_file(path).sha256 == good
        else:
            with pytest.raises(ModelFileError, match=f"expected {'0' * 64}"):
                check_model_file(path)


def test_a_known_file_without_a_pinned_sha256_needs_the_publishers(tmp_path):
    path = _gguf(tmp_path / QWEN_05)
    with pytest.raises(ModelFileError, match="--sha256 or BUREAU_VOICE_SHA256"):
        check_model_file(path)
    good = hashlib.sha256(path.read_bytes()).hexdigest()
    assert check_model_file(path, good.upper()).known.name == "qwen2.5-0.5b"


def test_a_file_of_another_name_is_served_as_given_unless_a_sha256_is_given():
    model = bundled_test_model()
    assert check_model_file(model).sha256 is None
    with pytest.raises(ModelFileError, match="expected"):
        LocalVoice.of(model, "1" * 64)  # refused before any process starts
    with pytest.raises(ModelFileError, match="not a sha256"):
        check_model_file(model, "abc")


def test_the_check_command(capsys, tmp_path):
    assert main(["voice", "check", str(bundled_test_model())]) == 0
    assert "no sha256 asked for" in capsys.readouterr().out
    assert main(["voice", "check", str(_gguf(tmp_path / QWEN_05))]) == 2
    assert "pins no sha256" in capsys.readouterr().err


@pytest.mark.parametrize("cores, physical, threads", [
    (1, None, 1), (2, None, 1), (2, 1, 1), (4, 2, 1), (4, None, 3), (8, 4, 3), (16, 8, 7)])
def test_threads_are_chosen_for_the_machine(cores, physical, threads):
    assert threads_for(cores, physical) == threads
