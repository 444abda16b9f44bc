"""Placeholder until the FileSystem branch is merged: drop this file on merge."""

FileSystem = None
