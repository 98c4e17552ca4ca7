"""Inference backends, looked up by name through a registry that plugins can extend."""

from memread.backends.base import Backend, ChatRequest, Completion, Message

__all__ = ["Backend", "ChatRequest", "Completion", "Message"]
