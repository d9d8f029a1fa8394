"""The ``facestation`` command line: :mod:`cli.main` builds the parser and turns errors into exit codes;
one module per command group (swap, models, presets, queue, bench, ui) adds its sub-commands with
``register(subparsers)`` and prints what the engine returns. Everything that prints lives here.
"""
