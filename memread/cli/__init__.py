"""The ``memread`` command line. Parses arguments, wires library stages together, renders.

Import-light on purpose: shell completion runs the program on every TAB, so command modules import
only Typer and the standard library at module level; everything heavy is imported inside command bodies.
"""
