"""patches.py on the shapes of diff it meets: git diffs, plain unified diffs, binary files, CRLF dumps, and
text unidiff cannot parse (docs/protocol.md section 5.4: "same files, same hunks")."""

from __future__ import annotations

import pytest

from takeover._util.patches import (
    count_changed_lines,
    first_difference,
    normalize_patch,
    patch_files,
    split_patch,
)

EDIT = "diff --git a/x.py b/x.py\nindex 1111111..2222222 100644\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
NEW = ("diff --git a/docs/INDEX b/docs/INDEX\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n"
       "+++ b/docs/INDEX\n@@ -0,0 +1,2 @@\n+one\n+two\n")
BINARY = ("diff --git a/img.png b/img.png\nnew file mode 100644\nindex 0000000..4444444\n"
          "Binary files /dev/null and b/img.png differ\n")
PLAIN = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"  # no `diff --git` line
# The hunk header promises five lines and gives two: unidiff refuses it.
BROKEN = "diff --git a/docs/INDEX b/docs/INDEX\n--- a/docs/INDEX\n+++ b/docs/INDEX\n@@ -1,5 +1,5 @@\n-a\n+b\nX marks\n"


def test_files_in_patch_order_for_every_kind_of_change():
    assert patch_files(EDIT + NEW + BINARY) == ["x.py", "docs/INDEX", "img.png"]
    assert patch_files(PLAIN) == ["x.py"]
    assert patch_files("") == [] and patch_files(" \n") == []


def test_crlf_dumps_give_paths_without_the_carriage_return():
    assert patch_files(NEW.replace("\n", "\r\n")) == ["docs/INDEX"]
    assert patch_files(BROKEN.replace("\n", "\r\n")) == ["docs/INDEX"]  # the diff --git fallback too


def test_unparseable_text_falls_back_to_the_diff_git_headers():
    assert patch_files(BROKEN) == ["docs/INDEX"]
    assert normalize_patch(BROKEN) == {"docs/INDEX": [BROKEN]}
    # added and removed lines, not the ---/+++ file lines
    assert count_changed_lines(BROKEN) == 2


def test_split_keeps_each_files_text_and_ends_it_with_a_newline():
    assert split_patch(EDIT + NEW) == {"x.py": EDIT, "docs/INDEX": NEW}
    assert split_patch(EDIT + NEW.rstrip("\n")) == {"x.py": EDIT, "docs/INDEX": NEW}
    assert split_patch(PLAIN) == {"x.py": PLAIN}  # no header to split on: the whole text per file
    assert split_patch("") == {}


def test_normalized_form_is_the_hunks_without_index_lines_and_a_binary_marker():
    assert normalize_patch(EDIT + BINARY) == {"x.py": ["@@ -1,1 +1,1\n-a\n+b\n"], "img.png": ["<binary>"]}
    assert normalize_patch(EDIT.replace("1111111..2222222", "aaaaaaa..bbbbbbb")) == normalize_patch(EDIT)
    assert normalize_patch("") == {}


def test_first_difference_names_the_first_differing_file_in_sorted_order():
    other = EDIT.replace("+b", "+c")
    assert first_difference(EDIT + NEW, NEW + EDIT) is None  # order of files does not matter
    assert first_difference(EDIT + NEW, other + NEW) == "x.py"
    assert first_difference(EDIT, EDIT + NEW) == "docs/INDEX"
    assert first_difference(BINARY, BINARY.replace("4444444", "5555555")) is None
    assert first_difference(BINARY, NEW.replace("docs/INDEX", "img.png")) == "img.png"


def test_count_changed_lines():
    assert count_changed_lines(EDIT + NEW) == 4
    assert count_changed_lines(BINARY) == 0


@pytest.mark.parametrize("folder", ["a", "b"])
def test_a_top_level_folder_named_a_or_b_is_kept(folder):
    path = f"{folder}/x.py"
    patch = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"
    assert patch_files(patch) == [path]
