"""LLM backends behind the :class:`recaudit.llm.Backend` protocol."""
