"""The reliability suite runs in CI with small counts; see docs/reliability.md for long runs."""
