"""The numba cache folder follows the package sources."""

import numba

from sim import jit


def test_cache_folder_is_keyed_by_the_sources():
    digest = jit.source_digest()
    assert len(digest) == 16
    assert numba.config.CACHE_DIR.endswith(f"numba-{digest}")


def test_digest_changes_with_a_source(tmp_path, monkeypatch):
    pkg = tmp_path / "sim"
    pkg.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    fake = pkg / "jit.py"
    fake.write_text("")
    monkeypatch.setattr(jit, "__file__", str(fake))
    before = jit.source_digest()
    (pkg / "a.py").write_text("x = 2\n")
    assert jit.source_digest() != before
