"""The LLM layer: the protocol, its providers (OpenAI-compatible, local), the reply cache, the
accounting session, prompt files and per-KG relation language."""
