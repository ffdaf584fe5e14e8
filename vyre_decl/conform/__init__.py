"""Conformance: proving a backend against the reference (laws now; the runner comes later)."""
