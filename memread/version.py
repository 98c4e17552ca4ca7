"""memread's version, in a module of its own so that any part of memread can name it without importing the
package's face (``memread/__init__.py``)."""

__version__ = "0.1.0.dev0"
