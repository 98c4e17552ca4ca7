"""The fake ``vllm`` package's logging, set up the way vLLM's own ``vllm/logger.py`` sets it up.

vLLM configures its loggers with ``logging.config.dictConfig`` when ``vllm.logger`` is imported (which
``import vllm`` does): one ``StreamHandler`` named "vllm" on the "vllm" logger, ``propagate`` off, its stream
taken from ``VLLM_LOGGING_STREAM``, which defaults to ``"ext://sys.stdout"``. ``VLLM_CONFIGURE_LOGGING=0``
skips the set-up; ``VLLM_LOGGING_CONFIG_PATH`` names a JSON dict config used instead of the default (vLLM
refuses the pair). Source: vllm-project/vllm, ``vllm/logger.py`` (``DEFAULT_LOGGING_CONFIG``,
``_configure_vllm_root_logger``), ``vllm/envs.py`` (``VLLM_LOGGING_STREAM``), and the docs page "Logging
Configuration"; vLLM's own test ``test_default_vllm_root_logger_configuration`` asserts
``handler.stream == sys.stdout``.
"""

from __future__ import annotations

import json
import logging
import os
from logging.config import dictConfig
from typing import Any

_FORMAT = "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s"


def default_logging_config() -> dict[str, Any]:
    level = os.environ.get("VLLM_LOGGING_LEVEL", "INFO")
    return {
        "formatters": {"vllm": {"format": _FORMAT, "datefmt": "%m-%d %H:%M:%S"}},
        "handlers": {
            "vllm": {
                "class": "logging.StreamHandler",
                "formatter": "vllm",
                "level": level,
                "stream": os.environ.get("VLLM_LOGGING_STREAM", "ext://sys.stdout"),
            },
        },
        "loggers": {"vllm": {"handlers": ["vllm"], "level": level, "propagate": False}},
        "version": 1,
        "disable_existing_loggers": False,
    }


def configure_root_logger() -> None:
    """What ``vllm.logger._configure_vllm_root_logger`` does with its environment variables."""
    configure = os.environ.get("VLLM_CONFIGURE_LOGGING", "1") != "0"
    config_path = os.environ.get("VLLM_LOGGING_CONFIG_PATH")
    if not configure and config_path:
        raise RuntimeError("VLLM_CONFIGURE_LOGGING evaluated to false, but VLLM_LOGGING_CONFIG_PATH was given")
    config: dict[str, Any] = default_logging_config() if configure else {}
    if config_path:
        with open(config_path, encoding="utf-8") as file:
            config = json.load(file)
    if config:
        dictConfig(config)


def init_logger(name: str) -> logging.Logger:
    return logging.getLogger(name)
