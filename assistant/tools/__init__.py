"""Offline tools answered without the LLM."""
