"""The `grader` commands, by who runs them: `checking` (a student's check, watch, sanitize, profile, list and
doctor) and `teaching` (an instructor's release, publish, syllabus, leaderboard, gradebook, grade and site), with
`shared` what both use. grader/cli.py parses the command line and calls them."""
