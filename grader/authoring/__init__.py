"""Instructor tools: stubs from solutions (release), nbgrader notebooks, the syllabus."""
