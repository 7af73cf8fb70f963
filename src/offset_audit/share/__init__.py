"""KIP-932 share groups: share-partition state, assignment and limits (see `offset-audit share`)."""
