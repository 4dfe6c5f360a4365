"""The course's grader: builds a day's exercise as a torch extension, checks it, times it, reports."""

__version__ = "0.1.0"
