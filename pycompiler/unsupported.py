"""The error of an import asked for something tensorvm does not compute. It lives below
both importers/ and schemes.py (which importers/ reaches through the models), so either
can raise it without an import cycle; importers.common re-exports it."""


class UnsupportedConfig(ValueError):
    """The checkpoint asks for something this importer does not compute."""
