"""`file_change`: what a write or edit would do to a file, as a person is shown it."""

from __future__ import annotations

from dsh.tools.builtin import FileChange, file_change


def test_a_write_over_a_file_and_a_new_file() -> None:
    write = {"file_path": "a.py", "content": "one\ntwo\n"}
    change = file_change("write", write, "one\n")
    assert change == FileChange("a.py", "one\n", "one\ntwo\n", created=False, complete=True)
    assert change.unified() == ["--- a/a.py", "+++ b/a.py", "@@ -1 +1,2 @@", " one", "+two"]
    created = file_change("write", write, None)
    assert created is not None and created.created and created.unified()[0] == "--- /dev/null"
    unknown = file_change("write", write, "ignored", known=False)
    assert unknown is not None and not unknown.created and not unknown.complete
    assert unknown.unified()[-2:] == ["+one", "+two"]


def test_an_edit_with_and_without_the_file() -> None:
    edit = {"file_path": "a.py", "old_string": "two", "new_string": "2"}
    seen = file_change("edit", edit, "one\ntwo\nthree\ntwo\n")
    assert seen is not None and seen.complete and seen.after == "one\n2\nthree\ntwo\n"
    assert seen.unified()[2:] == ["@@ -1,4 +1,4 @@", " one", "-two", "+2", " three", " two"]
    every = file_change("edit", {**edit, "replace_all": True}, "two two\n")
    assert every is not None and every.after == "2 2\n"
    for before in (None, "no match here\n"):
        alone = file_change("edit", edit, before)
        assert alone is not None and not alone.complete
        assert alone.unified()[-2:] == ["-two", "+2"]  # the replaced text only


def test_other_tools_and_bad_arguments_have_no_change() -> None:
    assert file_change("read", {"file_path": "a.py"}, "x") is None
    assert file_change("write", "not json", None) is None
    assert file_change("edit", {"file_path": "a.py", "old_string": 1, "new_string": ""}, "") is None
