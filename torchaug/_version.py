"""The package's version, in this one place: pyproject.toml reads it for the distribution's metadata
and torchaug.__version__ is this."""
__version__ = "0.1.0"
