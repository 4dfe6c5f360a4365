"""Today's date, as the course's release and due dates are compared with it.

One function, so that everything a command does sees the same day (a release run across midnight compares every
date with one day), and so that tests can hold the day still instead of failing when they run across midnight.

$GRADER_TODAY (YYYY-MM-DD) sets the day for a whole process: an instructor previews the release of a later date
(`GRADER_TODAY=2027-03-22 grader release --to /tmp/preview`), and tests hold the day still in the grader processes
they start."""
import os
import re
from datetime import date

from grader.errors import GraderError

TODAY_ENV = "GRADER_TODAY"


def today() -> date:
    text = os.environ.get(TODAY_ENV, "").strip()
    if not text:
        return date.today()
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            raise ValueError("not YYYY-MM-DD")
        return date.fromisoformat(text)
    except ValueError:
        raise GraderError(f"${TODAY_ENV} is {text!r}, not a date as YYYY-MM-DD (e.g. 2027-01-11): set it to the "
                          f"day to act as of, or unset it for today") from None
