"""The package version, said once: every module that records it imports it from here."""

__version__ = "0.1.0"
