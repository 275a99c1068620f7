"""Fetching a web page for the agent (`gsv__WebFetch`) without letting it reach what it
must not: `guard` decides which addresses may be contacted, `fetch` connects only to an
address the guard passed (also after every redirect), `convert` turns what came back
into text for the model."""
