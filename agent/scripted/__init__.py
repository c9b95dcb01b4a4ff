"""The scripted model server: demo model, test double and benchmark peer."""
