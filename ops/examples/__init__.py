"""Example inputs (the sample Office conversation, scripted judge rules, the client example), shipped as the
package data ``persona_drift_examples`` so that ``drift demo`` works from a wheel install."""
