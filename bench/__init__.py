"""tensorvm benchmark harness (see bench/README.md)."""
