"""Tiny servers that misbehave on purpose; each one exists for one test in test_hostile_targets.py."""
