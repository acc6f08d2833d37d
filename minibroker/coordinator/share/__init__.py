"""The share-group coordinator (KIP-932) and the share-partition state it keeps in __share_group_state."""
