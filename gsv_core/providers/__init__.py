"""LLM providers behind one small protocol: a request in, normalised stream events out."""
