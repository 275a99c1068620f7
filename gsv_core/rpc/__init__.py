"""RPC plumbing: the router that maps method names to handlers, and the caller context."""
