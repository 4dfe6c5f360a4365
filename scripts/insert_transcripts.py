"""Puts a lesson's transcripts (made on a GPU by scripts/<day>_transcripts.sh) into its README: each
`<!-- transcript:NAME:begin -->` ... `<!-- transcript:NAME:end -->` block becomes a code block holding NAME.txt,
and the files are kept beside the lesson in days/<day>/transcripts/. Transcripts are never typed.

    python3 scripts/insert_transcripts.py day14 /path/to/OUT/day14
"""
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from update_readmes import replace_block  # noqa: E402


def main(day: str, src: Path) -> int:
    keep = ROOT / "days" / day / "transcripts"
    keep.mkdir(exist_ok=True)
    readme = ROOT / "days" / day / "README.md"
    for f in sorted(src.glob("*.txt")):
        shutil.copyfile(f, keep / f.name)
        text = f.read_text(errors="replace").rstrip()
        replace_block(readme, f"transcript:{f.stem}", f"```text\n{text}\n```")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
