"""The instructors' side: grading a class (grade, grade_task, executors), the leaderboard, the gradebook, the
formats of the tools a class already uses (Gradescope, JUnit, GitHub Classroom) and the hidden cases of ranked
runs. The student's side (check, watch, list) stays in grader/ and grader/check/."""
