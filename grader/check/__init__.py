"""Checking an exercise: build -> run (worker) -> compare -> time -> verdict."""
