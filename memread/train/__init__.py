"""Training the memory policy the papers' way (``memread train``), on the verl RL engine.

memread owns what is specific to its strategies, and all of it is plain Python tested on a CPU:

* :mod:`memread.train.episode` — one read of one question as training data: the same strategy, prompts and chat
  template as ``memread ask``, driven by a token-in/token-out ``generate`` function (responses are never
  re-encoded), giving every turn's prompt ids, response ids, log-probabilities and the strategy's decisions;
* :mod:`memread.train.chat` — how a conversation becomes prompt ids (the llama.cpp backend's rule, also for a
  Hugging Face tokenizer) and how reply ids become text;
* :mod:`memread.train.rewards` — the papers' rewards (MemAgent's verifiers, ReMemR1's state rewards, GRU-Mem's
  update, exit and format rewards);
* :mod:`memread.train.advantage` — Multi-Conv (MemAgent) and multi-level (ReMemR1, GRU-Mem) advantages;
* :mod:`memread.train.data` — verl-ready rows from memread's benchmark builders or a user's own JSONL;
* :mod:`memread.train.presets` — the papers' hyper-parameters as verl overrides.

The engine (Ray, rollout servers, FSDP/Megatron, the PPO/DAPO loss, checkpoints) is verl's: the adapter that
plugs the above into it, :mod:`memread.train.verl_adapter`, is the only module that imports verl, and it needs
the ``memread[train]`` extra. Nothing here is imported by ``memread`` itself, so reading stays light.
"""
