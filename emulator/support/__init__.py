"""Support tables and per-operator rules: the validation facts of every DirectML operator.

See docs/support-tables.md. ``*.json`` hold the tables (one file per operator group); each
group's ``<group>.py`` holds the rules the tables cannot say.
"""
