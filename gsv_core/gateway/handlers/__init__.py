"""Method handlers, one module per method family; each has `register(router, gateway)`."""
