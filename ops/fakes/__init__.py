"""Test doubles for the network services persona-drift talks to."""
