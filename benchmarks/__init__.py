"""memread's benchmark scripts, by purpose: ``speed``, ``robustness``, ``accuracy`` and one-off ``studies``, with
their shared helpers in ``_helpers``. Run a script as a module from the repository root, e.g.
``python -m benchmarks.speed.bench_chunk --repeat 3``; benchmarks/README.md says which one to run when."""
