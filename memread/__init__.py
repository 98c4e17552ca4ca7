"""memread: answer questions about documents far larger than a model's context window.

The core library (everything outside ``memread.cli``) imports without Typer, Rich, llama_cpp or vLLM.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"

__all__ = ["__version__"]
