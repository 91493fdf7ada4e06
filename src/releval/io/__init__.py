"""Readers and writers of releval's tables."""
