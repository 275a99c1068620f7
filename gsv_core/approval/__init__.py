"""Tool approval: the policy (rules, the shell classifier, built-in protections),
signed approval bindings and pending approvals."""
