"""Audio in and out: two small protocols and their implementations (ALSA, wav files, replay)."""
