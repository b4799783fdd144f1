"""Exact benchmark-contamination checks (issue #19): n-grams of normalised text, probed exactly."""
