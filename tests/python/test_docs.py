"""docs/ops.md is generated from the registry; CI fails when it is stale."""
from pathlib import Path

from tensorvm.pycompiler import docgen, registry

OPS_MD = Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def test_docs_ops_md_is_current(capsys):
    code = docgen.main(["--check", "--output", str(OPS_MD)])  # the repository's docs/ops.md
    err = capsys.readouterr().err
    assert code == 0, err or "docs/ops.md is stale: run `python -m tensorvm.pycompiler.docgen`"


def test_render_lists_every_op_by_group():
    specs = list(registry.real_ops().values())
    text = docgen.render(specs)
    for s in specs:
        assert f"### {s.name}\n\n```\n{s.signature_text}\n```\n" in text
        assert f"## {s.group}\n" in text
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_check_detects_stale_and_write_fixes_it(tmp_path, capsys):
    out = tmp_path / "ops.md"
    assert docgen.main(["--check", "--output", str(out)]) == 1
    assert "stale" in capsys.readouterr().err
    assert docgen.main(["--output", str(out)]) == 0
    assert docgen.main(["--check", "--output", str(out)]) == 0
    out.write_text(out.read_text() + "edited\n")
    assert docgen.main(["--check", "--output", str(out)]) == 1
