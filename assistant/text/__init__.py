"""Text on its way from the LLM to the TTS: normalization for the ear, and (later) clause chunking."""
