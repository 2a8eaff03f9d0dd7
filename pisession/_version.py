"""The package's version, in a module of its own: the modules that print it (the exports, the
viewer) sit below the package's ``__init__``, which imports them."""

__version__ = "0.1.0"
